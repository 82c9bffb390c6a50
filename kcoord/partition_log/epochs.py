"""A partition's leader epoch history: which leader epoch wrote which offsets (KIP-101, KIP-320).

Kafka keeps it in `LeaderEpochFileCache` (storage/.../internals/epoch/LeaderEpochFileCache.java): an
ordered map epoch -> start offset, one entry per epoch, appended when a leader starts an epoch
(`Partition.makeLeader` -> `assign(epoch, log end offset)`) and when a batch of a new epoch is appended.
A consumer that read a batch of epoch N asks OffsetForLeaderEpoch for N's end offset after a leader
change; an end offset below its position means the log was truncated under it.

kcoord's single node leads every partition for ever at epoch 0, so its history is `[(0, log start)]`.
In cluster mode the epoch is the partition's lease epoch (kcoord/cluster/partition_store.py): every
batch is stamped with it, and a new leader rebuilds the history from the stored batches'
partitionLeaderEpoch (`from_batches`) and then starts its own epoch at the log end, as Kafka's leader
rebuilds its cache from the log when it loads a partition it has no checkpoint for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kcoord.protocol.errors import ErrorCode

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochHistory",
    "check_current_leader_epoch",
    "end_offset_for",
    "epoch_for_offset",
]

UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET = -1, -1  # LeaderEpochFileCache's


class EpochHistory:
    """(epoch, start offset) entries, both increasing: LeaderEpochFileCache in memory."""

    __slots__ = ("entries",)

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    @classmethod
    def from_batches(cls, batches: Iterable[tuple[int, int]]) -> EpochHistory:
        """From (partitionLeaderEpoch, base offset) of a log's batches in offset order: the first batch
        of each epoch gives its start. Batches without an epoch (-1, an old format) are skipped."""
        return cls((epoch, base) for epoch, base in batches if epoch >= 0)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """LeaderEpochFileCache.assign: a new entry unless it repeats the latest epoch at a start not
        below it; entries it contradicts (an epoch not below it, or a start not below its start: an
        epoch that wrote nothing before this one) go first (`maybeTruncateNonMonotonicEntries`)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid partition leader epoch entry ({epoch}, {start_offset})")
        if self.entries:
            latest_epoch, latest_start = self.entries[-1]
            if epoch == latest_epoch and start_offset >= latest_start:
                return
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start_offset):
            self.entries.pop()
        self.entries.append((epoch, start_offset))

    def truncate_from_start(self, start_offset: int) -> None:
        """LeaderEpochFileCache.truncateFromStart: the log start moved; the last entry starting at or
        before it now starts there, the ones before it go."""
        removed = [entry for entry in self.entries if entry[1] <= start_offset]
        if removed:
            # entries are ordered by start offset, so the removed ones are a prefix
            self.entries[: len(removed)] = [(removed[-1][0], start_offset)]

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        return end_offset_for(self.entries, requested, log_end_offset)

    def epoch_for_offset(self, offset: int) -> int:
        return epoch_for_offset(self.entries, offset)


def check_current_leader_epoch(requested: int, leader_epoch: int) -> ErrorCode:
    """Partition.checkCurrentLeaderEpoch: a client's current_leader_epoch against the leader's; -1
    (NO_PARTITION_LEADER_EPOCH, or an old version) skips the check."""
    if requested == UNDEFINED_EPOCH:
        return ErrorCode.NONE
    if requested < leader_epoch:  # the client's leader was replaced: it refreshes its metadata
        return ErrorCode.FENCED_LEADER_EPOCH
    if requested > leader_epoch:  # this node has not seen that epoch yet: the client retries
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def end_offset_for(epochs: Sequence[tuple[int, int]], requested: int, log_end_offset: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for `requested`, given the history
    `epochs` ((epoch, start offset) pairs in increasing order, the last the leader's current one)."""
    if requested == UNDEFINED_EPOCH or not epochs:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if epochs[-1][0] == requested:
        # The current epoch is still being written to: its end is the log end offset
        return requested, log_end_offset
    higher = next((entry for entry in epochs if entry[0] > requested), None)
    if higher is None:  # larger than any known epoch
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    floor = next((entry for entry in reversed(epochs) if entry[0] <= requested), None)
    if floor is None:  # older than every known epoch: the start of the first one after it
        return requested, higher[1]
    return floor[0], higher[1]


def epoch_for_offset(epochs: Sequence[tuple[int, int]], offset: int) -> int:
    """LeaderEpochFileCache.epochForOffset: the epoch that wrote `offset` (the last entry starting at
    or before it), UNDEFINED_EPOCH if the history starts after it."""
    found = UNDEFINED_EPOCH
    for epoch, start in epochs:
        if start > offset:
            break
        found = epoch
    return found
