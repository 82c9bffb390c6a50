"""An injected error reaches every entry a request of the APIs added for Kafka 4.3 names (issue 33
item 6): OffsetForLeaderEpoch per partition, AlterReplicaLogDirs per partition (its getErrorResponse),
DescribeTopicPartitions per topic, DescribeQuorum and UpdateFeatures at the top."""

from __future__ import annotations

from typing import Any

import pytest

from kcoord.broker.faults import error_body
from kcoord.protocol.frames import decode_response, encode_response

CODE = 16


@pytest.mark.parametrize(
    ("api_key", "version", "request_body", "where"),
    [
        (23, 4, {"topics": [{"topic": "t", "partitions": [{"partition": 1, "leader_epoch": 0}]}]},
         lambda r: [(t["topic"], p["partition"], p["error_code"]) for t in r["topics"]
                    for p in t["partitions"]]),
        (34, 2, {"dirs": [{"path": "/d", "topics": [{"name": "t", "partitions": [0, 2]}]}]},
         lambda r: [(t["topic_name"], p["partition_index"], p["error_code"]) for t in r["results"]
                    for p in t["partitions"]]),
        (75, 0, {"topics": [{"name": "t"}], "cursor": None},
         lambda r: [(t["name"], t["error_code"]) for t in r["topics"]]),
        (55, 2, {"topics": []}, lambda r: r["error_code"]),
        (57, 2, {"feature_updates": []}, lambda r: r["error_code"]),
    ],
)  # fmt: skip
def test_the_error_reaches_what_the_request_names(
    api_key: int, version: int, request_body: dict[str, Any], where: Any
) -> None:
    frame = encode_response(api_key, version, 3, error_body(api_key, version, request_body, CODE))
    _, decoded = decode_response(api_key, version, frame[4:])
    expected = {
        23: [("t", 1, CODE)], 34: [("t", 0, CODE), ("t", 2, CODE)], 75: [("t", CODE)], 55: CODE, 57: CODE,
    }[api_key]  # fmt: skip
    assert where(decoded) == expected
