"""Transactional offsets, rule by rule (Kafka's OffsetMetadataManager.commitTransactionalOffset,
replay, replayEndTransactionMarker, fetchOffsets/fetchAllOffsets, cleanupExpiredOffsets,
deleteOffsets/deleteAllOffsets; ClassicGroup/ConsumerGroup.validateOffsetCommit with isTransactional;
GroupCoordinatorService.commitTransactionalOffsets), with a fake clock and an in-memory log."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.coordinator.groups import GroupState
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.records import OffsetCommitRecord, TxnOffsetTombstone
from kcoord.coordinator.groups.txn_offset_api import MarkerRejected
from kcoord.coordinator.persistence import from_storage, to_storage
from tests.unit.conftest import Harness
from tests.unit.test_consumer_heartbeat import Cluster
from tests.unit.txn_helpers import complete, fetched, txn_commit

NONE = ErrorCode.NONE
UNSTABLE = int(ErrorCode.UNSTABLE_OFFSET_COMMIT)


def replayed(h: Harness, records: list[Any] | None = None) -> Harness:
    """A fresh manager that replayed `records` (default: the whole log) through the storage codec."""
    fresh = Harness(loaded=False)
    for record in h.log.records if records is None else records:
        fresh.mgr.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
    fresh.mgr.on_loaded()
    return fresh


# -- pending until the marker -----------------------------------------------------------------------
def test_a_pending_offset_is_invisible_until_its_commit_marker(h: Harness) -> None:
    h.commit({("t", 0): 5})
    answer = txn_commit(h, {("t", 0): 10, ("t", 1): 20})
    assert answer.errors() == {("t", 0): NONE, ("t", 1): NONE}
    assert fetched(h, {"t": [0, 1]}) == {("t", 0): 5, ("t", 1): -1}
    assert fetched(h, None) == {("t", 0): 5}
    done = complete(h, commit=True)
    assert done.value is None
    assert fetched(h, {"t": [0, 1]}) == {("t", 0): 10, ("t", 1): 20}
    assert h.mgr.pending_transactional_offsets(1) == {}
    assert not h.mgr.has_pending_transactional_offsets("g")


def test_an_abort_marker_drops_the_pending_offsets(h: Harness) -> None:
    h.commit({("t", 0): 5})
    txn_commit(h, {("t", 0): 10})
    assert complete(h, commit=False).value is None
    assert fetched(h, {"t": [0]}) == {("t", 0): 5}
    assert h.mgr.pending_transactional_offsets(1) == {}
    assert h.log.batches[-1] == [TxnOffsetTombstone(1, "g", "t", 0)]  # nothing committed


def test_a_marker_without_pending_offsets_writes_nothing(h: Harness) -> None:
    before = len(h.log.batches)
    assert complete(h, pid=42).value is None
    assert len(h.log.batches) == before


def test_a_second_commit_in_the_same_transaction_replaces_the_first(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    txn_commit(h, {("t", 0): 11})
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): 11}


def test_require_stable_answers_unstable_for_pending_partitions_only(h: Harness) -> None:
    h.commit({("t", 0): 5, ("t", 1): 6})
    txn_commit(h, {("t", 0): 10, ("t", 2): 30})
    assert fetched(h, {"t": [0, 1, 2]}, stable=True) == {("t", 0): UNSTABLE, ("t", 1): 6, ("t", 2): UNSTABLE}
    # all partitions: the committed ones only, a pending one among them unstable (fetchAllOffsets)
    assert fetched(h, None, stable=True) == {("t", 0): UNSTABLE, ("t", 1): 6}
    complete(h)
    assert fetched(h, {"t": [0, 1, 2]}, stable=True) == {("t", 0): 10, ("t", 1): 6, ("t", 2): 30}


def test_offset_fetch_v7_answers_unstable_with_no_offset(h: Harness) -> None:
    h.commit({("t", 0): 5})
    txn_commit(h, {("t", 0): 10})
    reply = h.fetch({"t": [0]}, version=7, require_stable=True)
    (partition,) = reply["topics"][0]["partitions"]
    assert partition["error_code"] == UNSTABLE
    assert partition["committed_offset"] == partition["committed_leader_epoch"] == -1
    assert partition["metadata"] == ""
    assert reply["error_code"] == 0


def test_require_stable_waits_for_a_txn_offset_commit_in_flight(h: Harness) -> None:
    h.log.hold = True
    txn_commit(h, {("t", 0): 10})
    reply = h.fetch({"t": [0]}, version=8, require_stable=True)
    assert not reply.done
    h.log.release()
    assert reply.done and reply["groups"][0]["topics"][0]["partitions"][0]["error_code"] == UNSTABLE


# -- the later write wins on COMMIT ----------------------------------------------------------------
def test_a_plain_commit_written_after_the_pending_offset_wins(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    h.commit({("t", 0): 7})
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): 7}
    assert fetched(replayed(h), {"t": [0]}) == {("t", 0): 7}


def test_a_pending_offset_written_after_a_plain_commit_wins(h: Harness) -> None:
    h.commit({("t", 0): 7})
    txn_commit(h, {("t", 0): 10})
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): 10}


@pytest.mark.parametrize("restart", [False, True])
def test_between_two_producers_the_one_written_later_wins_whichever_commits_first(
    h: Harness, restart: bool
) -> None:
    """Kafka keeps a committed transactional offset's own log position, so a pending offset written
    before another producer's marker but after its pending offset still wins later."""
    txn_commit(h, {("t", 0): 10}, pid=1)
    txn_commit(h, {("t", 0): 20}, pid=2)  # written after pid 1's
    complete(h, pid=1)
    assert fetched(h, {"t": [0]}) == {("t", 0): 10}
    target = replayed(h) if restart else h
    complete(target, pid=2)
    assert fetched(target, {"t": [0]}) == {("t", 0): 20}


