"""One segment file of a partition log: record batches verbatim, named by the offset of its first batch.

The offset and time index of a segment is kept in memory, one entry per batch (base offset, file
position, size, max timestamp), and rebuilt from the file when the partition is opened: recovery
reads every batch header and checks every CRC anyway, so an index file would save nothing it does
not already pay for (docs/compat.md).
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from protocol.record_batch import BATCH_HEADER, LOG_OVERHEAD, BatchHeader, batch_crc, read_header

__all__ = ["CorruptSegment", "Segment", "segment_name"]

log = logging.getLogger("kcoord.partition_log")


class CorruptSegment(Exception):
    """A sealed segment holds a bad batch: refused loudly, never truncated."""


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass(slots=True)
class Segment:
    path: Path
    base_offset: int
    created_ms: int
    fd: int = -1
    size: int = 0
    bases: list[int] = field(default_factory=list)  # base offset of each batch
    positions: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    last_offsets: list[int] = field(default_factory=list)

    def open(self) -> None:
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def next_offset(self) -> int:
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    @property
    def max_timestamp(self) -> int:
        return max(self.max_timestamps, default=-1)

    def index(self, header: BatchHeader, position: int) -> None:
        self.bases.append(header.base_offset)
        self.positions.append(position)
        self.sizes.append(header.size)
        self.max_timestamps.append(header.max_timestamp)
        self.last_offsets.append(header.last_offset)

    def batch_containing(self, offset: int) -> int:
        """The index of the batch holding `offset` (the last one starting at or before it)."""
        return max(bisect.bisect_right(self.bases, offset) - 1, 0)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

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
        if length - position < BATCH_HEADER.size:
            return "incomplete batch header"
        header = read_header(self.read(position, BATCH_HEADER.size))
        if header.magic != 2 or header.batch_length < BATCH_HEADER.size - LOG_OVERHEAD:
            return f"not a magic-2 batch (magic {header.magic}, length {header.batch_length})"
        if position + header.size > length:
            return "incomplete batch"
        if header.base_offset != next_offset:
            return f"batch at offset {header.base_offset}, expected {next_offset}"
        if batch_crc(self.read(position, header.size), 0, header.size) != header.crc:
            return "CRC mismatch"
        return None
