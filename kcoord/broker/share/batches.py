"""The record batches one ShareFetch read: their offset ranges for the tenant, what read_committed skips,
and the slice of bytes sent back.

Kafka sends whole batches and the client keeps the acquired offsets (ShareFetchUtils.processFetchResponse,
maybeSliceFetchRecords: the batches from the one holding the first acquired offset to the one holding
the last). Under read_committed the log is read up to the last stable offset, and the records of aborted
transactions and the control batches are never delivered: SharePartition.filterAbortedTransactionalRecords
archives them, from the aborted transactions the log read returns (as the consumer's CompletedFetch does
for Fetch: a producer's batches are aborted from its aborted transaction's first offset until its marker).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence

from kcoord.coordinator.share_partitions import AcquiredRange
from kcoord.protocol.record_batch import BATCH_HEADER, BatchHeader, read_header

__all__ = ["ReadBatches", "parse_batches"]


class ReadBatches:
    """The whole batches of one read, in offset order."""

    __slots__ = ("_headers", "_positions", "records")

    def __init__(self, records: bytes, headers: list[BatchHeader], positions: list[int]) -> None:
        self.records = records
        self._headers = headers
        self._positions = positions  # byte offset of each batch, then the end

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """(base offset, last offset) of each batch: what `SharePartitions.acquire` takes."""
        return [(header.base_offset, header.last_offset) for header in self._headers]

    def skip(self, aborted: Sequence[tuple[int, int]]) -> Callable[[int], bool]:
        """read_committed: is this offset in a control batch or a batch of an aborted transaction."""
        starts: list[int] = []
        ends: list[int] = []
        for header in _skipped(self._headers, aborted):
            starts.append(header.base_offset)
            ends.append(header.last_offset)

        def skipped(offset: int) -> bool:
            at = bisect.bisect_right(starts, offset) - 1
            return at >= 0 and offset <= ends[at]

        return skipped

    def slice(self, acquired: Sequence[AcquiredRange]) -> bytes:
        """The bytes of the batches holding acquired offsets, from the first such batch to the last."""
        if not acquired:
            return b""
        first, last = acquired[0].first_offset, acquired[-1].last_offset
        keep = [i for i, h in enumerate(self._headers) if h.last_offset >= first and h.base_offset <= last]
        if not keep:
            return b""
        return self.records[self._positions[keep[0]] : self._positions[keep[-1] + 1]]


def _skipped(headers: Sequence[BatchHeader], aborted: Sequence[tuple[int, int]]) -> list[BatchHeader]:
    """The batches read_committed never delivers (CompletedFetch.nextFetchedRecord's rule)."""
    pending = sorted(aborted, key=lambda producer_first: producer_first[1])
    next_aborted, ongoing, skipped = 0, set[int](), []
    for header in headers:
        while next_aborted < len(pending) and pending[next_aborted][1] <= header.last_offset:
            ongoing.add(pending[next_aborted][0])
            next_aborted += 1
        if header.is_control:
            skipped.append(header)
            ongoing.discard(header.producer_id)  # its transaction ends at its marker
        elif header.is_transactional and header.producer_id in ongoing:
            skipped.append(header)
    return skipped


def parse_batches(records: bytes) -> ReadBatches:
    """The batches of a log read (a truncated last batch, which a log read never returns, is left out)."""
    headers: list[BatchHeader] = []
    positions = [0]
    pos = 0
    while pos + BATCH_HEADER.size <= len(records):
        try:
            header = read_header(records, pos)
        except struct.error:
            break
        if header.size <= 0 or pos + header.size > len(records):
            break
        headers.append(header)
        pos += header.size
        positions.append(pos)
    return ReadBatches(records, headers, positions)
