"""Share groups (KIP-932, issue 34 item 5) with stock clients: Kafka 4.3's KafkaShareConsumer and
confluent-kafka's ShareConsumer, each in its own process, against Apache Kafka 4.3.1 and against kcoord
(the `broker` fixture). Kafka's SharePartition.java is the reference for what is checked: a record
ACQUIRED by one member is delivered to no other until its lock expires or it is released
(SharePartition.acquire / releaseAcquisitionLockOnTimeout), RELEASE makes it AVAILABLE with its delivery
count kept, REJECT archives it, the delivery-count limit archives it (SharePartition
.updateRecordStateAndReleaseFromAcquired...), and the start offset moves past finished records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.share.scenario import Broker, by_offset

pytestmark = pytest.mark.xdist_group("share_brokers")


def test_consumers_sharing_one_partition_never_hold_one_record_at_once(
    broker: Broker, tmp_path: Path
) -> None:
    """Three members (two Java, one confluent) on one partition: every record delivered once, to one
    of them, and describeShareGroups shows all three assigned the partition."""
    topic, group = broker.topic("many"), broker.group("many")
    members = [
        broker.consumer(client, group, topic, "accept", tmp_path, f"{client}-{i}")
        for i, client in enumerate(("java", "java", "confluent"))
    ]
    try:
        broker.wait_assigned(group, 3, [f"{topic}-0"])
        for round_ in range(3):
            broker.produce(topic, [f"r{round_}-{i}" for i in range(10)])

        def seen() -> list[dict[str, Any]]:
            return [r for m in members for r in m.records()]

        members[0].wait(lambda _: len({r["offset"] for r in seen()}) >= 30)
        for member in members:
            member.stop()
        delivered = by_offset(seen())

        assert sorted(delivered) == list(range(30))
        twice = {o: [(r["by"], r["delivery"]) for r in rs] for o, rs in delivered.items() if len(rs) > 1}
        assert not twice, f"records delivered more than once: {twice}"
        commits = [e for m in members for e in m.events if e["event"] == "committed"]
        assert all(not e["errors"] for e in commits), commits
    finally:
        for member in members:
            member.kill()


def _sentinel_next(broker: Broker, group: str, topic: str, client: str, tmp_path: Path, offset: int) -> None:
    """A new member of `group` after a sentinel record is written at `offset`: the first record it is
    given is the sentinel, so every record before it is finished (archived or acknowledged) for the
    group, a condition awaited instead of a quiet period."""
    broker.produce(topic, ["sentinel"])
    last = broker.consumer(client, group, topic, "accept", tmp_path, f"{client}-after")
    try:
        last.wait(lambda _: bool(last.records()))
        first = last.records()[0]
        assert (first["offset"], first["value"], first["delivery"]) == (offset, "sentinel", 1), last.records()
        last.stop()
    finally:
        last.kill()


@pytest.mark.parametrize("client", ["java", "confluent"])
def test_release_redelivers_and_reject_archives(broker: Broker, client: str, tmp_path: Path) -> None:
    """RELEASE: the record comes back with delivery count 2 (SharePartition.acknowledge, RELEASE keeps
    the count); REJECT: it is never delivered again (ARCHIVED)."""
    topic = broker.topic("release")
    broker.produce(topic, [f"v{i}" for i in range(4)])
    released, rejected = broker.group("release"), broker.group("reject")
    one = broker.consumer(client, released, topic, "release-once", tmp_path, f"{client}-release")
    two = broker.consumer(client, rejected, topic, "reject", tmp_path, f"{client}-reject")
    try:
        one.wait(lambda _: len(one.records()) >= 8)
        two.wait(lambda _: len(two.records()) >= 4)
        one.stop()
        two.stop()
        assert {o: [r["delivery"] for r in rs] for o, rs in by_offset(one.records()).items()} == {
            o: [1, 2] for o in range(4)
        }
        assert [(r["offset"], r["delivery"]) for r in two.records()] == [(o, 1) for o in range(4)]
        _sentinel_next(broker, rejected, topic, client, tmp_path, 4)
    finally:
        one.kill()
        two.kill()


def test_the_delivery_count_limit_archives_a_record(broker: Broker, tmp_path: Path) -> None:
    """share.delivery.count.limit=2 and a member that releases everything: each record is delivered
    twice, then archived (SharePartition: a release at the limit goes to ARCHIVED)."""
    topic, group = broker.topic("limit"), broker.group("limit", share_delivery_count_limit=2)
    broker.produce(topic, ["a", "b", "c"])
    member = broker.consumer("java", group, topic, "release", tmp_path, "java-release")
    try:
        member.wait(lambda _: len(member.records()) >= 6)
        member.stop()
        assert {o: [r["delivery"] for r in rs] for o, rs in by_offset(member.records()).items()} == {
            0: [1, 2],
            1: [1, 2],
            2: [1, 2],
        }
        _sentinel_next(broker, group, topic, "java", tmp_path, 3)
    finally:
        member.kill()


# A stalled member's records come back when their locks expire: short locks keep the scenario short.
# A killed member's locks are long so that "released when its connection dropped" (Kafka) and
# "released when the lock expired" cannot be confused on a loaded machine.
STALLED_LOCK_MS, KILLED_LOCK_MS = 2000, 20000


@pytest.mark.parametrize("how", ["killed", "stalled"])
def test_records_a_member_holds_go_to_another(broker: Broker, how: str, tmp_path: Path) -> None:
    """A member acquires records and never acknowledges them; the other member gets every one of them
    again (delivery count 2, or more where the holder's client prefetched them again unseen).
    Stalled (alive, polling no more): only once their acquisition locks expired (SharePartition's
    acquisition lock timer). Killed (SIGKILL): Kafka 4.3.1 releases them as soon as the member's
    connection drops, long before the lock would expire (ShareSessionCache's
    ClientConnectionDisconnectListener.onDisconnect -> the member's share session released,
    SharePartitionManager.releaseSession -> SharePartition.releaseAcquiredRecords, count kept).
    Times are wall clocks on this host: when the holder's poll returned (stalled) or when the test
    killed it (killed), to when the other's poll returned; half the lock is the bound either way."""
    lock_ms = KILLED_LOCK_MS if how == "killed" else STALLED_LOCK_MS
    topic, group = broker.topic(how), broker.group(how, share_record_lock_duration_ms=lock_ms)
    holder = broker.consumer("java", group, topic, "hold", tmp_path, "java-holder")
    broker.produce(topic, [f"v{i}" for i in range(5)])
    holder.wait(lambda _: len(holder.records()) >= 5)
    taken_ms = max(r["ms"] for r in holder.records())
    other = broker.consumer("confluent", group, topic, "accept", tmp_path, "confluent-other")
    try:
        if how == "killed":
            # The other member is in the group and polling before the kill, so the time measured from
            # the kill is the release's, not the other client's start-up on a loaded machine.
            broker.wait_assigned(group, 2, [f"{topic}-0"])
            assert not other.records(), other.records()
            holder.kill()
            taken_ms = time.time() * 1000
        other.wait(lambda _: len(other.records()) >= 5, timeout=30 + lock_ms / 1000)
        other.stop()
        seen = [(r["offset"], r["delivery"], r["ms"] - taken_ms) for r in other.records()]
        assert [r["offset"] for r in other.records()] == list(range(5)), seen
        assert all(r["delivery"] >= 2 for r in other.records()), seen
        waited_ms = min(r["ms"] for r in other.records()) - taken_ms
        if how == "stalled":
            assert waited_ms >= lock_ms / 2, f"redelivered {waited_ms} ms after, locks are {lock_ms} ms"
        else:
            assert waited_ms < lock_ms / 2, f"redelivered {waited_ms} ms after the kill, not at once"
    finally:
        holder.kill()
        other.kill()


@pytest.mark.parametrize("client", ["java", "confluent"])
def test_read_committed_skips_an_aborted_transaction(broker: Broker, client: str, tmp_path: Path) -> None:
    """share.isolation.level=read_committed: the aborted transaction's records are never delivered."""
    topic, group = broker.topic("txn"), broker.group("txn", share_isolation_level="read_committed")
    broker.produce(topic, ["c0", "c1", "c2"], abort=["a0", "a1"])
    member = broker.consumer(client, group, topic, "implicit", tmp_path, f"{client}-rc")
    try:
        member.wait(lambda _: len(member.records()) >= 3)
        member.stop()
        assert [r["value"] for r in member.records()] == ["c0", "c1", "c2"]
    finally:
        member.kill()


def test_alter_share_group_offsets_rewinds_an_empty_group(broker: Broker, tmp_path: Path) -> None:
    """alterShareGroupOffsets to 0 once the group is empty: everything is delivered again, count 1."""
    topic, group = broker.topic("alter"), broker.group("alter")
    broker.produce(topic, ["x", "y"])
    first = broker.consumer("java", group, topic, "accept", tmp_path, "java-first")
    try:
        first.wait(lambda _: len(first.records()) >= 2)
        first.stop()
    finally:
        first.kill()
    broker.alter(group, topic, {0: 0})
    assert broker.start_offsets(group) == {0: 0}
    again = broker.consumer("java", group, topic, "accept", tmp_path, "java-again")
    try:
        again.wait(lambda _: len(again.records()) >= 2)
        again.stop()
        assert [(r["offset"], r["delivery"]) for r in again.records()] == [(0, 1), (1, 1)]
    finally:
        again.kill()
