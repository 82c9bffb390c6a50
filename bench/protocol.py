"""Codec benchmark (run by hand): `.venv/bin/python -m bench.protocol`.

µs per message, decode and encode, for the generated codec (the server's) and the compiled construct
codec derived from the same schema.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

from kcoord.protocol import construct_codec
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.frames import decode_request, encode_request, encode_response
from kcoord.protocol.messages.fetch import FETCH_RESPONSE
from kcoord.protocol.messages.heartbeat import HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE
from kcoord.protocol.messages.join_group import JOIN_GROUP_REQUEST
from kcoord.protocol.messages.offset_commit import OFFSET_COMMIT_REQUEST
from kcoord.protocol.schema import Schema

METADATA_60 = bytes(range(60))
CASES: list[tuple[str, Schema, int, dict[str, Any]]] = [
    (
        "Heartbeat v4 request",
        HEARTBEAT_REQUEST,
        4,
        {
            "group_id": "orders-consumers",
            "generation_id": 7,
            "member_id": "rdkafka-0b3e6f1c-6a8e-4a55-9f3b-2c3d4e5f6a7b",
            "group_instance_id": None,
        },
    ),
    ("Heartbeat v4 response", HEARTBEAT_RESPONSE, 4, {"error_code": 0}),
    *[
        (
            f"JoinGroup v{v} request",
            JOIN_GROUP_REQUEST,
            v,
            {
                "group_id": "orders-consumers",
                "session_timeout_ms": 45000,
                "rebalance_timeout_ms": 300000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": METADATA_60}],
            },
        )
        for v in (5, 9)
    ],
    (
        "OffsetCommit v8 1x50",
        OFFSET_COMMIT_REQUEST,
        8,
        {
            "group_id": "orders-consumers",
            "generation_id_or_member_epoch": 7,
            "member_id": "m-1",
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": i, "committed_offset": 1000 + i, "committed_metadata": ""}
                        for i in range(50)
                    ],
                }
            ],
        },
    ),
    (
        "Fetch v12 response 10x16KiB",
        FETCH_RESPONSE,
        12,
        {
            "responses": [
                {
                    "topic": "orders",
                    "partitions": [
                        {"partition_index": i, "high_watermark": 100, "records": bytes(16384)}
                        for i in range(10)
                    ],
                }
            ]
        },
    ),
]


def per_call_us(fn: Callable[[], object]) -> float:
    number = 2000
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def _row(schema: Schema, version: int, message: dict[str, Any]) -> list[float]:
    codec = codec_for(schema, version)
    data = codec.build(message)
    return [
        per_call_us(partial(codec.parse, data)),
        per_call_us(partial(codec.build, message)),
        per_call_us(partial(construct_codec.parse, schema, version, data)),
        per_call_us(partial(construct_codec.build, schema, version, message)),
    ]


def _heartbeat_round(request: bytes) -> None:
    """What the server does per Heartbeat: header + body decode, then a whole response frame."""
    header, _body = decode_request(request)
    encode_response(12, 4, header.correlation_id, {"error_code": 0})


def main() -> None:
    print(
        f"{'message':32} {'gen decode':>11} {'gen encode':>11} "
        f"{'construct dec':>14} {'construct enc':>14}  (µs)"
    )
    for name, schema, version, message in CASES:
        row = _row(schema, version, message)
        print(
            f"{name:32} "
            + " ".join(f"{value:11.2f}" if i < 2 else f"{value:14.2f}" for i, value in enumerate(row))
        )
    request = codec_for(HEARTBEAT_REQUEST, 4)
    response = codec_for(HEARTBEAT_RESPONSE, 4)
    data = request.build(CASES[0][3])
    both = per_call_us(lambda: (request.parse(data), response.build({"error_code": 0})))
    print(f"Heartbeat v4 request decode + response encode: {both:.2f} µs (target <= 15)")
    payload = encode_request(12, 4, 1, CASES[0][3], client_id="rdkafka")[4:]
    frames = per_call_us(partial(_heartbeat_round, payload))
    print(f"  ... with headers and frame (decode_request + encode_response): {frames:.2f} µs")
    commit = per_call_us(
        partial(
            codec_for(OFFSET_COMMIT_REQUEST, 8).parse, codec_for(OFFSET_COMMIT_REQUEST, 8).build(CASES[4][3])
        )
    )
    print(f"OffsetCommit v8 1x50 decode: {commit:.2f} µs (target <= 150)")


if __name__ == "__main__":
    main()
