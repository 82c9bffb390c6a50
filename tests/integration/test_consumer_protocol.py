"""The consumer protocol (KIP-848) with a stock client: confluent-kafka with `group.protocol=consumer`,
which sends ConsumerGroupHeartbeat v1 and lets the coordinator assign (issue 14's acceptance).

Ownership is checked from the members' own rebalance callbacks: each worker stamps its
assigned/revoked/lost callbacks with the system-wide monotonic clock, and no partition may be
assigned to one member before the member that had it reported it revoked (or was killed).
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from tests.integration.conftest import (
    Partition,
    Worker,
    Workers,
    create_topic,
    partitions_of,
    unique,
    wait_for_split,
    wait_until,
)
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect

# Short consumer-protocol timings so a killed member is fenced within seconds (Kafka's bounds lowered).
SESSION_TIMEOUT_MS = 3000
CONSUMER_PROTOCOL_ARGS = (
    "--group-consumer-min-session-timeout-ms", "1000",
    "--group-consumer-session-timeout-ms", str(SESSION_TIMEOUT_MS),
    "--group-consumer-min-heartbeat-interval-ms", "100",
    "--group-consumer-heartbeat-interval-ms", "300",
)  # fmt: skip

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(120),
    pytest.mark.server_args(*CONSUMER_PROTOCOL_ARGS),
]


def spawn(workers: Workers, group: str, topics: list[str], **options: Any) -> Worker:
    return workers.spawn("confluent-kafka", group, topics, group_protocol="consumer", **options)


def ownership_violations(members: list[Worker], killed: dict[str, float] | None = None) -> list[str]:
    """Every moment a partition was assigned to a member while another still owned it, from the
    members' callbacks in the order of their monotonic timestamps. A killed member owns nothing
    after it was killed (`killed`: worker name -> monotonic time of the SIGKILL)."""
    events: list[tuple[float, str, str, list[Partition]]] = []
    for member in members:
        for event in member.events:
            if event["event"] in ("assigned", "revoked", "lost"):
                parts = [(t, p) for t, p in event["partitions"]]
                events.append((event["t"], member.name, event["event"], parts))
    for name, at in (killed or {}).items():
        events.append((at, name, "killed", []))
    owner: dict[Partition, str] = {}
    problems = []
    for at, name, kind, parts in sorted(events):
        if kind == "killed":
            owner = {tp: who for tp, who in owner.items() if who != name}
            continue
        for tp in parts:
            if kind == "assigned":
                if tp in owner and owner[tp] != name:
                    problems.append(f"t={at:.3f} {tp} assigned to {name} while {owner[tp]} owned it")
                owner[tp] = name
            elif owner.get(tp) == name:
                del owner[tp]
    return problems


def revoked(member: Worker, since: int = 0) -> set[Partition]:
    """What the member's callbacks revoked, from its event number `since` on."""
    events = member.events[since:]
    return {(t, p) for e in events if e["event"] in ("revoked", "lost") for t, p in e["partitions"]}


