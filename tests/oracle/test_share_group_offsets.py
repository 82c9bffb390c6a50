"""The share-group offset APIs against Apache Kafka 4.3 (share.version=1 is on at format in 4.3):
DescribeShareGroupOffsets (90) v0/v1, AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92),
the same requests to both brokers, answers compared field by field: groups that do not exist, an empty
group id, topics and partitions neither broker knows, a share group with a member (NON_EMPTY_GROUP),
the start offsets set while the group is empty and described with their lag, and deleted again; a
group made by altering its offsets; classic and consumer groups; a whole group before any fetch."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.oracle.diff import Pair, Side, assert_same
from tests.oracle.kafka import random_uuid
from tests.oracle.scenario import create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")

DESCRIBE, ALTER, DELETE, HEARTBEAT = 90, 91, 92, 76


def describe(group: str, topics: list[tuple[str, list[int]]] | None) -> dict[str, Any]:
    wanted = None if topics is None else [{"topic_name": n, "partitions": p} for n, p in topics]
    return {"groups": [{"group_id": group, "topics": wanted}]}


def alter(group: str, *topics: tuple[str, dict[int, int]]) -> dict[str, Any]:
    return {
        "group_id": group,
        "topics": [
            {
                "topic_name": name,
                "partitions": [{"partition_index": p, "start_offset": o} for p, o in parts.items()],
            }
            for name, parts in topics
        ],
    }


def delete(group: str, *names: str) -> dict[str, Any]:
    return {"group_id": group, "topics": [{"topic_name": n} for n in names]}


def heartbeat(group: str, member: str, epoch: int, topics: list[str] | None) -> dict[str, Any]:
    return {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": topics}  # fmt: skip


def test_groups_and_topics_nobody_knows_are_answered_as_kafka(pair: Pair) -> None:
    name = unique("t")
    create_on_both(pair, topic(name, 1))
    nobody = unique("none")
    found = pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(nobody, None))
    found += pair.compare(
        "DescribeShareGroupOffsets", DESCRIBE, 1, describe(nobody, [(unique("nosuch"), [0]), (name, [0])])
    )
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 0, describe(nobody, [(name, [0])]))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(nobody, name))
    found += pair.compare("AlterShareGroupOffsets", ALTER, 0, alter("", (name, {0: 0})))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete("", name))
    assert_same(found)


def _joined(pair: Pair, group: str, member: str, name: str) -> None:
    """The member is in the group on both sides (its first heartbeat answers an epoch)."""
    for side in (pair.kafka, pair.kcoord):
        answer = side.call(HEARTBEAT, 1, heartbeat(group, member, 0, [name]))
        assert answer["error_code"] == 0, (side.name, answer)
        side.learned["epoch"] = answer["member_epoch"]


def _left(side: Side, group: str, member: str) -> None:
    answer = side.call(HEARTBEAT, 1, heartbeat(group, member, -1, None))
    assert answer["error_code"] == 0, (side.name, answer)


def _wait_initialized(side: Side, group: str, member: str) -> None:
    """The share partitions of an assignment are initialised asynchronously (Kafka: InitializeShareGroupState
    after the heartbeat; kcoord: the initialization written once the heartbeat is durable): wait
    (bounded: 30 s, heartbeating) until the broker describes them."""
    deadline = time.monotonic() + 30
    while not side.call(DESCRIBE, 1, describe(group, None))["groups"][0]["topics"]:
        assert time.monotonic() < deadline, f"{side.name} never initialised the share partitions"
        side.call(HEARTBEAT, 1, heartbeat(group, member, side.learned["epoch"], None))
        time.sleep(0.2)  # poll interval for the share-group initialisation


def test_offsets_are_set_described_and_deleted_as_kafka(pair: Pair) -> None:
    group, name, member = unique("sg"), unique("t"), random_uuid()
    create_on_both(pair, topic(name, 2))
    _joined(pair, group, member, name)
    _wait_initialized(pair.kafka, group, member)
    found = pair.compare("AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {0: 0})))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group, name))
    for side in (pair.kafka, pair.kcoord):
        _left(side, group, member)
    nosuch = unique("nosuch")
    found += pair.compare(
        "AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {0: 0, 9: 0}), (nosuch, {0: 3}))
    )
    found += pair.compare("AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {1: 100})))
    found += pair.compare(
        "DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, [(name, [0, 1]), (nosuch, [0])])
    )
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 0, describe(group, [(name, [0, 1])]))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group, name, nosuch))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group))
    assert_same(found)


def _share_describe(group: str) -> dict[str, Any]:
    return {"group_ids": [group], "include_authorized_operations": False}


def _listed(pair: Pair, group: str) -> list[str]:
    """ListGroups v5 (share groups only), the rows of `group` alone: both brokers hold other tests'
    groups too."""
    body = {"states_filter": [], "types_filter": ["Share"]}
    kafka, kcoord = pair.ask(16, 5, body)
    rows = [[g for g in answer["groups"] if g["group_id"] == group] for answer in (kafka, kcoord)]
    return [f"ListGroups: {difference}" for difference in pair.diff(*rows)]


def test_a_group_kafka_creates_by_altering_its_offsets(pair: Pair) -> None:
    """Kafka makes an empty share group of an id it does not know when its offsets are altered
    (GroupMetadataManager.alterShareGroupOffsets: getOrMaybeCreateShareGroup(groupId, true)): listed,
    described at group and assignment epoch 1, its altered partitions initialized (a whole-group
    describe lists them), deleted by DeleteGroups."""
    group, name = unique("sg"), unique("t")
    create_on_both(pair, topic(name, 2))
    found = pair.compare("AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {0: 5})))
    found += pair.compare("ShareGroupDescribe", 77, 1, _share_describe(group))
    found += _listed(pair, group)
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, [(name, [0])]))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    found += pair.compare("AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {1: 7})))
    found += pair.compare("ShareGroupDescribe", 77, 1, _share_describe(group))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group, name))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    found += pair.compare("ShareGroupDescribe", 77, 1, _share_describe(group))
    found += pair.compare("DeleteGroups", 42, 2, {"groups_names": [group]})
    found += pair.compare("ShareGroupDescribe", 77, 1, _share_describe(group))
    assert_same(found)


def test_the_offset_apis_naming_a_classic_or_consumer_group_as_kafka(pair: Pair) -> None:
    """Alter and Delete answer GROUP_ID_NOT_FOUND "Group g is not a share group." at the top level
    (getOrMaybeCreateShareGroup / shareGroup); Describe answers as for a group without share state."""
    name, classic, consumer = unique("t"), unique("cl"), unique("cg")
    create_on_both(pair, topic(name, 1))
    offset = {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
              "committed_metadata": ""}  # fmt: skip
    commit = {"group_id": classic, "generation_id_or_member_epoch": -1, "member_id": "",
              "group_instance_id": None, "topics": [{"name": name, "partitions": [offset]}]}  # fmt: skip
    pair.ask(8, 9, commit)  # a simple classic group
    member = {"group_id": consumer, "member_id": random_uuid(), "member_epoch": 0, "instance_id": None,
              "rack_id": None, "rebalance_timeout_ms": 30_000, "subscribed_topic_names": [name],
              "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}  # fmt: skip
    pair.ask(68, 1, member)  # a consumer group
    found: list[str] = []
    for group in (classic, consumer):
        found += pair.compare("AlterShareGroupOffsets", ALTER, 0, alter(group, (name, {0: 0})))
        found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group, name))
        found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
        found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, [(name, [0])]))
    assert_same(found)


def test_a_whole_group_is_described_before_any_fetch_as_kafka(pair: Pair) -> None:
    """DescribeShareGroupOffsets with `topics` null lists the partitions the group side initialized
    (GroupMetadataManager.initializedShareGroupPartitions) at start offset -1 before any ShareFetch,
    until DeleteShareGroupOffsets removes them."""
    group, name, member = unique("sg"), unique("t"), random_uuid()
    create_on_both(pair, topic(name, 2))
    _joined(pair, group, member, name)
    _wait_initialized(pair.kafka, group, member)
    _wait_initialized(pair.kcoord, group, member)
    found = pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 0, describe(group, None))
    for side in (pair.kafka, pair.kcoord):
        _left(side, group, member)
    found += pair.compare("DeleteShareGroupOffsets", DELETE, 0, delete(group, name))
    found += pair.compare("DescribeShareGroupOffsets", DESCRIBE, 1, describe(group, None))
    assert_same(found)
