"""librdkafka-only group features: static membership (KIP-345) and cooperative-sticky (KIP-429).

Scenarios (i) and (j) of issue 4's acceptance list.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration.conftest import Partition, Worker, Workers, unique, wait_for_split, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def rebalance_events(worker: Worker) -> list[dict[str, Any]]:
    return [e for e in worker.events if e["event"] in ("assigned", "revoked", "lost")]


# (i)
def test_static_member_restarted_within_the_session_timeout_keeps_its_assignment(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    session_timeout_s = 10.0
    group, everything = unique("g"), topic_partitions
    options = {"session_timeout_ms": int(session_timeout_s * 1000)}

    leader = workers.spawn("confluent-kafka", group, [topic], group_instance_id="static-0", **options)
    wait_for_split([leader], everything)  # the first member stays the leader
    others = [
        workers.spawn("confluent-kafka", group, [topic], group_instance_id=f"static-{i}", **options)
        for i in (1, 2)
    ]
    members = [leader, *others]
    wait_for_split(members, everything)

    restarting, steady = others[1], [leader, others[0]]
    kept = restarting.assignment
    before = {w.name: len(rebalance_events(w)) for w in steady}
    restarted_at = time.monotonic()
    restarting.close()  # a static member does not send LeaveGroup
    replacement = workers.spawn("confluent-kafka", group, [topic], group_instance_id="static-2", **options)
    wait_until(
        lambda: replacement.assignment == kept, session_timeout_s, "the restarted member's old assignment"
    )
    assert time.monotonic() - restarted_at < session_timeout_s

    # No rebalance reached the other members: an eager rebalance would have revoked their partitions
    # before the replacement could sync. Watch a few more heartbeat intervals to be sure.
    watch_until = time.monotonic() + 1.5
    while time.monotonic() < watch_until:
        after = {w.name: len(rebalance_events(w)) for w in steady}
        assert after == before, f"the other members saw a rebalance: {[rebalance_events(w) for w in steady]}"
        time.sleep(0.1)
    wait_for_split([*steady, replacement], everything)


# (j)
def test_cooperative_sticky_rebalance_moves_only_the_partitions_that_change_owner(
    workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group, everything = unique("g"), topic_partitions

    def spawn() -> Worker:
        return workers.spawn("confluent-kafka", group, [topic], assignor="cooperative-sticky")

    first = spawn()
    wait_for_split([first], everything)
    second = spawn()
    wait_for_split([first, second], everything)
    after_two = {w.name: w.assignment for w in (first, second)}
    third = spawn()
    wait_for_split([first, second, third], everything)

    for worker in (first, second):
        # Sticky: what a member keeps is a subset of what it had; incremental: it never owned nothing.
        assert worker.assignment <= after_two[worker.name], f"{worker} lost partitions it could keep"
        sizes = [len(e["partitions"]) for e in worker.events_named("assignment")]
        first_owned = next(i for i, n in enumerate(sizes) if n)
        assert all(sizes[first_owned:]), f"{worker} was left with no partitions during a rebalance: {sizes}"
        revoked = {(t, p) for e in worker.events_named("revoked") for t, p in e["partitions"]}
        assert not revoked & worker.assignment, f"{worker} had partitions it kept revoked: {sorted(revoked)}"
    for worker in (first, second, third):
        assert not worker.events_named("lost"), f"{worker} lost its partitions: {worker.events_named('lost')}"
