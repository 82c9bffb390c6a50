"""Read-only checks and dumps of partition logs, for `kcoord storage verify|dump`.

Nothing here writes or truncates (recovery does that when the server opens the logs): `verify` reads
every batch of every segment, checks its framing, offsets and CRC-32C, and checks that a sealed
segment's `.index` and `.timeindex` entries point at batch boundaries it really has, and that each
`.txnindex` holds the aborted transactions a replay of the producers' state finds in the segment
(exactly when the partition still has its first segment or a producer snapshot at it; otherwise each
entry must at least be an ABORT marker of its producer in the segment); `dump` prints
every batch (and, with records, every record) the way Kafka's `DumpLogSegments` does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from kcoord.partition_log.producers import ProducerStates, replay_batch
from kcoord.partition_log.segment import Segment
from kcoord.partition_log.snapshots import read_snapshot
from kcoord.partition_log.txn_index import AbortedTxn, decode_entries
from kcoord.protocol.record_batch import (
    BATCH_HEADER,
    BatchHeader,
    iter_records,
    read_end_txn_marker,
    read_header,
)

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


def _read(path: Path, position: int, size: int) -> bytes:
    with open(path, "rb") as file:
        file.seek(position)
        return file.read(size)


def _replay(
    producers: ProducerStates, path: Path, batches: list[tuple[int, BatchHeader]]
) -> list[AbortedTxn]:
    """The aborted transactions the segment's batches end, as recovery derives them."""
    found = []
    for position, header in batches:
        aborted = replay_batch(producers, header, partial(_read, path, position, header.size))
        if aborted is not None:
            found.append(aborted)
    return found


def _txn_index_problems(
    path: Path, batches: list[tuple[int, BatchHeader]], derived: list[AbortedTxn], sealed: bool, exact: bool
) -> Iterator[str]:
    txn_index = path.with_suffix(".txnindex")
    if not txn_index.exists():
        if sealed and derived:
            yield f"{txn_index.name}: missing ({len(derived)} aborted transactions in the segment)"
        return
    try:
        entries = decode_entries(txn_index.read_bytes())
    except ValueError as exc:
        yield f"{txn_index.name}: {exc}"
        return
    if exact:
        if entries != derived:
            yield f"{txn_index.name}: entries {entries} are not the aborted transactions in the log {derived}"
        return
    # Segments before this one were deleted: a transaction may have started in them.
    markers = {(h.producer_id, h.base_offset) for _, h in batches if h.is_control}
    keys = {(e.producer_id, e.last_offset) for e in entries}
    if not keys <= markers or not {(d.producer_id, d.last_offset) for d in derived} <= keys:
        yield f"{txn_index.name}: entries {entries} do not fit the markers in the segment"


def verify_partitions(root: Path, out: Print = print) -> int:
    """Problems found in every partition log under `root` (0 = all whole)."""
    problems = 0
    for directory in _partition_dirs(root):
        problems += _verify_partition(sorted(directory.glob("*.log")), out)
    return problems


def _verify_partition(segments: list[Path], out: Print) -> int:
    problems = 0
    previous_end: int | None = None
    producers = ProducerStates()
    exact = bool(segments) and int(segments[0].stem) == 0  # the partition still has its first segment
    if segments and not exact:  # segments were deleted: the snapshot at the first one gives their state
        entries = read_snapshot(segments[0].parent, int(segments[0].stem))
        if entries is not None:
            producers.load(entries)
            exact = True
    replayable = True
    for index, path in enumerate(segments):
        if previous_end is not None and previous_end != int(path.stem):
            out(f"{path}: starts at offset {int(path.stem)}, the segment before ends at {previous_end}")
            problems += 1
        batches, problem = _scan(path, int(path.stem))
        last = index == len(segments) - 1
        if problem is not None:
            out(f"{path}: {'torn tail (cut at startup)' if last else 'corrupt sealed segment'}: {problem}")
            problems += 1
        texts = list(_index_problems(path, batches)) if problem is None else []
        if replayable and problem is None:
            derived = _replay(producers, path, batches)
            texts += _txn_index_problems(path, batches, derived, not last, exact)
        replayable = replayable and problem is None
        for text in texts:
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
                    f"producerEpoch={h.producer_epoch} baseSequence={h.base_sequence} "
                    f"isTransactional={h.is_transactional} isControl={h.is_control} crc={h.crc}"
                )
                if records:
                    _dump_records(path, position, h, out)
            _dump_txn_index(path, out)
            if problem:
                out(f"# {path}: {problem}")


def _dump_records(path: Path, position: int, header: BatchHeader, out: Print) -> None:
    data = _read(path, position, header.size)
    if header.is_control:  # DumpLogSegments prints the marker of a control record
        marker = read_end_txn_marker(data)
        if marker is not None:
            kind, epoch = "COMMIT" if marker.commit else "ABORT", marker.coordinator_epoch
            out(f"    offset={header.base_offset} endTxnMarker={kind} coordinatorEpoch={epoch}")
            return
    for record in iter_records(data):
        out(
            f"    offset={record.offset} timestamp={record.timestamp} "
            f"key={record.key!r} value={record.value!r} headers={record.headers!r}"
        )


def _dump_txn_index(path: Path, out: Print) -> None:
    txn_index = path.with_suffix(".txnindex")
    if not txn_index.exists():
        return
    try:
        entries = decode_entries(txn_index.read_bytes())
    except ValueError as exc:
        out(f"# {txn_index.name}: {exc}")
        return
    out(f"# {txn_index.name}: {len(entries)} aborted transaction(s)")
    for entry in entries:
        out(
            f"  version=0 producerId={entry.producer_id} firstOffset={entry.first_offset} "
            f"lastOffset={entry.last_offset} lastStableOffset={entry.last_stable_offset}"
        )