def test_one_member_gets_every_partition_and_commits(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g848")
    member = spawn(workers, group, [topic])
    wait_for_split([member], topic_partitions)
    member.commit([(topic, p, 10 + p, "m") for p in range(6)])
    assert member.committed(topic_partitions) == {(topic, p): (10 + p, "m") for p in range(6)}


def test_members_split_the_partitions_and_a_joiner_moves_only_what_it_takes(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g848")
    first = [spawn(workers, group, [topic]) for _ in range(3)]
    wait_for_split(first, topic_partitions)
    before = {m.name: m.assignment for m in first}
    seen = {m.name: len(m.events) for m in first}

    joiner = spawn(workers, group, [topic])
    members = [*first, joiner]
    wait_for_split(members, topic_partitions)
    # Incremental: nobody gave up a partition it still has, and only what the joiner got moved.
    for m in first:
        assert revoked(m, seen[m.name]) == before[m.name] - m.assignment, f"{m.name} revoked what it kept"
        assert before[m.name] & m.assignment == m.assignment, f"{m.name} gained partitions"
    moved = set().union(*(before[m.name] - m.assignment for m in first))
    assert moved == set(joiner.assignment)
    assert ownership_violations(members) == []


def test_a_killed_member_is_fenced_after_the_session_timeout_and_its_partitions_move(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g848")
    members = [spawn(workers, group, [topic]) for _ in range(3)]
    wait_for_split(members, topic_partitions)
    victim, survivors = members[0], members[1:]
    lost = victim.assignment
    victim.proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    victim.proc.wait(10)

    wait_for_split(survivors, topic_partitions, timeout=SESSION_TIMEOUT_MS / 1000 + 20)
    took = time.monotonic() - killed_at
    assert took >= SESSION_TIMEOUT_MS / 1000 * 0.9, f"moved after {took:.2f}s, before the session timeout"
    assert lost <= survivors[0].assignment | survivors[1].assignment
    assert ownership_violations(members, {victim.name: killed_at}) == []


def test_a_regex_subscription_picks_up_a_topic_created_later(server: KcoordServer, workers: Workers) -> None:
    prefix = unique("rx")
    create_topic(server.bootstrap, f"{prefix}-a", 2)
    member = spawn(workers, unique("g848"), [f"^{prefix}-.*"])
    wait_for_split([member], partitions_of(f"{prefix}-a", 2))
    create_topic(server.bootstrap, f"{prefix}-b", 3)
    wait_for_split([member], partitions_of(f"{prefix}-a", 2) | partitions_of(f"{prefix}-b", 3), timeout=30)


def test_offsets_and_epochs_survive_a_server_kill(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g848")
    members = [spawn(workers, group, [topic]) for _ in range(2)]
    wait_for_split(members, topic_partitions)
    for m in members:
        m.commit([(t, p, 100 + p, "") for t, p in sorted(m.assignment)])
    epochs_before = describe_epochs(server, group)

    server.stop(signal.SIGKILL)
    server.start()
    # The group was replayed from the log at the same epochs, before any member heartbeats again.
    assert describe_epochs(server, group)[:2] == epochs_before[:2]
    wait_for_split(members, topic_partitions)
    checker = spawn(workers, unique("reader"), [topic])
    wait_for_split([checker], topic_partitions)
    offsets = wait_until(
        lambda: members[0].committed(topic_partitions) or None, 30, "the committed offsets after the restart"
    )
    assert offsets == {(topic, p): (100 + p, "") for p in range(6)}


def describe_epochs(server: KcoordServer, group: str) -> tuple[int, int, dict[str, int]]:
    """(group epoch, assignment epoch, member epochs) through ConsumerGroupDescribe v1 on a raw socket."""
    with connect(server.address) as sock:
        response = call(sock, 69, 1, {"group_ids": [group], "include_authorized_operations": False})
    (described,) = response["groups"]
    assert described["error_code"] == 0, described
    members = {m["member_id"]: m["member_epoch"] for m in described["members"]}
    return described["group_epoch"], described["assignment_epoch"], members


# -- online migration: classic and consumer-protocol members in one group -----------------------------
def test_a_mixed_group_upgrades_and_downgrades_with_every_partition_owned_once(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("gmix")
    classic = [
        workers.spawn("kafka-python", group, [topic]),
        workers.spawn("confluent-kafka", group, [topic]),
    ]
    wait_for_split(classic, topic_partitions)

    # A consumer-protocol member joins the classic group: the group becomes a consumer group.
    modern = spawn(workers, group, [topic])
    members = [*classic, modern]
    wait_for_split(members, topic_partitions)
    assert group_type(workers.server, group) == "consumer"
    assert len(classic_member_ids(workers.server, group)) == 2
    second = spawn(workers, group, [topic])
    members.append(second)
    wait_for_split(members, topic_partitions)

    # The consumer-protocol members leave: the last one out turns the group back into a classic one.
    for m in (modern, second):
        m.close()
    wait_for_split(classic, topic_partitions)
    assert group_type(workers.server, group) == "classic"
    assert ownership_violations([*classic, modern, second]) == []


def group_type(server: KcoordServer, group: str) -> str:
    with connect(server.address) as sock:
        listed = call(sock, 16, 5, {"states_filter": [], "types_filter": []})["groups"]
    (entry,) = [g for g in listed if g["group_id"] == group]
    return str(entry["group_type"])


def classic_member_ids(server: KcoordServer, group: str) -> list[str]:
    """The members ConsumerGroupDescribe v1 reports as classic (MemberType 0)."""
    with connect(server.address) as sock:
        response = call(sock, 69, 1, {"group_ids": [group], "include_authorized_operations": False})
    return [m["member_id"] for m in response["groups"][0]["members"] if m["member_type"] == 0]