@pytest.mark.parametrize("restart", [False, True])
def test_between_two_producers_an_earlier_pending_offset_loses(h: Harness, restart: bool) -> None:
    txn_commit(h, {("t", 0): 10}, pid=1)
    txn_commit(h, {("t", 0): 20}, pid=2)
    complete(h, pid=2)
    target = replayed(h) if restart else h
    complete(target, pid=1)  # pid 1's offset was written before pid 2's: it loses
    assert fetched(target, {"t": [0]}) == {("t", 0): 20}


def test_the_log_compacted_by_key_replays_to_the_same_offsets(h: Harness) -> None:
    h.commit({("t", 0): 1})
    txn_commit(h, {("t", 0): 10, ("t", 1): 11}, pid=1)
    txn_commit(h, {("t", 0): 20}, pid=2)
    h.commit({("t", 1): 2})
    complete(h, pid=1)
    txn_commit(h, {("t", 2): 30}, pid=1)
    complete(h, pid=1, commit=False)
    kept: dict[Any, int] = {}
    for i, record in enumerate(h.log.records):  # keep the last record of each (type, key)
        stored = to_storage(record)
        kept[stored.type, stored.key] = i
    compacted = [h.log.records[i] for i in sorted(kept.values())]
    fresh = replayed(h, compacted)
    assert (
        fetched(fresh, {"t": [0, 1, 2]})
        == fetched(h, {"t": [0, 1, 2]})
        == {("t", 0): 10, ("t", 1): 2, ("t", 2): -1}
    )
    complete(fresh, pid=2)
    complete(h, pid=2)
    assert fetched(fresh, {"t": [0]}) == fetched(h, {"t": [0]}) == {("t", 0): 20}


