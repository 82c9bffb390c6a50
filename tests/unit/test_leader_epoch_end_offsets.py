"""`end_offset_for` is LeaderEpochFileCache.endOffsetFor (storage/.../epoch/LeaderEpochFileCache.java):
every branch, over histories with several epochs as a Kafka leader keeps them."""

from __future__ import annotations

import pytest

from kcoord.broker.apis.offset_for_leader_epoch import end_offset_for

HISTORY = [(0, 0), (2, 10), (5, 25)]  # epoch 0 from offset 0, epoch 2 from 10, epoch 5 (current) from 25
LOG_END = 40


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (-1, (-1, -1)),  # UNDEFINED_EPOCH: no answer
        (5, (5, LOG_END)),  # the current epoch ends at the log end offset
        (0, (0, 10)),  # an older epoch ends where the next one starts
        (1, (0, 10)),  # an epoch never seen: the epoch before it, ended by the next one
        (2, (2, 25)),
        (4, (2, 25)),
        (6, (-1, -1)),  # later than any epoch: no answer
    ],
)
def test_end_offset_of_each_requested_epoch(requested: int, expected: tuple[int, int]) -> None:
    assert end_offset_for(HISTORY, requested, LOG_END) == expected


def test_an_epoch_older_than_the_history_ends_where_the_first_known_one_starts() -> None:
    """After the log start moved past epoch 0 (truncateFromStart), epoch 0 is unknown: the answer is
    the requested epoch with the start of the first epoch after it."""
    assert end_offset_for([(3, 50), (4, 70)], 1, 90) == (1, 50)


def test_no_history_has_no_answer() -> None:
    assert end_offset_for([], 0, 10) == (-1, -1)


def test_kcoords_history_of_one_epoch() -> None:
    assert end_offset_for([(0, 7)], 0, 12) == (0, 12)
    assert end_offset_for([(0, 7)], 3, 12) == (-1, -1)
