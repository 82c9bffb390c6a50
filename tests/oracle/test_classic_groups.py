"""The classic group protocol against Apache Kafka 4.3: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit and OffsetFetch on their error paths (unknown group, unknown member, bad generation,
rebalance in progress, unknown topic), and DescribeGroups / ListGroups of the groups this made.

Each side makes up its own member ids; a scenario aliases them (`<m1>`, `<m2>`) as it learns them, so
the answers compare field by field and the next request carries each side's own id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kcoord_process import KcoordServer
from tests.oracle.diff import Pair, Side, assert_same, unexplained
from tests.oracle.kafka import KafkaOracle
from tests.oracle.scenario import create_on_both, topic, unique
from tests.server.wire import connect

pytestmark = pytest.mark.xdist_group("kafka_oracle")

JOIN_V, SYNC_V, HEARTBEAT_V, LEAVE_V = 9, 5, 4, 5
COMMIT_V, FETCH_V, DESCRIBE_V, LIST_V, FIND_V = 8, 8, 5, 4, 4
PROTOCOL_METADATA = b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"  # a ConsumerProtocol subscription v1
ASSIGNMENT = b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"


def join(group: str, member: str = "", rebalance_timeout_ms: int = 30_000) -> Any:
    def body(side: Side) -> dict[str, Any]:
        return {
            "group_id": group,
            "session_timeout_ms": 30_000,
            "rebalance_timeout_ms": rebalance_timeout_ms,
            "member_id": side.real(member) if member else "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": PROTOCOL_METADATA}],
            "reason": None,
        }

    return body


def sync(group: str, member: str, generation: int, assign: bool = True) -> Any:
    def body(side: Side) -> dict[str, Any]:
        real = _real(side, member)
        return {
            "group_id": group,
            "generation_id": generation,
            "member_id": real,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": real, "assignment": ASSIGNMENT}] if assign else [],
        }

    return body


def heartbeat(group: str, member: str, generation: int) -> Any:
    def body(side: Side) -> dict[str, Any]:
        return {
            "group_id": group,
            "generation_id": generation,
            "member_id": _real(side, member),
            "group_instance_id": None,
        }

    return body


def _real(side: Side, member: str) -> str:
    """A learned member's id on `side`, or `member` itself for an id no side made (e.g. "nobody")."""
    return str(side.real(member)) if member.startswith("<") else member


def commit(group: str, member: str, generation: int, name: str, partition: int = 0) -> Any:
    def body(side: Side) -> dict[str, Any]:
        part = {"partition_index": partition, "committed_offset": 5, "committed_metadata": "m"}
        return {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": _real(side, member),
            "group_instance_id": None,
            "topics": [{"name": name, "partitions": [part]}],
        }

    return body


def offset_fetch(*groups: str) -> dict[str, Any]:
    return {"groups": [{"group_id": g, "topics": None} for g in groups], "require_stable": False}


def describe(*groups: str) -> dict[str, Any]:
    return {"groups": list(groups), "include_authorized_operations": False}


def learn(pair: Pair, answers: tuple[dict[str, Any], dict[str, Any]], placeholder: str) -> None:
    """Alias each side's `member_id` in `answers` as `placeholder`."""
    for side, answer in zip((pair.kafka, pair.kcoord), answers, strict=True):
        side.alias(answer["member_id"], placeholder)


def step(pair: Pair, api: str, api_key: int, version: int, body: Any, placeholder: str = "") -> list[str]:
    """Send to both; learn a member id first when `placeholder` is given; the unexplained differences."""
    answers = pair.ask(api_key, version, body)
    if placeholder:
        learn(pair, answers, placeholder)
    return [f"[{api} v{version}] {line}" for line in unexplained(api, pair.diff(*answers))]


def joined(pair: Pair, group: str) -> list[str]:
    """`<m1>` joins `group` (MEMBER_ID_REQUIRED first, then the join that makes it leader of
    generation 1) and syncs; the differences seen on the way."""
    found = step(pair, "JoinGroup", 11, JOIN_V, join(group), "<m1>")
    found += step(pair, "JoinGroup", 11, JOIN_V, join(group, "<m1>"))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m1>", 1))
    return found


@pytest.fixture
def second(pair: Pair, kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer) -> Iterator[Pair]:
    """Another connection to each broker, sharing `pair`'s aliases, for a request that parks (a
    JoinGroup mid-rebalance holds back every later answer on its connection)."""
    both = Pair(
        Side("kafka", connect(kafka_oracle.address), pair.kafka.aliases),
        Side("kcoord", connect(kcoord_peer.address), pair.kcoord.aliases),
    )
    try:
        yield both
    finally:
        both.close()


def test_find_coordinator_as_kafka(pair: Pair) -> None:
    body = {"key_type": 0, "coordinator_keys": [unique("find")]}
    assert_same(step(pair, "FindCoordinator", 10, FIND_V, body))


def test_requests_for_a_group_that_does_not_exist(pair: Pair) -> None:
    group, name = unique("nogroup"), unique("t")
    create_on_both(pair, topic(name))
    found = step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "nobody", 1))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "nobody", 1))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "nobody", 3, name))
    found += step(pair, "OffsetFetch", 9, FETCH_V, offset_fetch(group))
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group))
    leave = {"group_id": group, "members": [{"member_id": "nobody", "group_instance_id": None}]}
    found += step(pair, "LeaveGroup", 13, LEAVE_V, leave)
    assert_same(found)


