"""Test controls drive the group through its own transitions; the metrics observer sees each one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kcoord.broker.request_stats import Histogram
from kcoord.coordinator.groups.controls import TestControlError
from kcoord.coordinator.groups.state import GroupState
from kcoord.wiring.metrics import (
    APPEND_SAMPLE_EVERY,
    STORAGE_BUCKETS,
    GroupEvents,
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
    from kcoord import storage
    from kcoord.coordinator.groups.records import OffsetCommitRecord
    from kcoord.coordinator.persistence.record_log import StorageRecordLog

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

    from kcoord.broker.apis import offset_commit
    from kcoord.broker.context import RequestMeta
    from kcoord.broker.request_stats import RequestStats
    from tests.unit.fakes import Reply

    class Topics:
        def has_partition(self, topic: str, partition: int) -> bool:
            return topic == "t" and partition < 2

    stats = RequestStats()
    ctx = SimpleNamespace(
        manager=h.mgr, topics=Topics(), stats=stats, authorizer=None, data=SimpleNamespace(offsets=None)
    )

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


# -- consumer-protocol groups (KIP-848) in the metrics and the controls ------------------------------------
def _samples(collector: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in collector.collect()
        for s in family.samples
    }


def _consumer_cluster() -> Any:
    """A manager with topics t1 (6 partitions) and t2, a classic Stable group "classic" of one member,
    and a consumer group "g" made by real heartbeats: m1 Stable with all of t1, then m2 joining (the
    group Reconciling: m1 must revoke half of t1 first)."""
    from tests.unit.test_consumer_heartbeat import Cluster

    c = Cluster()
    first = c.hb("m1", 0)
    assert first.member_epoch == 2  # a group starts at epoch 1 (Kafka 4.3's ModernGroup)
    c.hb("m2", 0)
    return c


def test_consumer_groups_are_summarised_beside_classic_groups() -> None:
    c = _consumer_cluster()
    summary = {s.group_id: s for s in c.mgr.groups()}
    g = summary["g"]
    assert (g.group_type, g.state, g.generation_id, g.assignment_epoch) == ("consumer", "Reconciling", 3, 3)
    assert (g.protocol_type, g.protocol_name, g.leader_id, g.members) == ("consumer", "uniform", None, 2)
    assert [group.group_id for group in c.mgr.all_consumer_groups()] == ["g"]
    consumer_group = c.mgr.consumer_group("g")
    assert consumer_group is not None and c.mgr.consumer_assignor(consumer_group) == "uniform"


def test_metrics_count_consumer_groups_by_state_and_show_them_per_group() -> None:
    from kcoord.wiring.metrics import KcoordCollector, Lag, MetricsSource

    c = _consumer_cluster()
    h = Harness(group_initial_rebalance_delay_ms=0)  # a classic group on its own manager
    h.stable_group(1, group="classic")
    source = MetricsSource()
    source.groups = lambda: h.mgr.groups() + c.mgr.groups()
    source.lags = lambda group_id: {("t1", 0): (3, Lag(10, 7, 1.5))} if group_id == "g" else {}
    m = _samples(KcoordCollector(source, max_groups=10))
    assert m[("kcoord_groups", (("state", "Reconciling"), ("type", "consumer")))] == 1
    assert m[("kcoord_groups", (("state", "Stable"), ("type", "consumer")))] == 0
    assert m[("kcoord_groups", (("state", "Assigning"), ("type", "consumer")))] == 0
    assert m[("kcoord_groups", (("state", "Stable"), ("type", "classic")))] == 1
    assert m[("kcoord_members", ())] == 3
    assert m[("kcoord_group_members", (("group", "g"),))] == 2
    assert m[("kcoord_group_state", (("group", "g"), ("state", "Reconciling")))] == 1
    assert m[("kcoord_group_epoch", (("group", "g"),))] == 3
    assert m[("kcoord_group_assignment_epoch", (("group", "g"),))] == 3
    assert ("kcoord_group_generation", (("group", "g"),)) not in m
    assert m[("kcoord_group_generation", (("group", "classic"),))] == 1
    labels = (("group", "g"), ("partition", "0"), ("topic", "t1"))
    assert m[("kcoord_group_lag_offsets", labels)] == 7
    assert m[("kcoord_group_committed_offset", labels)] == 3
    # The per-group limit covers both kinds: the lagging consumer group first.
    one = _samples(KcoordCollector(source, max_groups=1))
    assert [k for k in one if k[0] == "kcoord_group_members"] == [("kcoord_group_members", (("group", "g"),))]
    assert one[("kcoord_metrics_groups_omitted", ())] == 1


def test_expiring_a_consumer_member_fences_it_and_a_forced_rebalance_is_refused() -> None:
    c = _consumer_cluster()
    c.mgr.controls.expire_member("g", "m2")
    group = c.group()
    assert set(group.members) == {"m1"} and group.group_epoch == 4
    assert c.hb("m2", 3, topics=None).error == UNKNOWN_MEMBER_ID
    with pytest.raises(TestControlError) as unknown:
        c.mgr.controls.expire_member("g", "m2")
    assert unknown.value.status == 404
    with pytest.raises(TestControlError) as refused:
        c.mgr.controls.force_rebalance("g")
    assert refused.value.status == 409
