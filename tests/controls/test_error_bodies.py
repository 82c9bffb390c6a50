"""An injected error answers every served API, at every served version, in that API's own shape."""

from __future__ import annotations

import pytest

from kcoord.broker.apis import HANDLERS
from kcoord.broker.faults import error_body, merge, request_partitions, split
from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.frames import decode_response, encode_response
from kcoord.protocol.messages import REQUEST_SCHEMAS

NOT_COORDINATOR = 16


def _codes(body: object) -> set[int]:
    found: set[int] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key.endswith("error_code") and isinstance(value, int):
                found.add(value)
            else:
                found |= _codes(value)
    elif isinstance(body, list):
        for item in body:
            found |= _codes(item)
    return found


def _request(api_key: int, version: int) -> dict[str, object]:
    """A decoded request of that version naming one topic-partition / group / resource where it can."""
    body = codec_for(REQUEST_SCHEMAS[api_key], version).parse(
        codec_for(REQUEST_SCHEMAS[api_key], version).build({})
    )
    return body


@pytest.mark.parametrize("api_key", sorted(HANDLERS))
def test_every_served_version_encodes_an_error_answer(api_key: int) -> None:
    low, high = SERVED_VERSIONS[api_key]
    for version in range(low, high + 1):
        req = _request(api_key, version)
        body = error_body(api_key, version, req, NOT_COORDINATOR)
        frame = encode_response(api_key, version, 7, body)
        correlation_id, decoded = decode_response(api_key, version, frame[4:])
        assert correlation_id == 7
        codes = _codes(decoded)
        assert codes <= {0, NOT_COORDINATOR}, (api_key, version, decoded)


PRODUCE = {
    "transactional_id": None, "acks": -1, "timeout_ms": 1000,
    "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": None}, {"index": 1, "records": None}]},
        {"name": "b", "partition_data": [{"index": 0, "records": None}]},
    ],
}  # fmt: skip


def test_a_per_partition_error_reaches_only_the_named_partitions() -> None:
    version = 9
    full = error_body(0, version, PRODUCE, 6)
    assert [(t["name"], [(p["index"], p["error_code"]) for p in t["partition_responses"]])
            for t in full["responses"]] == [("a", [(0, 6), (1, 6)]), ("b", [(0, 6)])]  # fmt: skip
    assert request_partitions(0, version, PRODUCE, lambda _: None) == [("a", 0), ("a", 1), ("b", 0)]
    rest, failed = split(0, version, PRODUCE, lambda t, p: (t, p) == ("a", 1), lambda _: None)
    assert [(t["name"], [p["index"] for p in t["partition_data"]]) for t in rest["topic_data"]] == [
        ("a", [0]),
        ("b", [0]),
    ]
    served = {
        "responses": [
            {"name": "a", "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 5}]},
            {"name": "b", "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 9}]},
        ]
    }
    merged = merge(0, version, served, failed, 6)
    answer = {
        (t["name"], p["index"]): p["error_code"]
        for t in merged["responses"]
        for p in t["partition_responses"]
    }
    assert answer == {("a", 0): 0, ("a", 1): 6, ("b", 0): 0}
    encode_response(0, version, 1, merged)  # still a valid Produce answer
