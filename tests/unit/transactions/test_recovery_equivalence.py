"""Recovery equivalence for the transaction coordinator: the live state equals the state replayed
from its log, whatever mix of requests, timeouts, expirations, failed and held log writes and failed
or held marker writes came before (the group version is tests/unit/test_recovery_equivalence.py).

Each run ends quiescent (held writes released, failures cleared, retries given time), because only
durable state is replayed. Two normalisations, both Kafka's own: an id whose first write failed
lives in memory only (TransactionCoordinator keeps the metadata it created, with epoch -1, for the
retry), and a fence whose write failed leaves its bump in memory only (hasFailedEpochFence). The
last producer epoch is memory-only in Kafka too (TransactionLogValue has no field for it).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.coordinator.transactions import TransactionRecord, TransactionState
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from tests.unit.transactions.harness import Txn

IDS = ("a", "b")
PARTS = (("t", 0), ("t", 1), ("u", 0))
S = TransactionState

init = st.tuples(st.just("init"), st.sampled_from(IDS), st.sampled_from([3, 4]), st.booleans())
parts = st.lists(st.sampled_from(PARTS), min_size=1, max_size=2)
add = st.tuples(st.just("add"), st.sampled_from(IDS), parts, st.booleans())
implicit = st.tuples(st.just("implicit"), st.sampled_from(IDS), st.sampled_from(PARTS))
offsets = st.tuples(st.just("offsets"), st.sampled_from(IDS), st.sampled_from(["g1", "g2"]))
end = st.tuples(st.just("end"), st.sampled_from(IDS), st.booleans(), st.sampled_from([3, 5]), st.booleans())
control = st.tuples(st.sampled_from(["abort", "expire"]), st.sampled_from(IDS))
request = st.one_of(init, add, implicit, offsets, end, control)
pause = st.tuples(st.just("pause"), st.sampled_from([100, 10_000, 70_000, 8 * 24 * 3_600_000]))
failing = st.tuples(st.just("failing"), request)
held = st.tuples(st.just("held"), st.lists(request, min_size=1, max_size=3), st.booleans())
markers_failing = st.tuples(st.just("markers_failing"), request)
markers_held = st.tuples(st.just("markers_held"), st.lists(request, min_size=1, max_size=3))
steps = st.lists(st.one_of(request, pause, failing, held, markers_failing, markers_held), max_size=30)


class Live:
    def __init__(self) -> None:
        self.t = Txn(remove_expired_transaction_cleanup_interval_ms=3_600_000)

    def _current(self, tid: str, stale: bool = False) -> tuple[int, int]:
        md = self.t.tc.metadata(tid)
        if md is None:
            return 999, 0
        return md.producer_id, md.producer_epoch - (1 if stale else 0)

    def request(self, step: tuple[Any, ...]) -> None:
        t, kind, tid = self.t, step[0], step[1]
        if kind == "init":
            pid, epoch = self._current(tid) if step[3] and t.tc.metadata(tid) else (-1, -1)
            t.init(tid, pid=pid, epoch=epoch, version=step[2])
        elif kind == "add":
            t.add(*self._current(tid, step[3]), *step[2], tid=tid)
        elif kind == "implicit":
            t.add_implicit(*self._current(tid), step[2], tid=tid)
        elif kind == "offsets":
            t.add_offsets(*self._current(tid), step[2], tid=tid)
        elif kind == "end":
            t.end(*self._current(tid, step[4]), step[2], tid=tid, version=step[3])
        elif kind == "abort":
            t.abort(tid)
        elif kind == "expire":
            t.expire(tid)

    def run(self, step: tuple[Any, ...]) -> None:
        t, kind = self.t, step[0]
        if kind == "pause":
            t.timers.advance(step[1])
        elif kind == "failing":
            t.log.fail_with = OSError("disk full")
            self.request(step[1])
            t.log.fail_with = None
        elif kind == "held":
            t.log.hold = True
            for inner in step[1]:
                self.request(inner)
            t.log.release(OSError("disk full") if step[2] else None)
        elif kind == "markers_failing":
            t.markers.fail_with = OSError("partition offline")
            self.request(step[1])
            t.markers.fail_with = None
        elif kind == "markers_held":
            t.markers.hold = True
            for inner in step[1]:
                self.request(inner)
            t.markers.release()
        else:
            self.request(step)

    def quiesce(self) -> None:
        t = self.t
        t.log.fail_with, t.markers.fail_with = None, None
        t.log.release()
        t.markers.release()
        for _ in range(3):  # marker and Complete retries (100 ms backoff)
            t.timers.advance(100)


def _projection(md: TransactionMetadata, durable_epoch: int | None) -> tuple[Any, ...] | None:
    if md.state is S.EMPTY and md.producer_epoch == -1:
        return None  # created in memory by an InitProducerId whose write failed
    epoch = md.producer_epoch
    if md.has_failed_epoch_fence and durable_epoch == epoch - 1:
        epoch = durable_epoch  # the failed fence's bump, in memory only (until a record carries it)
    return (md.producer_id, md.previous_producer_id, md.next_producer_id, epoch, md.timeout_ms, md.state,
            frozenset(md.partitions), md.start_ms, md.last_update_ms,
            md.client_transaction_version)  # fmt: skip


def _state(t: Txn) -> dict[str, tuple[Any, ...]]:
    durable = {r.transactional_id: r.value.producer_epoch for r in t.log.records if r.value is not None}
    out = {}
    for md in t.tc.transactions():
        projected = _projection(md, durable.get(md.transactional_id))
        if projected is not None:
            out[md.transactional_id] = projected
    return out


def _replayed(live: Txn) -> Txn:
    records = []
    for record in live.log.records:
        domain = from_storage(to_storage(record))  # through the bytes recovery reads
        assert isinstance(domain, TransactionRecord)
        records.append(domain)
    return Txn(records, loaded=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
# a fence whose PrepareAbort write fails, then a successful one (no double bump)
@example([("init", "a", 4, False), ("add", "a", [("t", 0)], False), ("failing", ("init", "a", 4, False)),
          ("init", "a", 4, False)])  # fmt: skip
# EndTxn held, the markers failing, a timeout pass meanwhile
@example([("init", "a", 4, False), ("implicit", "a", ("t", 0)),
          ("markers_failing", ("end", "a", True, 5, False)), ("pause", 70_000)])  # fmt: skip
def test_live_state_equals_the_state_replayed_from_the_log(sequence: list[tuple[Any, ...]]) -> None:
    live = Live()
    for step in sequence:
        live.run(step)
    live.quiesce()
    assert all(md.pending is None for md in live.t.tc.transactions())
    fresh = _replayed(live.t)
    assert _state(fresh) == _state(live.t)
