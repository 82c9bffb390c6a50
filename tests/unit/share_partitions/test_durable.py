"""The durable state: PersisterStateBatchCombiner's combine, replay of snapshots and updates, and which
record a write makes (ShareCoordinatorShard.generateShareStateRecord)."""

from __future__ import annotations

from kcoord.coordinator.share_partitions import (
    RecordState,
    ShareSnapshot,
    ShareTombstone,
    ShareUpdate,
    StateBatch,
)
from kcoord.coordinator.share_partitions.durable import advance, build_record, combine_batches
from tests.unit.share_partitions.conftest import GROUP, TOPIC

A, ACK, ARC = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
KEY = (GROUP, TOPIC, 0)


def b(first: int, last: int, state: RecordState = ACK, count: int = 1) -> StateBatch:
    return StateBatch(first, last, state, count)


def test_combine_lays_later_batches_over_earlier_ones() -> None:
    assert combine_batches([b(0, 9, A, 1)], [b(3, 5, ACK, 1)], 0) == (b(0, 2, A, 1), b(3, 5), b(6, 9, A, 1))


def test_combine_drops_and_trims_below_the_start_offset() -> None:
    assert combine_batches([b(0, 4), b(5, 9, ARC, 2)], [], 7) == (b(7, 9, ARC, 2),)


def test_combine_merges_neighbours_with_the_same_state_and_count() -> None:
    assert combine_batches([b(0, 4)], [b(5, 9), b(10, 12, ACK, 2)], 0) == (b(0, 9), b(10, 12, ACK, 2))


def test_combine_keeps_the_later_of_two_overlapping_new_batches() -> None:
    assert combine_batches([], [b(0, 5, A, 1), b(2, 3, ARC, 1)], 0) == (
        b(0, 1, A, 1),
        b(2, 3, ARC, 1),
        b(4, 5, A, 1),
    )


def test_first_write_is_a_snapshot_then_updates_then_a_snapshot_again() -> None:
    state = None
    kinds = []
    for i in range(5):
        record = build_record(state, KEY, state_epoch=0, start_offset=i, new_batches=[b(i, i)], now_ms=1,
                              snapshot_every=2)  # fmt: skip
        kinds.append(type(record).__name__)
        state = advance(state, record)
    assert kinds == ["ShareSnapshot", "ShareUpdate", "ShareUpdate", "ShareSnapshot", "ShareUpdate"]
    assert state is not None and state.snapshot_epoch == 1 and state.start_offset == 4


def test_an_update_carries_every_batch_changed_since_its_snapshot() -> None:
    state = advance(None, ShareSnapshot(*KEY, 0, 0, 0, 0, (b(0, 9, A, 1),)))
    first = build_record(
        state, KEY, state_epoch=0, start_offset=0, new_batches=[b(2, 2)], now_ms=1, snapshot_every=9
    )
    state = advance(state, first)
    second = build_record(state, KEY, state_epoch=0, start_offset=0, new_batches=[b(5, 5, ARC)], now_ms=1,
                          snapshot_every=9)  # fmt: skip
    assert isinstance(second, ShareUpdate)
    assert second.state_batches == (b(2, 2), b(5, 5, ARC))
    # so only the newest update needs to survive compaction: the snapshot plus it is the state
    only_last = advance(advance(None, ShareSnapshot(*KEY, 0, 0, 0, 0, (b(0, 9, A, 1),))), second)
    every = advance(state, second)
    assert only_last is not None and every is not None
    assert (only_last.start_offset, only_last.batches) == (every.start_offset, every.batches)
    assert only_last.batches == (b(0, 1, A, 1), b(2, 2), b(3, 4, A, 1), b(5, 5, ARC), b(6, 9, A, 1))


def test_a_new_state_epoch_starts_from_a_fresh_snapshot() -> None:
    state = advance(None, ShareSnapshot(*KEY, 3, 0, 0, 0, (b(0, 9, ARC, 1),)))
    record = build_record(
        state, KEY, state_epoch=1, start_offset=50, new_batches=(), now_ms=1, snapshot_every=9
    )
    assert isinstance(record, ShareSnapshot)
    assert (record.snapshot_epoch, record.state_epoch, record.start_offset, record.state_batches) == (
        4,
        1,
        50,
        (),
    )


def test_an_update_of_an_older_snapshot_changes_nothing() -> None:
    state = advance(None, ShareSnapshot(*KEY, 2, 0, 0, 5, ()))
    assert advance(state, ShareUpdate(*KEY, 1, 0, 9, (b(9, 9),))) == state


def test_either_tombstone_forgets_the_share_partition() -> None:
    state = advance(None, ShareSnapshot(*KEY, 0, 0, 0, 5, ()))
    assert advance(state, ShareTombstone(*KEY)) is None
    assert advance(state, ShareTombstone(*KEY, update=True)) is None