def test_pending_offsets_survive_a_restart_and_the_marker_applies_after_it(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    fresh = replayed(h)
    assert fresh.mgr.group("g") is not None  # a simple group, as Kafka's replay makes one
    assert fetched(fresh, {"t": [0]}, stable=True) == {("t", 0): UNSTABLE}
    complete(fresh)
    assert fetched(fresh, {"t": [0]}) == {("t", 0): 10}


# -- KIP-447 validation -----------------------------------------------------------------------------
def test_a_missing_group_with_generation_is_illegal_generation(h: Harness) -> None:
    answer = txn_commit(h, {("t", 0): 1}, generation=1, member_id="m")
    assert answer.errors() == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert h.mgr.group("g") is None


def test_a_missing_group_without_generation_becomes_a_simple_group(h: Harness) -> None:
    assert txn_commit(h, {("t", 0): 1}).errors() == {("t", 0): NONE}
    group = h.mgr.group("g")
    assert group is not None and group.state is GroupState.EMPTY and group.protocol_type is None


def test_classic_group_member_checks(h0: Harness) -> None:
    h = h0
    leader, _ = h.stable_group(2)
    generation = h.generation()

    def error(**kw: Any) -> ErrorCode:
        return txn_commit(h, {("t", 0): 1}, **kw).errors()[("t", 0)]

    assert error(generation=generation, member_id=leader) is NONE
    assert error(generation=generation + 1, member_id=leader) is ErrorCode.ILLEGAL_GENERATION
    assert error(generation=generation, member_id="nobody") is ErrorCode.UNKNOWN_MEMBER_ID
    assert error(generation=-1, member_id="nobody") is ErrorCode.UNKNOWN_MEMBER_ID
    assert error(generation=generation, member_id=leader, iid="unknown") is ErrorCode.UNKNOWN_MEMBER_ID
    # an old client (v0-2) carries no group metadata: accepted by a non-empty group
    assert error() is NONE


def test_classic_group_static_member_is_fenced_by_instance_id(h0: Harness) -> None:
    h = h0
    joined = h.join(iid="i1")
    h.advance(0)
    member = joined["member_id"]
    assert h.sync(member, joined["generation_id"], {member: b"a"}, iid="i1").error == 0
    assert txn_commit(h, {("t", 0): 1}, generation=h.generation(), member_id="other", iid="i1").errors() == {
        ("t", 0): ErrorCode.FENCED_INSTANCE_ID
    }
    assert txn_commit(h, {("t", 0): 1}, generation=h.generation(), member_id=member, iid="i1").errors() == {
        ("t", 0): NONE
    }


def test_classic_group_accepts_a_txn_commit_while_completing_a_rebalance_and_keeps_no_session(
    h0: Harness,
) -> None:
    h = h0
    leader, _ = h.stable_group(2, session=10_000)
    h.join(group="g", member_id=leader, version=5, session=10_000)  # -> PreparingRebalance
    h.join(group="g", member_id=_, version=5, session=10_000)  # -> CompletingRebalance
    assert h.state() is GroupState.COMPLETING_REBALANCE
    answer = txn_commit(h, {("t", 0): 1}, generation=h.generation(), member_id=leader)
    assert answer.errors() == {("t", 0): NONE}  # OffsetCommit would be REBALANCE_IN_PROGRESS


def test_consumer_group_member_epoch_checks() -> None:
    c = Cluster()
    first = c.hb("m1", 0)
    epoch = first.member_epoch
    h: Any = c  # the helpers need .mgr only

    def error(**kw: Any) -> ErrorCode:
        return txn_commit(h, {("t1", 0): 1}, **kw).errors()[("t1", 0)]

    assert error(generation=epoch, member_id="m1") is NONE
    assert (
        error(generation=epoch + 1, member_id="m1") is ErrorCode.ILLEGAL_GENERATION
    )  # not STALE_MEMBER_EPOCH
    assert error(generation=epoch, member_id="m2") is ErrorCode.UNKNOWN_MEMBER_ID
    # no member information to a consumer group with members: UNKNOWN_MEMBER_ID (getOrMaybeCreateMember)
    assert error() is ErrorCode.UNKNOWN_MEMBER_ID
    c.hb("m1", -1)  # leaves: the group has no members
    assert c.group() is not None and not c.group().members
    assert error() is NONE


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("empty_id", ErrorCode.INVALID_GROUP_ID),
        ("loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        ("shut_down", ErrorCode.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_service_and_runtime_checks(setup: str, expected: ErrorCode) -> None:
    h = Harness(loaded=setup != "loading")
    if setup == "shut_down":
        h.mgr.shutdown()
    answer = txn_commit(h, {("t", 0): 1}, group="" if setup == "empty_id" else "g")
    assert answer.errors() == {("t", 0): expected}
    assert h.log.records == []


def test_too_large_metadata_fails_its_partition_only() -> None:
    h = Harness(offset_metadata_max_bytes=4)
    answer = txn_commit(h, {("t", 0): 1}, metadata="12345")
    assert answer.errors() == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert h.log.records == []
    answer = txn_commit(h, {("t", 0): 1, ("t", 1): 2}, metadata=None)  # null metadata is ""
    assert answer.errors() == {("t", 0): NONE, ("t", 1): NONE}


def test_an_older_producer_epoch_is_refused_by_commit_and_marker(h: Harness) -> None:
    txn_commit(h, {("t", 0): 1}, epoch=3)
    assert txn_commit(h, {("t", 0): 2}, epoch=2).errors() == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    rejected = complete(h, epoch=2).value
    assert isinstance(rejected, MarkerRejected) and rejected.error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert complete(h, epoch=4, commit=False).value is None  # an abort with a bumped epoch
    assert h.mgr.pending_transactional_offsets(1) == {}


# -- interplay with OffsetDelete, DeleteGroups, expiry, deleted topics ------------------------------
def test_offset_delete_tombstones_a_pending_only_partition(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10, ("t", 1): 11})
    reply = h.offset_delete({"t": [0]})
    assert reply.error == 0
    assert not h.mgr.has_pending_transactional_offsets("g", "t", 0)
    assert h.mgr.has_pending_transactional_offsets("g", "t", 1)
    complete(h)
    assert fetched(h, {"t": [0, 1]}) == {("t", 0): -1, ("t", 1): 11}
    assert fetched(replayed(h), {"t": [0, 1]}) == {("t", 0): -1, ("t", 1): 11}


def test_delete_groups_deletes_pending_offsets_too(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    assert h.delete_groups("g")["results"] == [{"group_id": "g", "error_code": 0}]
    assert not h.mgr.has_pending_transactional_offsets("g", "t", 0)
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): -1}


