"""A data directory's partition logs (`DATA_DIR/topics/<topic>-<partition>/*.log`) as records, no Spark.

Layout and recovery rules are partition_log's (kcoord/partition_log/logs.py, kcoord/partition_log/segment.py):
a segment holds Kafka record batches verbatim and is named by the offset of its first batch; the
file `log-start-offset` moves the log start up (DeleteRecords, retention). The pipeline may import
protocol and storage only, so the framing is read here with protocol.record_batch (header, CRC,
records, every codec, and recovery's framing rule `framing_problem`): a bad batch ends the
*last* segment of a partition (a torn tail, what recovery truncates) and fails a sealed one.

Copy-on-read: the driver lists the directories once and remembers each segment's size; a part reads
only that prefix, opens files read-only and takes no lock. Offset ranges are pushed down: a segment
whose offsets lie outside the range is not planned at all (its range is [its base, the next
segment's base)), batches past the range end are not read, and batches before its start are CRC-
checked (cheap) but not decompressed.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from kcoord.pipeline.reader import PipelineError
from kcoord.protocol.record_batch import (
    BATCH_HEADER,
    BatchHeader,
    batch_crc,
    framing_problem,
    iter_records,
    read_header,
)

TOPICS_DIR = "topics"  # kcoord/wiring/app.py opens PartitionLogs at DATA_DIR/topics
LOG_START_FILE = "log-start-offset"  # kcoord/partition_log/log.py: INT64, written atomically
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Bounds:
    """The rows a job asked for: topics, partitions and an inclusive offset range (None = all)."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    lo: int = 0
    hi: int = LONG_MAX

    def wants(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and (
            self.partitions is None or partition in self.partitions
        )

    def narrowed(self, op: str, column: str, value: Any) -> Bounds | None:
        """These bounds AND `column op value`; None when that predicate cannot be applied exactly."""
        if column == "topic":
            values = _values(op, value, str)
            if values is None:
                return None
            return replace(self, topics=values if self.topics is None else self.topics & values)
        if column == "partition":
            ints = _values(op, value, int)
            if ints is not None:
                return replace(self, partitions=ints if self.partitions is None else self.partitions & ints)
        if column in ("partition", "offset") and _is_int(value):
            lo, hi = {
                "=": (value, value),
                ">": (value + 1, LONG_MAX),
                ">=": (value, LONG_MAX),
                "<": (0, value - 1),
                "<=": (0, value),
            }.get(op, (None, None))
            if lo is None or hi is None:
                return None
            if column == "offset":
                return replace(self, lo=max(self.lo, lo), hi=min(self.hi, hi))
            keep = frozenset(range(max(lo, 0), min(hi, 1 << 31) + 1)) if op in ("<", "<=") else None
            if keep is not None:  # partition < n: a finite set
                return replace(self, partitions=keep if self.partitions is None else self.partitions & keep)
        return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _values(op: str, value: Any, kind: type) -> frozenset[Any] | None:
    items = (value,) if op == "=" else tuple(value) if op == "in" else None
    if items is None or not all(isinstance(v, kind) and not isinstance(v, bool) for v in items):
        return None
    return frozenset(items)


@dataclass(frozen=True)
class TopicPart:
    """One segment to read: its prefix of `size` bytes, offsets [base_offset, end_offset)."""

    topic: str
    partition: int
    path: str
    base_offset: int
    end_offset: int  # the next segment's base, LONG_MAX for the last one
    size: int
    sealed: bool
    log_start: int


def partition_dirs(data_dir: str) -> list[tuple[str, int, Path]]:
    """(topic, partition, directory) of every partition log, as PartitionLogs.open finds them."""
    root = Path(data_dir)
    if not root.is_dir():
        raise PipelineError(f"{data_dir}: not a directory")
    topics = root / TOPICS_DIR
    if not topics.is_dir():
        return []
    out = []
    for directory in sorted(p for p in topics.iterdir() if p.is_dir()):
        topic, _, partition = directory.name.rpartition("-")
        if topic and partition.isdigit():
            out.append((topic, int(partition), directory))
    return out


def log_start_of(directory: Path) -> int:
    try:
        data = (directory / LOG_START_FILE).read_bytes()
    except FileNotFoundError:
        return 0
    return int(struct.unpack(">q", data)[0]) if len(data) == 8 else 0


def _segments(directory: Path) -> list[tuple[int, Path, int]]:
    """(base offset, path, size) of each segment, sizes taken now (the copy-on-read view)."""
    out = []
    for path in sorted(directory.glob("*.log")):
        if path.stem.isdigit():
            try:
                out.append((int(path.stem), path, path.stat().st_size))
            except FileNotFoundError:
                continue  # deleted by retention while listing: below the log start anyway
    return out


def plan(data_dir: str, bounds: Bounds = Bounds()) -> list[TopicPart]:
    """One part per segment that can hold a wanted offset of a wanted partition."""
    parts = []
    for topic, partition, directory in partition_dirs(data_dir):
        if not bounds.wants(topic, partition):
            continue
        segments = _segments(directory)
        start = max(log_start_of(directory), segments[0][0] if segments else 0)
        lo = max(bounds.lo, start)
        for index, (base, path, size) in enumerate(segments):
            last = index == len(segments) - 1
            end = LONG_MAX if last else segments[index + 1][0]
            if end <= lo or base > bounds.hi:
                continue
            parts.append(TopicPart(topic, partition, str(path), base, end, size, not last, start))
    return parts


def batches(part: TopicPart, hi: int = LONG_MAX) -> Iterator[tuple[BatchHeader, bytes]]:
    """The whole, CRC-valid batches of a segment's planned prefix, up to the one holding `hi`."""
    try:
        fd = os.open(part.path, os.O_RDONLY)
    except FileNotFoundError:
        raise PipelineError(
            f"{part.path}: segment deleted while reading (retention or DeleteRecords); run the job again"
        ) from None
    try:
        position, expected = 0, part.base_offset
        while position < part.size:
            head = os.pread(fd, BATCH_HEADER.size, position)
            header = read_header(head) if len(head) == BATCH_HEADER.size else None
            problem = framing_problem(header, position, part.size, expected)
            data = b""
            if problem is None:
                assert header is not None
                data = os.pread(fd, header.size, position)
                if batch_crc(data, 0, header.size) != header.crc:
                    problem = "CRC mismatch"
            if problem is not None:
                if part.sealed:
                    raise PipelineError(f"{part.path}: corrupt sealed segment: {problem} at byte {position}")
                return  # a torn tail: recovery truncates it, nothing after it was acknowledged
            assert header is not None
            if header.base_offset > hi:
                return
            yield header, data
            position += header.size
            expected = header.last_offset + 1
    finally:
        os.close(fd)


class Row(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def records(part: TopicPart, bounds: Bounds = Bounds()) -> Iterator[Row]:
    """The records of one segment within `bounds` (control batches skipped, as consumers do)."""
    lo = max(bounds.lo, part.log_start)
    for header, data in batches(part, bounds.hi):
        if header.last_offset < lo or header.is_control:
            continue
        yield from batch_rows(data, header.base_offset, lo, bounds.hi, part.path)


def batch_rows(data: bytes, base_offset: int, lo: int, hi: int, where: str) -> Iterator[Row]:
    """The records of one whole, CRC-checked batch with offsets in [lo, hi]; `where` names the
    batch's home (a segment file, a cluster's partition) when its records do not parse."""
    try:
        rows = [
            Row(record.offset, record.timestamp, record.key, record.value, record.headers)
            for record in iter_records(data)
            if lo <= record.offset <= hi
        ]
    except Exception as exc:  # a CRC-valid batch whose records do not parse: say where
        raise PipelineError(f"{where}: batch at offset {base_offset} does not decode: {exc}") from None
    yield from rows


def log_ends(data_dir: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start, log end) per partition: what recovery restores (log end = its high watermark)."""
    out = {}
    for topic, partition, directory in partition_dirs(data_dir):
        segments = _segments(directory)
        start = log_start_of(directory)
        if not segments:
            out[(topic, partition)] = (start, start)
            continue
        base, path, size = segments[-1]
        part = TopicPart(topic, partition, str(path), base, LONG_MAX, size, False, start)
        end = base
        for header, _ in batches(part):
            end = header.last_offset + 1
        out[(topic, partition)] = (max(start, segments[0][0]), end)
    return out
