"""One segment file of a partition log: record batches verbatim, named by the offset of its first batch.

The active (last) segment keeps a dense index in memory, one entry per batch: it is where producers
append and tailing consumers read, and recovery rebuilds it by reading every batch header and
checking every CRC. When a segment is sealed (the log rolled and every batch in it is durable) its
sparse indexes are written next to it, the way Kafka writes `.index` and `.timeindex` files:

- `<base>.index`: 8-byte entries (INT32 offset relative to the segment's base, INT32 file position),
  one for the first batch and then one whenever `index.interval.bytes` were appended since the last;
- `<base>.timeindex`: 12-byte entries (INT64 timestamp, INT32 relative offset) added with the offset
  entries when the largest timestamp so far grew, and a last entry for the segment's largest
  timestamp (Kafka's `onBecomeInactiveSegment`);
- `<base>.txnindex`: the aborted transactions whose ABORT marker is in the segment (`txn_index.py`),
  empty when there is none (Kafka creates the file with its first entry; kcoord always writes it, so
  that a missing one is known to be missing).

A sealed segment with valid index files is opened from them without reading its batches (Kafka
trusts segments below its recovery point the same way); lookups go through the sparse entries and
then read batch headers forward from the entry's position. A sealed segment without valid index files
(the process died between the roll and the index write) is recovered by a full scan, refused loudly
if any batch is bad, and its index files are written again. `kcoord storage verify` checks every CRC.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kcoord.partition_log.txn_index import AbortedTxn, decode_entries, encode_entries
from kcoord.protocol.record_batch import BATCH_HEADER, BatchHeader, batch_crc, framing_problem, read_header
from kcoord.storage.faults import StorageFault
from kcoord.storage.files import FileOps

__all__ = ["BatchInfo", "CorruptSegment", "Segment", "segment_name"]

log = logging.getLogger("kcoord.partition_log")

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptSegment(Exception):
    """A sealed segment holds a bad batch: refused loudly, never truncated."""


class BatchInfo(NamedTuple):
    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass(slots=True)
class Segment:
    path: Path
    base_offset: int
    created_ms: int
    fd: int = -1
    size: int = 0
    # Dense index (active segment, or a sealed one whose index files are not written yet).
    dense: bool = True
    bases: list[int] = field(default_factory=list)  # base offset of each batch
    positions: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    last_offsets: list[int] = field(default_factory=list)
    # Sparse index (sealed segments): absolute offsets and positions; (timestamp, offset).
    index_offsets: list[int] = field(default_factory=list)
    index_positions: list[int] = field(default_factory=list)
    time_stamps: list[int] = field(default_factory=list)
    time_offsets: list[int] = field(default_factory=list)
    sealed_next_offset: int = 0
    sealed_max_timestamp: int = -1
    aborted: list[AbortedTxn] = field(default_factory=list)  # this segment's `.txnindex` entries

    @property
    def index_path(self) -> Path:
        return self.path.with_suffix(".index")

    @property
    def time_index_path(self) -> Path:
        return self.path.with_suffix(".timeindex")

    @property
    def txn_index_path(self) -> Path:
        return self.path.with_suffix(".txnindex")

    def open(self) -> bool:
        """Open for writing; True if that created the file (its directory entry needs an fsync)."""
        if self.fd >= 0:
            return False
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            return True
        except FileExistsError:
            self.fd = os.open(self.path, os.O_RDWR)
            return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        self.close()
        snapshot = self.path.with_name(f"{self.base_offset:020d}.producers")  # snapshots.py: state before it
        for path in (self.path, self.index_path, self.time_index_path, self.txn_index_path, snapshot):
            path.unlink(missing_ok=True)

    @property
    def empty(self) -> bool:
        return not self.bases if self.dense else not self.index_offsets

    @property
    def next_offset(self) -> int:
        if not self.dense:
            return self.sealed_next_offset
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    @property
    def max_timestamp(self) -> int:
        if not self.dense:
            return self.sealed_max_timestamp
        return max(self.max_timestamps, default=-1)

    @property
    def durable_end(self) -> int:
        """The end of the last indexed (durable) batch."""
        if not self.dense:
            return self.size
        return self.positions[-1] + self.sizes[-1] if self.bases else 0

    def index(self, header: BatchHeader, position: int) -> None:
        self.bases.append(header.base_offset)
        self.positions.append(position)
        self.sizes.append(header.size)
        self.max_timestamps.append(header.max_timestamp)
        self.last_offsets.append(header.last_offset)

    def read(self, position: int, size: int) -> bytes:
        try:
            return os.pread(self.fd, size, position)
        except OSError as exc:  # EIO here is the medium failing: fatal (kcoord/storage/faults.py)
            raise StorageFault(self.path, "read", exc) from exc

    # -- lookups (both kinds of index) -------------------------------------------------------------------
    def find(self, offset: int) -> BatchInfo | None:
        """The batch holding `offset`, or the first one after it; None past the end."""
        for batch in self.batches_from(self._start_position(offset)):
            if batch.last_offset >= offset:
                return batch
        return None

    def batches_from(self, position: int) -> Iterator[BatchInfo]:
        """Every batch from the one at `position` (a batch boundary) to the end of the segment."""
        if self.dense:
            i = bisect.bisect_left(self.positions, position)
            for j in range(i, len(self.bases)):
                yield BatchInfo(
                    self.positions[j],
                    self.bases[j],
                    self.last_offsets[j],
                    self.sizes[j],
                    self.max_timestamps[j],
                )
            return
        for start, header in self.headers_from(position):
            yield BatchInfo(start, header.base_offset, header.last_offset, header.size, header.max_timestamp)

    def headers_from(self, position: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch from `position` to the end, read from the file."""
        end = self.size
        while position < end:
            header = read_header(self.read(position, BATCH_HEADER.size))
            yield position, header
            position += header.size

    def _start_position(self, offset: int) -> int:
        if self.dense:
            i = max(bisect.bisect_right(self.bases, offset) - 1, 0)
            return self.positions[i] if self.bases else 0
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    def time_start_position(self, timestamp: int) -> int:
        """Where to start looking for the first record at or after `timestamp`: every batch before
        the returned position holds only earlier timestamps."""
        if self.dense:
            return 0
        i = bisect.bisect_left(self.time_stamps, timestamp) - 1
        if i < 0:
            return 0
        # Batches up to the one holding time_offsets[i] are all earlier than `timestamp`.
        return self._start_position(self.time_offsets[i])

    # -- sealing -------------------------------------------------------------------------------------------
    def index_files(self, interval_bytes: int) -> tuple[bytes, bytes]:
        """The sparse `.index` and `.timeindex` contents of this (dense, complete) segment."""
        offsets, times = bytearray(), bytearray()
        last_indexed, max_so_far, max_offset = -1, -1, self.base_offset
        for j, position in enumerate(self.positions):
            if self.max_timestamps[j] > max_so_far:
                max_so_far, max_offset = self.max_timestamps[j], self.last_offsets[j]
            if last_indexed < 0 or position - last_indexed >= interval_bytes:
                offsets += _OFFSET_ENTRY.pack(self.bases[j] - self.base_offset, position)
                if not times or _TIME_ENTRY.unpack_from(times, len(times) - 12)[0] < max_so_far:
                    times += _TIME_ENTRY.pack(max_so_far, max_offset - self.base_offset)
                last_indexed = position
        if self.bases and (not times or _TIME_ENTRY.unpack_from(times, len(times) - 12)[0] < max_so_far):
            times += _TIME_ENTRY.pack(max_so_far, max_offset - self.base_offset)
        return bytes(offsets), bytes(times)

    def write_index_files(self, interval_bytes: int) -> None:
        """Write (and fsync) this sealed segment's index files; runs in a worker thread."""
        offsets, times = self.index_files(interval_bytes)
        if not self.path.exists():  # deleted by retention meanwhile
            return
        self.write_txn_index()
        files = FileOps()  # the coordinator log's atomic write: tmp, fsync, rename, fsync the directory
        files.write_file_atomically(self.index_path, offsets)
        files.write_file_atomically(self.time_index_path, times)

    def write_txn_index(self) -> None:
        """Write (and fsync) the `.txnindex` of this sealed segment."""
        FileOps().write_file_atomically(self.txn_index_path, encode_entries(self.aborted))

    def txn_index_matches(self) -> bool:
        """Whether the `.txnindex` on disk holds exactly the entries derived from the log."""
        try:
            return decode_entries(self.txn_index_path.read_bytes()) == self.aborted
        except (OSError, ValueError):
            return False

    def load_txn_index(self) -> bool:
        """Take a sealed segment's entries from its `.txnindex`; False if it is missing or does not fit
        the segment (an entry's marker outside it, or markers out of order)."""
        try:
            entries = decode_entries(self.txn_index_path.read_bytes())
        except (OSError, ValueError):
            return False
        last_offsets = [e.last_offset for e in entries]
        if last_offsets != sorted(set(last_offsets)) or not all(map(self._is_marker_of, entries)):
            return False
        self.aborted = entries
        return True

    def _is_marker_of(self, entry: AbortedTxn) -> bool:
        """Whether the entry's last offset is a control batch of its producer in this segment."""
        if (
            entry.first_offset > entry.last_offset
            or not self.base_offset <= entry.last_offset < self.next_offset
        ):
            return False  # the transaction may start in an earlier segment, its marker is in this one
        found = self.find(entry.last_offset)
        if found is None or found.base_offset != entry.last_offset:
            return False
        header = read_header(self.read(found.position, BATCH_HEADER.size))
        return header.is_control and header.producer_id == entry.producer_id

    def become_sparse(self, interval_bytes: int) -> None:
        """Drop the dense index for the sparse one (the index files are on disk)."""
        offsets, times = self.index_files(interval_bytes)
        next_offset, max_timestamp, size = self.next_offset, self.max_timestamp, self.durable_end
        self._load_sparse(offsets, times)
        self.sealed_next_offset, self.sealed_max_timestamp, self.size = next_offset, max_timestamp, size
        self.dense = False
        self.bases, self.positions, self.sizes, self.max_timestamps, self.last_offsets = [], [], [], [], []

    def _load_sparse(self, offsets: bytes, times: bytes) -> None:
        self.index_offsets = [self.base_offset + r for r, _ in _OFFSET_ENTRY.iter_unpack(offsets)]
        self.index_positions = [p for _, p in _OFFSET_ENTRY.iter_unpack(offsets)]
        self.time_stamps = [t for t, _ in _TIME_ENTRY.iter_unpack(times)]
        self.time_offsets = [self.base_offset + r for _, r in _TIME_ENTRY.iter_unpack(times)]

    # -- opening ------------------------------------------------------------------------------------------
    def open_sealed(self, expected_base: int) -> bool:
        """Open a sealed segment from its index files; False if they are missing or do not fit."""
        try:
            offsets, times = self.index_path.read_bytes(), self.time_index_path.read_bytes()
        except FileNotFoundError:
            return False
        self.open()
        length = os.fstat(self.fd).st_size
        if not offsets or len(offsets) % _OFFSET_ENTRY.size or len(times) % _TIME_ENTRY.size or not times:
            return False
        self._load_sparse(offsets, times)
        positions, index_offsets = self.index_positions, self.index_offsets
        if (
            positions[0] != 0
            or index_offsets[0] != expected_base
            or any(b <= a for a, b in itertools.pairwise(positions))
            or any(b <= a for a, b in itertools.pairwise(index_offsets))
            or positions[-1] >= length
            or any(b < a for a, b in zip(self.time_stamps, self.time_stamps[1:], strict=False))
        ):
            return False
        # The last batches after the last index entry give the segment's end offset; they must end
        # exactly at the end of the file, or the index does not describe this file.
        position, next_offset = positions[-1], index_offsets[-1]
        try:
            while position < length:
                header = read_header(self.read(position, BATCH_HEADER.size))
                if header.magic != 2 or header.base_offset < next_offset or position + header.size > length:
                    return False
                position += header.size
                next_offset = header.last_offset + 1
        except (struct.error, ValueError):
            return False
        self.dense = False
        self.size = length
        self.sealed_next_offset = next_offset
        self.sealed_max_timestamp = self.time_stamps[-1]
        return True

    def recover(self, expected_base: int, sealed: bool) -> list[BatchHeader]:
        """Index every whole, CRC-valid batch; a bad tail is truncated (active) or refused (sealed)."""
        self.open()
        length = os.fstat(self.fd).st_size
        position, next_offset, headers = 0, expected_base, []
        while position < length:
            problem = self._problem(position, length, next_offset)
            if problem is not None:
                if sealed:
                    raise CorruptSegment(f"{self.path}: {problem} at byte {position}")
                log.warning("truncating torn tail of %s at byte %d: %s (%d bytes dropped)",
                            self.path, position, problem, length - position)  # fmt: skip
                os.ftruncate(self.fd, position)
                os.fsync(self.fd)
                break
            header = read_header(self.read(position, BATCH_HEADER.size))
            self.index(header, position)
            headers.append(header)
            position += header.size
            next_offset = header.last_offset + 1
        self.size = position
        return headers

    def _problem(self, position: int, length: int, next_offset: int) -> str | None:
        header = None
        if length - position >= BATCH_HEADER.size:
            header = read_header(self.read(position, BATCH_HEADER.size))
        problem = framing_problem(header, position, length, next_offset)
        crc_ok = (
            problem is not None
            or header is None
            or (batch_crc(self.read(position, header.size), 0, header.size) == header.crc)
        )
        return problem if crc_ok else "CRC mismatch"