def test_expiry_keeps_an_offset_with_a_pending_one_and_a_group_with_an_open_transaction() -> None:
    h = Harness(offsets_retention_ms=1000, offsets_retention_check_interval_ms=100_000)
    h.commit({("t", 0): 1, ("t", 1): 2})
    txn_commit(h, {("t", 0): 10})
    h.advance(2000)
    h.mgr.expire_offsets()
    assert h.mgr.committed_offsets("g") == {("t", 0): h.mgr.committed_offsets("g")[("t", 0)]}
    assert h.mgr.group("g") is not None
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): 10}


def test_expiry_keeps_a_simple_group_with_only_pending_offsets() -> None:
    h = Harness(offsets_retention_ms=1000, offsets_retention_check_interval_ms=100_000)
    txn_commit(h, {("t", 0): 10})
    h.advance(2000)
    h.mgr.expire_offsets()
    assert h.mgr.group("g") is not None
    complete(h)
    assert fetched(h, {"t": [0]}) == {("t", 0): 10}


def test_deleting_a_topic_deletes_its_pending_offsets(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10, ("u", 0): 5})
    h.mgr.delete_topics(["t"])
    complete(h)
    assert fetched(h, {"t": [0], "u": [0]}) == {("t", 0): -1, ("u", 0): 5}


# -- writes in flight and failed writes --------------------------------------------------------------
def test_the_marker_waits_for_the_writes_in_flight_of_its_groups(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    h.log.hold = True
    h.commit({("t", 0): 7})  # in flight: written after the pending offset, so it wins
    done = complete(h)
    assert not done.done and h.log.held == 1
    h.log.release_first()  # the commit is durable; the marker's batch now goes out
    assert h.log.held == 1 and not done.done
    h.log.release()
    assert done.value is None
    assert fetched(h, {"t": [0]}) == {("t", 0): 7}


def test_a_failed_txn_offset_commit_leaves_nothing(h: Harness) -> None:
    h.log.fail_with = OSError("disk full")
    answer = txn_commit(h, {("t", 0): 10})
    h.log.fail_with = None
    assert answer.errors() == {("t", 0): APPEND_FAILED}
    assert h.mgr.group("g") is None  # the simple group it made is forgotten
    assert not h.mgr.has_pending_transactional_offsets("g")


def test_a_failed_marker_changes_nothing_and_its_retry_completes(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10})
    h.log.fail_with = OSError("disk full")
    failed = complete(h)
    h.log.fail_with = None
    assert isinstance(failed.value, OSError)
    assert h.mgr.has_pending_transactional_offsets("g", "t", 0)
    assert complete(h).value is None
    assert fetched(h, {"t": [0]}) == {("t", 0): 10}


