"""Share groups (KIP-932) against Apache Kafka 4.3: ShareGroupHeartbeat's refusals, a member's join,
heartbeat and leave, ShareGroupDescribe, DescribeGroups, ListGroups and DeleteGroups of the group, and
one group id being one type. Member ids are the client's own, so both brokers get the same requests."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.oracle.diff import Pair, Side, assert_same, unexplained
from tests.oracle.kafka import random_uuid
from tests.oracle.scenario import create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")

SHARE_HEARTBEAT, SHARE_DESCRIBE, V = 76, 77, 1


def heartbeat(group: str, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": None}  # fmt: skip
    return {**body, **fields}


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("empty-member-id", {"member_id": "", "subscribed_topic_names": ["t"]}),
    ("member-id-of-37", {"member_id": "x" * 37, "subscribed_topic_names": ["t"]}),
    ("blank-member-id", {"member_id": "  ", "subscribed_topic_names": ["t"]}),
    ("empty-group-id", {"group_id": "", "subscribed_topic_names": ["t"]}),
    ("empty-rack-id", {"rack_id": "", "subscribed_topic_names": ["t"]}),
    ("no-subscription", {}),
    ("empty-subscription", {"subscribed_topic_names": []}),
    ("unknown-group-epoch-5", {"member_epoch": 5}),
    ("epoch-minus-2", {"member_epoch": -2}),
    ("leave-unknown-group", {"member_epoch": -1}),
]


@pytest.mark.parametrize("fields", [pytest.param(f, id=n) for n, f in REFUSED])
def test_share_group_heartbeat_refuses_as_kafka(pair: Pair, fields: dict[str, Any]) -> None:
    body = heartbeat(unique("sg"), random_uuid(), 0) | fields
    assert_same(pair.compare("ShareGroupHeartbeat", SHARE_HEARTBEAT, V, body))


def _created(pair: Pair, name: str, partitions: int) -> None:
    """`name` on both, and Kafka's group coordinator initializing share partitions of it (its metadata
    image lags the broker's cache, and the first share group starts the share coordinator): probed
    with a throwaway share group, left again (bounded: 60 s)."""
    create_on_both(pair, topic(name, partitions))
    group, member = unique("probe"), random_uuid()
    _recompute_at_every_change(pair, group)
    pair.kafka.call(SHARE_HEARTBEAT, V, heartbeat(group, member, 0, subscribed_topic_names=[name]))
    try:
        assert _assigned(pair.kafka, group, member, 2, time.monotonic() + 60), f"Kafka never assigned {name}"
    finally:
        pair.kafka.call(SHARE_HEARTBEAT, V, heartbeat(group, member, -1))


def _recompute_at_every_change(pair: Pair, group: str) -> None:
    """share.assignment.interval.ms=0 for `group` on both: Kafka 4.3 recomputes a target at most every
    second by default, which would make every comparison depend on timing."""
    entry = {"name": "share.assignment.interval.ms", "config_operation": 0, "value": "0"}
    body = {"resources": [{"resource_type": 32, "resource_name": group, "configs": [entry]}],
            "validate_only": False}  # fmt: skip
    for answer in pair.ask(44, 1, body):
        assert answer["responses"][0]["error_code"] == 0, answer


def _assigned(kafka: Side, group: str, member: str, epoch: int, deadline: float) -> dict[str, Any] | None:
    """Kafka's answer to the member's heartbeat at `epoch` once it moved past it (its persister
    initialized the share partitions: GroupMetadataManager.initializeShareGroupState), None at
    `deadline`. A heartbeat at an unchanged epoch writes nothing, so asking again is harmless."""
    while True:
        answer = kafka.call(SHARE_HEARTBEAT, V, heartbeat(group, member, epoch))
        if answer["error_code"] or answer["member_epoch"] != epoch:
            return answer
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)  # poll interval for Kafka's asynchronous share-state initialization


def _epoch(group: str, member: str, delta: int = 0) -> Any:
    def body(side: Side) -> dict[str, Any]:
        return heartbeat(group, member, side.learned[member] + delta)

    return body


def _join(pair: Pair, group: str, member: str, name: str) -> list[str]:
    """The member's first heartbeat (compared), then Kafka's initialization awaited (kcoord's is done
    once the heartbeat is answered), then its heartbeat at the epoch it got (compared)."""
    answers = pair.ask(SHARE_HEARTBEAT, V, heartbeat(group, member, 0, subscribed_topic_names=[name]))
    found = unexplained("ShareGroupHeartbeat", pair.diff(*answers))
    for side, answer in zip((pair.kafka, pair.kcoord), answers, strict=True):
        side.learned[member] = answer["member_epoch"]
    return found


def _settle(pair: Pair, group: str, member: str) -> list[str]:
    """The member's heartbeat at the epoch it got, once Kafka initialized its partitions (kcoord has
    once it answered the join): both answers compared."""
    kafka = _assigned(pair.kafka, group, member, pair.kafka.learned[member], time.monotonic() + 30)
    assert kafka is not None, "Kafka never initialized the share partitions"
    kcoord = pair.kcoord.call(SHARE_HEARTBEAT, V, _epoch(group, member)(pair.kcoord))
    for side, answer in zip((pair.kafka, pair.kcoord), (kafka, kcoord), strict=True):
        side.learned[member] = answer["member_epoch"]
    return unexplained("ShareGroupHeartbeat", pair.diff(kafka, kcoord))


def _listed(pair: Pair, group: str, types: list[str]) -> list[str]:
    answers = pair.ask(16, 5, {"states_filter": [], "types_filter": types})
    mine = [{**a, "groups": [g for g in a["groups"] if g["group_id"] == group]} for a in answers]
    return unexplained("ListGroups", pair.diff(*mine))


def test_a_member_joins_heartbeats_and_leaves_as_kafka(pair: Pair) -> None:
    group, name, member = unique("sg"), unique("t"), random_uuid()
    _created(pair, name, 2)
    _recompute_at_every_change(pair, group)
    found = _join(pair, group, member, name)
    found += _settle(pair, group, member)
    api = "ShareGroupHeartbeat"
    found += pair.compare(api, SHARE_HEARTBEAT, V, _epoch(group, member, 5))  # fenced: greater
    found += pair.compare(api, SHARE_HEARTBEAT, V, _epoch(group, member, -1))  # the previous epoch
    found += pair.compare(api, SHARE_HEARTBEAT, V, heartbeat(group, member, 0, subscribed_topic_names=[name]))
    found += pair.compare(api, SHARE_HEARTBEAT, V, _epoch(group, member))
    found += pair.compare(api, SHARE_HEARTBEAT, V, heartbeat(group, random_uuid(), 2))  # unknown member
    describe = {"group_ids": [group, unique("none")], "include_authorized_operations": True}
    found += pair.compare("ShareGroupDescribe", SHARE_DESCRIBE, V, describe)
    found += pair.compare(
        "DescribeGroups", 15, 5, {"groups": [group], "include_authorized_operations": False}
    )
    found += _listed(pair, group, ["share"])
    found += _listed(pair, group, ["consumer"])
    found += pair.compare("DeleteGroups", 42, 2, {"groups_names": [group]})  # not empty
    found += pair.compare(api, SHARE_HEARTBEAT, V, heartbeat(group, random_uuid(), -1))  # leave unknown
    found += pair.compare(api, SHARE_HEARTBEAT, V, heartbeat(group, member, -1))
    found += pair.compare("ShareGroupDescribe", SHARE_DESCRIBE, V, describe)
    found += _listed(pair, group, [])
    found += pair.compare("DeleteGroups", 42, 2, {"groups_names": [group]})
    found += pair.compare("ShareGroupDescribe", SHARE_DESCRIBE, V, describe)
    assert_same(found)


def test_two_members_share_the_partitions_as_kafka(pair: Pair) -> None:
    group, name, first, second = unique("sg"), unique("t"), random_uuid(), random_uuid()
    _created(pair, name, 1)
    _recompute_at_every_change(pair, group)
    found = _join(pair, group, first, name)
    found += _settle(pair, group, first)
    found += _join(pair, group, second, name)  # one partition, two members: both get it
    found += pair.compare("ShareGroupHeartbeat", SHARE_HEARTBEAT, V, _epoch(group, first))
    assert_same(found)


def test_one_id_is_one_type_as_kafka(pair: Pair) -> None:
    group, name, member = unique("sg"), unique("t"), random_uuid()
    _created(pair, name, 1)
    found = _join(pair, group, member, name)
    consumer = {"group_id": group, "member_id": random_uuid(), "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30_000, "subscribed_topic_names": [name],
                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}  # fmt: skip
    found += pair.compare("ConsumerGroupHeartbeat", 68, 1, consumer)
    join = {"group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}  # fmt: skip
    found += pair.compare("JoinGroup", 11, 9, join)
    # and the other way round: a consumer group's id for a share member
    other = unique("cg")
    pair.ask(68, 1, {**consumer, "group_id": other})
    found += pair.compare(
        "ShareGroupHeartbeat",
        SHARE_HEARTBEAT,
        V,
        heartbeat(other, random_uuid(), 0, subscribed_topic_names=[name]),
    )
    found += pair.compare(
        "ShareGroupDescribe",
        SHARE_DESCRIBE,
        V,
        {"group_ids": [other], "include_authorized_operations": False},
    )
    assert_same(found)


def test_the_classic_apis_on_a_share_group_as_kafka(pair: Pair) -> None:
    group, name, member = unique("sg"), unique("t"), random_uuid()
    _created(pair, name, 1)
    found = _join(pair, group, member, name)
    found += pair.compare(
        "DescribeGroups", 15, 6, {"groups": [group], "include_authorized_operations": False}
    )
    offset = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
              "group_instance_id": None, "topics": [{"name": name, "partitions": [offset]}]}  # fmt: skip
    found += pair.compare("OffsetCommit", 8, 9, commit)
    fetch = {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}],
             "require_stable": False}  # fmt: skip
    found += pair.compare("OffsetFetch", 9, 9, fetch)
    found += pair.compare(
        "OffsetDelete",
        47,
        0,
        {"group_id": group, "topics": [{"name": name, "partitions": [{"partition_index": 0}]}]},
    )
    heartbeat_body = {"group_id": group, "generation_id": 1, "member_id": member, "group_instance_id": None}
    found += pair.compare("Heartbeat", 12, 4, heartbeat_body)
    found += pair.compare("FindCoordinator", 10, 6, {"key_type": 2, "coordinator_keys": [f"{group}:x:0"]})
    found += pair.compare("FindCoordinator", 10, 6, {"key_type": 0, "coordinator_keys": [group]})
    found += _listed(pair, group, ["classic"])
    assert_same(found)


def test_a_subscription_to_no_topic_as_kafka(pair: Pair) -> None:
    group, member = unique("sg"), random_uuid()
    _recompute_at_every_change(pair, group)
    found = _join(pair, group, member, unique("absent"))
    found += pair.compare("ShareGroupHeartbeat", SHARE_HEARTBEAT, V, _epoch(group, member))
    describe = {"group_ids": [group], "include_authorized_operations": False}
    found += pair.compare("ShareGroupDescribe", SHARE_DESCRIBE, V, describe)
    assert_same(found)
