"""Read-only checks and dumps of partition logs, for `kcoord storage verify|dump`.

Nothing here writes or truncates (recovery does that when the server opens the logs): `verify` reads
every batch of every segment, checks its framing, offsets and CRC-32C, and checks that a sealed
segment's `.index` and `.timeindex` entries point at batch boundaries it really has; `dump` prints
every batch (and, with records, every record) the way Kafka's `DumpLogSegments` does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from partition_log.segment import Segment
from protocol.record_batch import BATCH_HEADER, BatchHeader, iter_records, read_header

__all__ = ["dump_partitions", "verify_partitions"]

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
Print = Callable[[str], None]


def _partition_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _scan(path: Path, expected: int) -> tuple[list[tuple[int, BatchHeader]], str | None]:
    """(position, header) of every good batch, and the first problem (None if the file is whole)."""
    segment = Segment(path, int(path.stem), 0)
    segment.fd = os.open(path, os.O_RDONLY)
    try:
        length = os.fstat(segment.fd).st_size
        found: list[tuple[int, BatchHeader]] = []
        position = 0
        while position < length:
            problem = segment._problem(position, length, expected)
            if problem is not None:
                return found, f"{problem} at byte {position}"
            header = read_header(segment.read(position, BATCH_HEADER.size))
            found.append((position, header))
            position += header.size
            expected = header.last_offset + 1
        return found, None
    finally:
        segment.close()


def _index_problems(path: Path, batches: list[tuple[int, BatchHeader]]) -> Iterator[str]:
    index, time_index = path.with_suffix(".index"), path.with_suffix(".timeindex")
    if not index.exists() and not time_index.exists():
        return
    base = int(path.stem)
    boundaries = {(h.base_offset - base, position) for position, h in batches}
    data = index.read_bytes() if index.exists() else b""
    if len(data) % 8 or not data:
        yield f"{index.name}: {len(data)} bytes is not a whole number of 8-byte entries"
    else:
        for relative, position in struct.iter_unpack(">ii", data):
            if (relative, position) not in boundaries:
                yield f"{index.name}: entry (offset {base + relative}, byte {position}) is not a batch start"
                break
    data = time_index.read_bytes() if time_index.exists() else b""
    last_offsets = {h.last_offset for _, h in batches}
    if len(data) % 12 or not data:
        yield f"{time_index.name}: {len(data)} bytes is not a whole number of 12-byte entries"
        return
    previous = -1
    for timestamp, relative in struct.iter_unpack(">qi", data):
        if timestamp < previous or base + relative not in last_offsets:
            yield f"{time_index.name}: entry (timestamp {timestamp}, offset {base + relative}) does not fit"
            break
        previous = timestamp


def verify_partitions(root: Path, out: Print = print) -> int:
    """Problems found in every partition log under `root` (0 = all whole)."""
    problems = 0
    for directory in _partition_dirs(root):
        segments = sorted(directory.glob("*.log"))
        previous_end: int | None = None
        for index, path in enumerate(segments):
            if previous_end is not None and previous_end != int(path.stem):
                out(f"{path}: starts at offset {int(path.stem)}, the segment before ends at {previous_end}")
                problems += 1
            batches, problem = _scan(path, int(path.stem))
            if problem is not None:
                last = index == len(segments) - 1
                out(
                    f"{path}: {'torn tail (cut at startup)' if last else 'corrupt sealed segment'}: {problem}"
                )
                problems += 1
            for text in _index_problems(path, batches) if problem is None else ():
                out(f"{path.parent / text}")
                problems += 1
            previous_end = batches[-1][1].last_offset + 1 if batches and problem is None else None
    return problems


def dump_partitions(root: Path, records: bool = True, out: Print = print) -> None:
    for directory in _partition_dirs(root):
        segments = sorted(directory.glob("*.log"))
        out(f"# partition {directory.name}: {len(segments)} segment(s)")
        for path in segments:
            batches, problem = _scan(path, int(path.stem))
            out(f"# segment {path.name}: {len(batches)} batches")
            for position, h in batches:
                out(
                    f"  baseOffset={h.base_offset} lastOffset={h.last_offset} count={h.records_count} "
                    f"position={position} size={h.size} maxTimestamp={h.max_timestamp} "
                    f"compression={_CODECS.get(h.compression, h.compression)} producerId={h.producer_id} "
                    f"producerEpoch={h.producer_epoch} baseSequence={h.base_sequence} crc={h.crc}"
                )
                if records:
                    with open(path, "rb") as file:
                        file.seek(position)
                        for record in iter_records(file.read(h.size)):
                            out(
                                f"    offset={record.offset} timestamp={record.timestamp} "
                                f"key={record.key!r} value={record.value!r} headers={record.headers!r}"
                            )
            if problem:
                out(f"# {path}: {problem}")