def test_the_marker_batch_commits_then_tombstones(h: Harness) -> None:
    txn_commit(h, {("t", 0): 10}, pid=7)
    complete(h, pid=7)
    batch = h.log.batches[-1]
    assert [type(r) for r in batch] == [OffsetCommitRecord, TxnOffsetTombstone]
    assert batch[1] == TxnOffsetTombstone(7, "g", "t", 0)


# -- against a model of Kafka's rule, with log positions ----------------------------------------------
class KafkaModel:
    """OffsetMetadataManager's replay with record offsets: the reference for the later-write rule."""

    def __init__(self) -> None:
        self.position = 0
        self.committed: dict[tuple[str, int], tuple[int, int]] = {}  # key -> (offset, record position)
        self.pending: dict[int, dict[tuple[str, int], tuple[int, int]]] = {}

    def fetched(self) -> dict[tuple[str, int], int]:
        return {key: self.committed[key][0] if key in self.committed else -1 for key in [("t", 0), ("t", 1)]}

    def pending_of(self, pid: int) -> dict[tuple[str, int], int]:
        return {key: offset for key, (offset, _) in self.pending.get(pid, {}).items()}

    def run(self, step: tuple[Any, ...]) -> None:
        self.position += 1
        match step:
            case ("commit", key, offset):
                self.committed[key] = (offset, self.position)
            case ("txn", pid, key, offset):
                self.pending.setdefault(pid, {})[key] = (offset, self.position)
            case ("delete", key):
                self.committed.pop(key, None)
                for offsets in self.pending.values():
                    offsets.pop(key, None)
            case ("marker", pid, commit):
                for key, (offset, position) in self.pending.pop(pid, {}).items():
                    current = self.committed.get(key)
                    if commit and (current is None or position > current[1]):
                        self.committed[key] = (offset, position)


KEYS = st.sampled_from([("t", 0), ("t", 1)])
MODEL_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), KEYS, st.integers(0, 99)),
        st.tuples(st.just("txn"), st.sampled_from([1, 2, 3]), KEYS, st.integers(100, 199)),
        st.tuples(st.just("delete"), KEYS),
        st.tuples(st.just("marker"), st.sampled_from([1, 2, 3]), st.booleans()),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODEL_STEPS)
def test_committed_offsets_follow_kafkas_later_record_rule_live_and_after_compaction(
    steps: list[tuple[Any, ...]],
) -> None:
    h, model = Harness(), KafkaModel()
    for step in steps:
        model.run(step)
        match step:
            case ("commit", key, offset):
                h.commit({key: offset})
            case ("txn", pid, key, offset):
                txn_commit(h, {key: offset}, pid=pid)
            case ("delete", (topic, partition)):
                h.offset_delete({topic: [partition]})
            case ("marker", pid, commit):
                assert complete(h, pid=pid, commit=commit).value is None
    kept: dict[Any, int] = {}
    for i, record in enumerate(h.log.records):
        stored = to_storage(record)
        kept[stored.type, stored.key] = i
    compacted = replayed(h, [h.log.records[i] for i in sorted(kept.values())])
    for target in (h, replayed(h), compacted):
        assert fetched(target, {"t": [0, 1]}) == model.fetched()
        for pid in (1, 2, 3):
            pending = target.mgr.pending_transactional_offsets(pid)
            assert {(t, p): r.offset for (_, t, p), r in pending.items()} == model.pending_of(pid)
    # and the markers still to come decide alike: commit every open transaction, in a fixed order
    for target in (h, compacted):
        for pid in (3, 1, 2):
            complete(target, pid=pid)
    for pid in (3, 1, 2):
        model.run(("marker", pid, True))
    assert fetched(h, {"t": [0, 1]}) == fetched(compacted, {"t": [0, 1]}) == model.fetched()