def test_a_simple_group_commits_and_fetches_as_kafka(pair: Pair) -> None:
    """Generation -1 and no member: the admin and `assign()` consumers' commits."""
    group, name = unique("simple"), unique("t")
    create_on_both(pair, topic(name, 2))
    found = step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "", -1, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "", -1, name, partition=9))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "", -1, unique("missing")))
    found += step(pair, "OffsetFetch", 9, FETCH_V, offset_fetch(group, unique("other")))
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group))
    assert_same(found)


def test_join_sync_and_heartbeat_error_paths(pair: Pair) -> None:
    group = unique("classic")
    found = step(pair, "JoinGroup", 11, JOIN_V, join(group), "<m1>")
    found += step(pair, "JoinGroup", 11, JOIN_V, join(group, "<m1>"))
    # CompletingRebalance: the leader has not synced yet.
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m1>", 1))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m1>", 2))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "nobody", 1))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m1>", 2))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "nobody", 1))
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m1>", 1))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m1>", 1))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m1>", 0))
    assert_same(found)


def test_a_members_commits_and_their_errors(pair: Pair) -> None:
    group, name = unique("commits"), unique("t")
    create_on_both(pair, topic(name))
    found = joined(pair, group)
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "<m1>", 1, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "<m1>", 2, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "nobody", 1, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "", -1, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "<m1>", 1, unique("missing")))
    found += step(pair, "OffsetFetch", 9, FETCH_V, offset_fetch(group))
    assert_same(found)


def test_a_stable_group_is_described_and_listed_as_kafka(pair: Pair) -> None:
    group = unique("listed")
    found = joined(pair, group)
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group, unique("absent")))
    answers = pair.ask(16, LIST_V, {"states_filter": []})
    mine = [{**a, "groups": [g for g in a["groups"] if g["group_id"] == group]} for a in answers]
    found += [f"[ListGroups] {line}" for line in unexplained("ListGroups", pair.diff(*mine))]
    answers = pair.ask(16, LIST_V, {"states_filter": ["Empty"]})
    mine = [{**a, "groups": [g for g in a["groups"] if g["group_id"] == group]} for a in answers]
    found += [f"[ListGroups Empty] {line}" for line in unexplained("ListGroups", pair.diff(*mine))]
    assert_same(found)


def _rebalancing(pair: Pair, second: Pair, group: str, name: str) -> tuple[list[str], list[Any]]:
    """`<m1>` leads a Stable generation 1; `<m2>` joins on `second` and parks until `<m1>` rejoins (or
    its rebalance timeout ends). The differences, and the parked requests (side, correlation id)."""
    create_on_both(pair, topic(name))
    found = joined(pair, group)
    first = second.ask(11, JOIN_V, join(group))
    learn(second, first, "<m2>")
    found += [f"[JoinGroup m2] {line}" for line in unexplained("JoinGroup", second.diff(*first))]
    parked = [
        (side, side.send(11, JOIN_V, join(group, "<m2>")(side))) for side in (second.kafka, second.kcoord)
    ]
    for side in (pair.kafka, pair.kcoord):  # the parked join has arrived once the group is rebalancing
        _await_state(side, group, "PreparingRebalance")
    return found, parked


def _await_state(side: Side, group: str, state: str) -> None:
    deadline = time.monotonic() + 30
    while side.call(15, DESCRIBE_V, describe(group))["groups"][0]["group_state"] != state:
        assert time.monotonic() < deadline, f"{side.name}: {group} never became {state}"
        time.sleep(0.02)  # poll interval


def test_a_rebalance_in_progress_and_leaving(pair: Pair, second: Pair) -> None:
    """A second member joins a Stable group: the first one's heartbeat learns REBALANCE_IN_PROGRESS,
    its commit too; its rejoin completes the join phase for both (generation 2); a SyncGroup of the old
    generation, heartbeats while CompletingRebalance, the syncs of generation 2; both leave."""
    group, name = unique("rebalance"), unique("t")
    found, parked = _rebalancing(pair, second, group, name)
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m1>", 1))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "<m1>", 1, name))
    found += step(pair, "JoinGroup", 11, JOIN_V, join(group, "<m1>"))
    answers = tuple(side.receive(11, JOIN_V, correlation) for side, correlation in parked)
    found += [f"[JoinGroup m2 parked] {line}" for line in unexplained("JoinGroup", pair.diff(*answers))]
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m1>", 1))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m2>", 2))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m1>", 2))
    found += step(pair, "SyncGroup", 14, SYNC_V, sync(group, "<m2>", 2, assign=False))
    found += step(pair, "Heartbeat", 12, HEARTBEAT_V, heartbeat(group, "<m2>", 2))
    leaving = ("<m1>", "<m2>", "nobody")
    members = [{"member_id": m, "group_instance_id": None, "reason": None} for m in leaving]
    found += step(pair, "LeaveGroup", 13, LEAVE_V, _leave(group, members))
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group))
    assert_same(found)


def test_a_group_preparing_a_rebalance_is_described_as_kafka(pair: Pair, second: Pair) -> None:
    group = unique("preparing")
    found, _ = _rebalancing(pair, second, group, unique("t"))
    found += step(pair, "DescribeGroups", 15, DESCRIBE_V, describe(group))
    assert_same(found)


def _leave(group: str, members: list[dict[str, Any]]) -> Any:
    def body(side: Side) -> dict[str, Any]:
        return {
            "group_id": group,
            "members": [{**m, "member_id": _real(side, m["member_id"])} for m in members],
        }

    return body
