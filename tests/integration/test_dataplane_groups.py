"""The data plane with real clients: produce keyed messages, consume them in a group, crash a member.

Each client library produces 3,000 keyed messages to a 6-partition topic, then three members of one
group (same library) consume them, committing after every poll; one member is SIGKILLed midway. At the
end every message was consumed at least once, offsets and per-key order hold within each partition,
and every duplicate is a message the killed member read after its last successful commit (or one
whose commit failed during a rebalance and was therefore not acknowledged).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from tests.integration.conftest import CLIENTS, Worker, Workers, unique, wait_until

pytestmark = pytest.mark.integration

MESSAGES = 3000
KEYS = 50

Seen = tuple[int, int]  # partition, offset


def records_of(member: Worker) -> list[tuple[str, int, int, str]]:
    return [tuple(r) for e in member.events_named("records") for r in e["records"]]  # type: ignore[misc]


def uncommitted_reads(member: Worker) -> set[Seen]:
    """What `member` read that no successful commit of its own covers (lost with it if it dies)."""
    committed: dict[int, int] = {}
    unacked: set[Seen] = set()
    for event in member.events:
        if event["event"] == "records":
            unacked.update((p, o) for _, p, o, _ in event["records"])
        elif event["event"] == "committed":
            for _, p, o in event["offsets"]:
                committed[p] = max(committed.get(p, 0), o)
            unacked = {(p, o) for p, o in unacked if o >= committed.get(p, 0)}
    return unacked


def failed_commit_reads(member: Worker) -> set[Seen]:
    """Records of polls whose commit failed (a rebalance): another member may read them again."""
    out: set[Seen] = set()
    last: list[Any] = []
    for event in member.events:
        if event["event"] == "records":
            last = event["records"]
        elif event["event"] == "commit_failed":
            out.update((p, o) for _, p, o, _ in last)
    return out


def check_storage_order(acked: list[tuple[int, int, str, str]]) -> None:
    """Offsets are dense per partition and each key's values increase with the offset."""
    by_partition: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for partition, offset, key, value in acked:
        by_partition[partition].append((offset, key, value))
    for partition, rows in by_partition.items():
        rows.sort()
        assert [o for o, _, _ in rows] == list(range(len(rows))), f"partition {partition} offsets not dense"
        last: dict[str, int] = {}
        for _, key, value in rows:
            assert int(value) > last.get(key, -1), f"key {key} out of order in partition {partition}"
            last[key] = int(value)


def check_consumed_in_order(member: Worker) -> None:
    """Inside each poll, a member reads each partition's offsets contiguously and in order."""
    for event in member.events_named("records"):
        per_partition: dict[int, list[int]] = defaultdict(list)
        for _, p, o, _ in event["records"]:
            per_partition[p].append(o)
        for p, offsets in per_partition.items():
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), (member, p, offsets[:10])


@pytest.mark.parametrize("client", CLIENTS)
def test_group_consumes_everything_across_a_member_crash(
    client: str, workers: Workers, producers: Any, topic: str
) -> None:
    producer = producers.spawn(client, topic, MESSAGES, keys=KEYS)
    acked = producer.wait_finished(120)
    assert not producer.failures and len(acked) == MESSAGES
    check_storage_order(acked)
    produced = {(p, o) for p, o, _, _ in acked}

    group = unique("consume")
    members = [workers.spawn(client, group, [topic], consume=True) for _ in range(3)]

    def consumed() -> set[Seen]:
        return {(p, o) for m in members for _, p, o, _ in records_of(m)}

    wait_until(lambda: len(consumed()) >= MESSAGES // 3, 90, "a third of the messages to be consumed")
    victim = max(members, key=lambda m: len(records_of(m)))
    victim.kill()
    wait_until(lambda: consumed() >= produced, 120, "every message to be consumed")

    reads = [(p, o) for m in members for _, p, o, _ in records_of(m)]
    assert set(reads) == produced, "a consumer read an offset that was never produced"
    for member in members:
        check_consumed_in_order(member)
    duplicates = {seen for seen, times in Counter(reads).items() if times > 1}
    allowed = uncommitted_reads(victim).union(*(failed_commit_reads(m) for m in members))
    assert duplicates <= allowed, f"{len(duplicates - allowed)} duplicates were committed before: " + str(
        sorted(duplicates - allowed)[:10]
    )
    assert len(reads) - len(set(reads)) <= len(allowed), "more re-reads than uncommitted messages"
    for member in members:
        if member is not victim:
            member.close()
