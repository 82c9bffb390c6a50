"""`EpochHistory` is LeaderEpochFileCache (storage/.../internals/epoch/LeaderEpochFileCache.java) in
memory: `assign` (with maybeTruncateNonMonotonicEntries), `truncateFromStart`, `epochForOffset`, and the
history a cluster leader rebuilds from its stored batches' partitionLeaderEpoch; plus
`check_current_leader_epoch` (Partition.checkCurrentLeaderEpoch) and the stamping of the epoch."""

from __future__ import annotations

import crc32c
import pytest

from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.epochs import (
    EpochHistory,
    check_current_leader_epoch,
    epoch_for_offset,
)
from kcoord.partition_log.stamp import stamp
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import read_header
from tests.server.test_dataplane_wire import batch


def test_rebuilt_from_batches_the_first_batch_of_each_epoch_starts_it() -> None:
    # (partitionLeaderEpoch, base offset) of five batches written by leaders at lease epochs 1, 1, 3, 3, 4
    history = EpochHistory.from_batches([(1, 0), (1, 3), (3, 5), (3, 9), (4, 12)])
    assert history.entries == [(1, 0), (3, 5), (4, 12)]
    assert history.latest_epoch == 4


def test_batches_without_an_epoch_are_skipped() -> None:
    assert EpochHistory.from_batches([(-1, 0), (0, 4)]).entries == [(0, 4)]


def test_a_new_leader_starts_its_epoch_at_the_log_end() -> None:
    history = EpochHistory.from_batches([(1, 0), (3, 5)])
    history.assign(5, 9)  # Partition.makeLeader: assignEpochStartOffset(leaderEpoch, logEndOffset)
    assert history.entries == [(1, 0), (3, 5), (5, 9)]
    assert history.end_offset_for(3, 14) == (3, 9)  # epoch 3 ended where epoch 5 began
    assert history.end_offset_for(5, 14) == (5, 14)  # the current epoch ends at the log end
    assert history.end_offset_for(4, 14) == (3, 9)  # never seen: the epoch before it
    assert history.end_offset_for(0, 14) == (0, 0)  # older than all: where the first one starts
    assert history.end_offset_for(6, 14) == (-1, -1)


def test_an_epoch_that_wrote_nothing_is_replaced_by_the_next_at_the_same_offset() -> None:
    history = EpochHistory([(1, 0), (2, 7)])
    history.assign(3, 7)  # epoch 2 never appended a batch: maybeTruncateNonMonotonicEntries drops it
    assert history.entries == [(1, 0), (3, 7)]
    assert history.end_offset_for(2, 9) == (1, 7)


def test_repeating_the_latest_epoch_changes_nothing() -> None:
    history = EpochHistory([(1, 0), (2, 7)])
    history.assign(2, 9)
    assert history.entries == [(1, 0), (2, 7)]


def test_a_lower_epoch_truncates_the_entries_it_contradicts() -> None:
    history = EpochHistory([(1, 0), (4, 7)])
    history.assign(3, 8)  # LeaderEpochFileCache: entries with epoch >= 3 go first
    assert history.entries == [(1, 0), (3, 8)]


def test_negative_entries_are_refused() -> None:
    with pytest.raises(ValueError):
        EpochHistory().assign(-1, 0)


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (0, [(1, 0), (3, 5), (4, 12)]),  # nothing before the start
        (3, [(1, 3), (3, 5), (4, 12)]),  # epoch 1's first entry now starts at the log start
        (5, [(3, 5), (4, 12)]),
        (10, [(3, 10), (4, 12)]),
        (20, [(4, 20)]),
    ],
)
def test_truncate_from_start(start: int, expected: list[tuple[int, int]]) -> None:
    history = EpochHistory([(1, 0), (3, 5), (4, 12)])
    history.truncate_from_start(start)
    assert history.entries == expected


@pytest.mark.parametrize(("offset", "epoch"), [(0, 1), (4, 1), (5, 3), (11, 3), (12, 4), (99, 4)])
def test_epoch_for_offset(offset: int, epoch: int) -> None:
    assert epoch_for_offset([(1, 0), (3, 5), (4, 12)], offset) == epoch


def test_epoch_for_an_offset_before_the_history_is_undefined() -> None:
    assert epoch_for_offset([(3, 5)], 4) == -1


@pytest.mark.parametrize(
    ("requested", "error"),
    [
        (-1, ErrorCode.NONE),  # no epoch stated: no check
        (4, ErrorCode.NONE),
        (3, ErrorCode.FENCED_LEADER_EPOCH),
        (0, ErrorCode.FENCED_LEADER_EPOCH),
        (5, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_check_current_leader_epoch(requested: int, error: ErrorCode) -> None:
    assert check_current_leader_epoch(requested, 4) is error


def test_stamping_sets_the_leader_epoch_and_keeps_the_crc_valid() -> None:
    data = batch(3)
    header = read_header(data)
    stamped = stamp(data, header, 40, PartitionConfig(), 0, leader_epoch=7)
    after = read_header(stamped.data)
    assert (after.base_offset, after.partition_leader_epoch) == (40, 7)
    # partitionLeaderEpoch and baseOffset are outside the CRC: it still covers attributes..end
    assert after.crc == header.crc == crc32c.crc32c(stamped.data[21:])
