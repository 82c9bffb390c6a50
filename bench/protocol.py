"""Codec benchmark (run by hand): `.venv/bin/python -m bench.protocol`.

µs per message, decode and encode, for the generated codec (the server's) and the compiled construct
codec derived from the same schema.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

from protocol import construct_codec
from protocol.messages.fetch import FETCH_RESPONSE
from protocol.messages.heartbeat import HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE
from protocol.messages.join_group import JOIN_GROUP_REQUEST
from protocol.messages.offset_commit import OFFSET_COMMIT_REQUEST
from protocol.schema import Schema, codec_for

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


def main() -> None:
    print(
        f"{'message':32} {'gen decode':>11} {'gen encode':>11} "
        f"{'construct dec':>14} {'construct enc':>14}  (µs)"
    )
    for name, schema, version, message in CASES:
        codec = codec_for(schema, version)
        data = codec.build(message)
        row = [
            per_call_us(lambda c=codec, d=data: c.parse(d)),
            per_call_us(lambda c=codec, m=message: c.build(m)),
            per_call_us(lambda s=schema, v=version, d=data: construct_codec.parse(s, v, d)),
            per_call_us(lambda s=schema, v=version, m=message: construct_codec.build(s, v, m)),
        ]
        print(
            f"{name:32} "
            + " ".join(f"{value:11.2f}" if i < 2 else f"{value:14.2f}" for i, value in enumerate(row))
        )
    request = codec_for(HEARTBEAT_REQUEST, 4)
    response = codec_for(HEARTBEAT_RESPONSE, 4)
    data = request.build(CASES[0][3])
    both = per_call_us(lambda: (request.parse(data), response.build({"error_code": 0})))
    print(f"Heartbeat v4 request decode + response encode: {both:.2f} µs (target <= 15)")


if __name__ == "__main__":
    main()
