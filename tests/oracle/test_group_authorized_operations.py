"""A group's `authorized_operations` against Apache Kafka 4.3 (no authorizer on either side): DescribeGroups
v3/v5/v6, ConsumerGroupDescribe v0/v1 and ShareGroupDescribe v1, with include_authorized_operations true
and false, for a classic, a consumer, a share and a missing group. Kafka's AuthHelper.authorizedOperations
answers every operation a group supports without an authorizer (3400: READ, DELETE, DESCRIBE,
DESCRIBE_CONFIGS, ALTER_CONFIGS) for each group described without an error, and INT32_MIN otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.diff import Pair, Side
from tests.oracle.kafka import random_uuid
from tests.oracle.scenario import create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")


def _groups(pair: Pair) -> tuple[str, str, str, str]:
    """A classic group (an offset committed outside any generation), a consumer group and a share group,
    each with one member joined, on both brokers; and a group id nobody uses."""
    name = unique("ops-t")
    create_on_both(pair, topic(name, 1))
    classic, consumer, share = unique("ops-classic"), unique("ops-consumer"), unique("ops-share")
    partition = {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}
    consumer_member, share_member = random_uuid(), random_uuid()
    for side in (pair.kafka, pair.kcoord):
        committed = side.call(8, 2, {"group_id": classic, "generation_id_or_member_epoch": -1,
                                     "member_id": "", "retention_time_ms": -1,
                                     "topics": [{"name": name, "partitions": [partition]}]})  # fmt: skip
        assert committed["topics"][0]["partitions"][0]["error_code"] == 0, (side.name, committed)
        joined = side.call(68, 0, {"group_id": consumer, "member_id": consumer_member, "member_epoch": 0,
                                   "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
                                   "subscribed_topic_names": [name], "server_assignor": None,
                                   "topic_partitions": []})  # fmt: skip
        assert joined["error_code"] == 0, (side.name, joined)
        shared = side.call(76, 1, {"group_id": share, "member_id": share_member, "member_epoch": 0,
                                   "rack_id": None, "subscribed_topic_names": [name]})  # fmt: skip
        assert shared["error_code"] == 0, (side.name, shared)
    return classic, consumer, share, unique("ops-missing")


def _ops(side: Side, api_key: int, version: int, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(group, error, state, authorized operations) per group, sorted by id (Kafka answers the groups
    in coordinator-partition order, kcoord in request order; clients key them by id)."""
    groups = side.call(api_key, version, body)["groups"]
    return sorted(
        (g["group_id"], g["error_code"], g["group_state"], g.get("authorized_operations")) for g in groups
    )


def test_authorized_operations_as_kafka_answers_them_without_an_authorizer(pair: Pair) -> None:
    ids = list(_groups(pair))
    asked: list[tuple[int, int, dict[str, Any]]] = []
    for include in (True, False):
        asked += [(15, v, {"groups": ids, "include_authorized_operations": include}) for v in (3, 5, 6)]
        asked += [(69, v, {"group_ids": ids, "include_authorized_operations": include}) for v in (0, 1)]
        asked.append((77, 1, {"group_ids": ids, "include_authorized_operations": include}))
    seen_3400 = 0
    for api_key, version, body in asked:
        kafka = _ops(pair.kafka, api_key, version, body)
        assert _ops(pair.kcoord, api_key, version, body) == kafka, (api_key, version, body)
        seen_3400 += sum(1 for row in kafka if row[3] == 3400)
    # the comparison covered described groups with operations (DescribeGroups v3/v5 describe all four)
    assert seen_3400 >= 8, seen_3400
