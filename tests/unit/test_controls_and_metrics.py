"""Test controls drive the group through its own transitions; the metrics observer sees each one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coordinator.groups.controls import TestControlError
from coordinator.groups.state import GroupState
from coordinator.metrics import (
    APPEND_SAMPLE_EVERY,
    STORAGE_BUCKETS,
    GroupEvents,
    Histogram,
    SampledHistogram,
    rebalance_reason_label,
)
from tests.unit.conftest import Harness

REBALANCE_IN_PROGRESS = 27
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26


def test_forced_rebalance_moves_a_stable_group_to_preparing_and_heartbeats_say_rejoin(h0: Harness) -> None:
    events = GroupEvents()
    h0.mgr.observe_transitions(events)
    _leader, follower = h0.stable_group(2)
    h0.mgr.controls.force_rebalance("g")
    assert h0.state() is GroupState.PREPARING_REBALANCE
    assert h0.heartbeat(follower, 1).error == REBALANCE_IN_PROGRESS
    assert events.rebalances == {"new_member": 1, "test_control": 1}
    h0.mgr.controls.force_rebalance("g")  # already preparing: nothing changes
    assert events.rebalances == {"new_member": 1, "test_control": 1}


def test_forced_rebalance_refuses_unknown_and_empty_groups(h0: Harness) -> None:
    with pytest.raises(TestControlError) as unknown:
        h0.mgr.controls.force_rebalance("nobody")
    assert unknown.value.status == 404
    h0.settle(h0.commit({("t", 0): 5}, group="simple"))  # a simple group: offsets, no members
    assert h0.state("simple") is GroupState.EMPTY
    with pytest.raises(TestControlError) as empty:
        h0.mgr.controls.force_rebalance("simple")
    assert empty.value.status == 409


def test_expiring_a_member_removes_it_as_its_session_timer_would(h0: Harness) -> None:
    _leader, follower = h0.stable_group(2)
    h0.mgr.controls.expire_member("g", follower)
    group = h0.mgr.group("g")
    assert group is not None and follower not in group.members
    assert h0.state() is GroupState.PREPARING_REBALANCE
    assert h0.heartbeat(follower, 1).error == UNKNOWN_MEMBER_ID
    with pytest.raises(TestControlError):
        h0.mgr.controls.expire_member("g", follower)


def test_runtime_session_bounds_apply_to_the_next_join(h0: Harness) -> None:
    h0.mgr.controls.update_config({"group_max_session_timeout_ms": 10_000})
    reply = h0.join(session=45_000)
    assert reply.error == INVALID_SESSION_TIMEOUT
    with pytest.raises(TestControlError):
        h0.mgr.controls.update_config({"group_min_session_timeout_ms": 20_000})
    with pytest.raises(TestControlError):
        h0.mgr.controls.update_config({"offsets_retention_ms": 1})


def test_rebalance_duration_runs_from_preparing_to_stable(h: Harness) -> None:
    events = GroupEvents()
    h.mgr.observe_transitions(events)
    h.stable_group(1)  # 3 s initial rebalance delay
    assert events.rebalance_seconds.count() == 1
    assert events.rebalance_seconds.total == pytest.approx(3.0, abs=0.2)
    assert events.rebalances == {"new_member": 1}


def test_reason_labels_are_a_bounded_set() -> None:
    assert rebalance_reason_label("adding new member c-1 (client reason: x)") == "new_member"
    assert rebalance_reason_label("member m left the group") == "member_left"
    assert rebalance_reason_label("session expired") == "session_expired"
    assert rebalance_reason_label("session expired (test control)") == "test_control"
    assert rebalance_reason_label("removing ['a'] on pending sync expiration") == "sync_timeout"
    assert rebalance_reason_label("something new") == "other"


def test_histogram_buckets_are_le_and_cumulative() -> None:
    hist = Histogram((1.0, 2.0))
    for value in (0.5, 1.0, 1.5, 3.0):
        hist.observe(value)
    assert hist.cumulative() == [("1.0", 2.0), ("2.0", 3.0), ("+Inf", 4.0)]
    assert hist.total == 6.0


async def test_coordinator_log_appends_are_timed_by_sample(tmp_path: Path) -> None:
    """The append-latency histogram times the first APPEND_SAMPLE_EVERY appends, then one in that
    many; every append is still acknowledged once durable."""
    import storage
    from coordinator.groups.records import OffsetCommitRecord
    from coordinator.persistence.record_log import StorageRecordLog

    histogram = SampledHistogram(STORAGE_BUCKETS, APPEND_SAMPLE_EVERY)
    record_log = StorageRecordLog()
    record_log.append_seconds = histogram
    log = await storage.Log.open(tmp_path, storage.LogConfig(fsync_policy="never"))
    record_log.attach(log)
    appends = 3 * APPEND_SAMPLE_EVERY + 5
    outcomes: list[BaseException | None] = []
    done = asyncio.get_running_loop().create_future()
    for i in range(appends):
        record = OffsetCommitRecord("g", "t", 0, i, -1, "", 0, -1)

        def on_done(error: BaseException | None) -> None:
            outcomes.append(error)
            if len(outcomes) == appends:
                done.set_result(None)

        record_log.append([record], on_done)
    await asyncio.wait_for(done, 10)
    await log.close()
    assert outcomes == [None] * appends
    # 1..16 timed, then 32 and 48
    assert histogram.count() == APPEND_SAMPLE_EVERY + 2
    assert histogram.seen == appends


def test_offset_commit_partition_errors_are_counted_by_code_once_each(h: Harness) -> None:
    """OffsetCommit has no top-level error: its server module counts partition errors (unknown
    topics and partitions, metadata too large) for the metrics; a clean commit counts nothing."""
    from types import SimpleNamespace

    from coordinator.metrics import RequestStats
    from coordinator.server.apis import offset_commit
    from coordinator.server.context import RequestMeta
    from tests.unit.fakes import Reply

    class Topics:
        def has_partition(self, topic: str, partition: int) -> bool:
            return topic == "t" and partition < 2

    stats = RequestStats()
    ctx = SimpleNamespace(manager=h.mgr, topics=Topics(), stats=stats)

    def commit(partitions: list[tuple[str, int, str]]) -> Reply:
        topics: dict[str, list[dict[str, object]]] = {}
        for name, index, metadata in partitions:
            partition = {"partition_index": index, "committed_offset": 1, "committed_leader_epoch": -1,
                         "commit_timestamp": -1, "committed_metadata": metadata}  # fmt: skip
            topics.setdefault(name, []).append(partition)
        req = {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
               "group_instance_id": None, "retention_time_ms": -1,
               "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}  # fmt: skip
        reply = Reply()
        offset_commit.handle(ctx, req, RequestMeta(8, "c", "/127.0.0.1"), reply)  # type: ignore[arg-type]
        return reply

    assert commit([("t", 0, "m"), ("t", 1, "m")]).done
    assert stats.errors == {}
    too_large = "x" * 5000
    reply = commit([("t", 0, "m"), ("t", 1, too_large), ("t", 7, "m"), ("other", 0, "m"), ("other", 1, "m")])
    codes = {
        (t["name"], p["partition_index"]): p["error_code"] for t in reply["topics"] for p in t["partitions"]
    }
    assert codes == {("t", 0): 0, ("t", 1): 12, ("t", 7): 3, ("other", 0): 3, ("other", 1): 3}
    # 3 UNKNOWN_TOPIC_OR_PARTITION, 12 OFFSET_METADATA_TOO_LARGE
    assert stats.errors == {(8, 3): 3, (8, 12): 1}
