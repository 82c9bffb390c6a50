"""The consumer group protocol (KIP-848) against Apache Kafka 4.3: ConsumerGroupHeartbeat's refusals
(validation, unknown members, fenced epochs), a member's join, heartbeat and leave, and
ConsumerGroupDescribe, DescribeGroups and ListGroups of the group. Member ids are the client's own
(v1, KIP-1082), so both brokers get the very same requests."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.oracle.diff import Pair, Side, assert_same, unexplained
from tests.oracle.kafka import random_uuid
from tests.oracle.scenario import create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")

HEARTBEAT_V, DESCRIBE_V = 1, 1


def member_id() -> str:
    """A client-generated member id as the Java consumer makes one (Uuid.randomUuid().toString())."""
    return random_uuid()


def heartbeat(group: str, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000 if epoch == 0 else -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    return {**body, **fields}


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("empty-member-id", {"member_id": "", "subscribed_topic_names": ["t"]}),
    ("empty-group-id", {"group_id": "", "subscribed_topic_names": ["t"]}),
    ("no-subscription", {}),
    ("no-rebalance-timeout", {"subscribed_topic_names": ["t"], "rebalance_timeout_ms": -1}),
    ("no-owned-partitions", {"subscribed_topic_names": ["t"], "topic_partitions": None}),
    ("unknown-assignor", {"subscribed_topic_names": ["t"], "server_assignor": "nope"}),
    ("bad-regex", {"subscribed_topic_regex": "["}),
    ("unknown-member-epoch-5", {"member_epoch": 5, "rebalance_timeout_ms": -1, "topic_partitions": None}),
    ("epoch-minus-3", {"member_epoch": -3, "rebalance_timeout_ms": -1, "topic_partitions": None}),
    ("leave-unknown-member", {"member_epoch": -1, "rebalance_timeout_ms": -1, "topic_partitions": None}),
]
# Seen against Kafka 4.3.1: case -> the finding (none open).
FINDINGS: dict[str, str] = {}


def _case(name: str, fields: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=FINDINGS[name])] if name in FINDINGS else []
    return pytest.param(fields, id=name, marks=marks)


@pytest.mark.parametrize("fields", [_case(*case) for case in REFUSED])
def test_consumer_group_heartbeat_refuses_as_kafka(pair: Pair, fields: dict[str, Any]) -> None:
    body = heartbeat(unique("cg"), member_id(), 0) | fields
    assert_same(pair.compare("ConsumerGroupHeartbeat", 68, HEARTBEAT_V, body))


def _own_epoch(group: str, member: str, delta: int = 0, leave: bool = False) -> Any:
    """A heartbeat at the epoch this side gave the member (+ delta), or leaving (-1)."""

    def body(side: Side) -> dict[str, Any]:
        return heartbeat(group, member, -1 if leave else side.learned["epoch"] + delta)

    return body


def _created(pair: Pair, name: str, partitions: int) -> None:
    """`name` created on both, and Kafka's group coordinator assigning it: the coordinator learns of a
    topic from the metadata image after the broker's metadata cache and replica manager
    (BrokerMetadataPublisher), so a member joining at once may be assigned nothing. Probed with a
    throwaway group per try, left again (bounded: 30 s)."""
    create_on_both(pair, topic(name, partitions))
    deadline = time.monotonic() + 30
    while not _probe_assigned(pair.kafka, name):
        assert time.monotonic() < deadline, f"Kafka's group coordinator never assigned {name}"
        time.sleep(0.05)  # poll interval for the coordinator's metadata image


def _probe_assigned(kafka: Side, name: str) -> bool:
    group, member = unique("probe"), member_id()
    joined = kafka.call(68, HEARTBEAT_V, heartbeat(group, member, 0, subscribed_topic_names=[name]))
    kafka.call(68, HEARTBEAT_V, heartbeat(group, member, -1, rebalance_timeout_ms=-1, topic_partitions=None))
    return bool(joined["assignment"] and joined["assignment"]["topic_partitions"])


def _joined(pair: Pair, group: str, member: str, name: str) -> list[str]:
    joining = heartbeat(group, member, 0, subscribed_topic_names=[name], server_assignor="uniform")
    answers = pair.ask(68, HEARTBEAT_V, joining)
    for side, answer in zip((pair.kafka, pair.kcoord), answers, strict=True):
        side.learned["epoch"] = answer["member_epoch"]
    return unexplained("ConsumerGroupHeartbeat", pair.diff(*answers))


def test_a_new_member_gets_the_epoch_kafka_gives(pair: Pair) -> None:
    name = unique("t")
    _created(pair, name, 3)
    assert_same(_joined(pair, unique("cg"), member_id(), name))


def test_a_member_joins_heartbeats_and_leaves_as_kafka(pair: Pair) -> None:
    group, name, member = unique("cg"), unique("t"), member_id()
    _created(pair, name, 3)
    _joined(pair, group, member, name)
    api = "ConsumerGroupHeartbeat"
    found = pair.compare(api, 68, HEARTBEAT_V, _own_epoch(group, member, 5))
    found += pair.compare(api, 68, HEARTBEAT_V, _own_epoch(group, member))
    describe = {"group_ids": [group, unique("none")], "include_authorized_operations": False}
    found += pair.compare("ConsumerGroupDescribe", 69, DESCRIBE_V, describe)
    found += pair.compare(
        "DescribeGroups", 15, 5, {"groups": [group], "include_authorized_operations": False}
    )
    answers = pair.ask(16, 5, {"states_filter": [], "types_filter": ["consumer"]})
    mine = [{**a, "groups": [g for g in a["groups"] if g["group_id"] == group]} for a in answers]
    found += unexplained("ListGroups", pair.diff(*mine))
    found += pair.compare(api, 68, HEARTBEAT_V, _own_epoch(group, member, leave=True))
    found += pair.compare("ConsumerGroupDescribe", 69, DESCRIBE_V, describe)
    assert_same(found)


def test_a_member_without_a_regex_is_described_as_kafka(pair: Pair) -> None:
    group, name = unique("cg"), unique("t")
    _created(pair, name, 1)
    _joined(pair, group, member_id(), name)
    describe = {"group_ids": [group], "include_authorized_operations": False}
    assert_same(pair.compare("ConsumerGroupDescribe", 69, DESCRIBE_V, describe))
