"""Replay of the written records equals the live state.

Hypothesis drives a share partition (fetches with aborted offsets skipped, acknowledgements, members
leaving, lock expiry); then a fresh tenant replays what was written, once whole and once compacted as
the storage log compacts (the newest record per storage key), through the storage codec. Its share
partition, loaded from that state, must be the live one as a restart sees it: an ACQUIRED record
comes back AVAILABLE with the delivery that was never settled not counted (Kafka persists acquired
records only when they are acknowledged, released or their lock expires).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kcoord.coordinator.persistence.codec import from_storage, to_storage
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.share_partitions import RecordState, SharePartitions
from tests.unit.fakes import MemoryRecordLog
from tests.unit.share_partitions.conftest import (
    GROUP,
    LOCK_MS,
    SETTINGS,
    TOPIC,
    Share,
    bounds,
    log_batches,
    make_share,
)

AV, ACQ = RecordState.AVAILABLE, RecordState.ACQUIRED
END = 40
ABORTED = frozenset({4, 5, 17})

fetches = st.tuples(st.just("fetch"), st.sampled_from(["m1", "m2"]), st.integers(1, 7), st.booleans())
MEMBER = st.sampled_from(["m1", "m2"])
TYPE = st.sampled_from([0, 1, 2, 3, 4])
acks = st.tuples(
    st.just("ack"), MEMBER, st.integers(0, END - 1), st.integers(0, 6), st.lists(TYPE, min_size=1, max_size=1)
)
per_offset_acks = st.tuples(
    st.just("ack"), MEMBER, st.integers(0, END - 1), st.just(-1), st.lists(TYPE, min_size=1, max_size=6)
)
leaves = st.tuples(st.just("leave"), st.sampled_from(["m1", "m2"]))
expiries = st.tuples(st.just("expire"))
operations = st.lists(st.one_of(fetches, fetches, acks, per_offset_acks, leaves, expiries), max_size=40)


def run(share: Share, ops: list[tuple[object, ...]]) -> None:
    for op in ops:
        match op:
            case ("fetch", member, max_records, strict):
                share.fetch(str(member), int(max_records), strict=bool(strict), skip=ABORTED.__contains__)
            case ("ack", member, first, length, types):
                assert isinstance(first, int) and isinstance(length, int) and isinstance(types, list)
                last = first + (len(types) - 1 if length < 0 else length)
                share.ack(str(member), (first, last, types))
            case ("leave", member):
                share.tenant.release_member(GROUP, str(member))
            case ("expire",):
                share.timers.advance(LOCK_MS)


def restarted_view(share: Share) -> dict[int, tuple[RecordState, int]]:
    """The live share partition as a restart sees it, from its start offset."""
    out = {}
    for offset, (state, count, _) in share.states().items():
        out[offset] = (AV, count - 1) if state is ACQ else (state, count)
    return out


def replayed(records: list[object]) -> SharePartitions:
    clock = FakeClock()
    tenant = SharePartitions(MemoryRecordLog(), clock, FakeTimers(clock))  # type: ignore[arg-type]
    for record in records:
        domain = from_storage(to_storage(record))  # type: ignore[arg-type]
        tenant.apply(domain)  # type: ignore[arg-type]
    tenant.on_loaded()
    return tenant


def compacted(records: list[object]) -> list[object]:
    """What the storage log keeps: the newest record of each (type, key), in log order."""
    newest = {}
    for lsn, record in enumerate(records):
        stored = to_storage(record)  # type: ignore[arg-type]
        newest[(stored.type, stored.key)] = (lsn, record)
    return [record for _, record in sorted(newest.values(), key=lambda pair: pair[0])]


def loaded_view(tenant: SharePartitions) -> tuple[int, dict[int, tuple[RecordState, int]]]:
    assert tenant.next_fetch_offset(GROUP, TOPIC, 0, SETTINGS, bounds()) is not None
    view = tenant.describe(GROUP, TOPIC, 0)
    assert view is not None
    states = {
        o: (r.state, r.delivery_count) for r in view.records for o in range(r.first_offset, r.last_offset + 1)
    }
    return view.start_offset, states


@hsettings(max_examples=200, deadline=None)
@given(operations, st.integers(1, 4))
def test_replay_of_the_written_records_is_the_live_state(ops: list[tuple[object, ...]], every: int) -> None:
    share = make_share(snapshot_every=every, batches=log_batches(END, size=3),
                       settings=replace(SETTINGS, delivery_count_limit=3))  # fmt: skip
    run(share, ops)
    if share.tenant.describe(GROUP, TOPIC, 0) is None:
        return
    live_start = share.start
    live = restarted_view(share)
    for records in (share.records(), compacted(share.records())):
        start, states = loaded_view(replayed(records))
        assert start == live_start
        for offset in range(start, max([start - 1, *live, *states]) + 1):
            assert states.get(offset, (AV, 0)) == live.get(offset, (AV, 0)), offset
