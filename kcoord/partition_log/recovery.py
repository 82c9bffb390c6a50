"""Opening a partition log: its segments, the producers' state and the aborted-transaction indexes.

Sealed segments open from their index files when those fit (a full scan otherwise, refusing a bad
batch); the last segment is scanned and its torn tail cut. The producers' state (open transactions
included) then comes from the newest producer snapshot at a segment boundary below which every
segment opened from its index files with a whole `.txnindex` (`snapshots.py`; Kafka's `LogLoader`
loads its latest snapshot the same way), and the batches after it are replayed (only batch headers
are read, and the body of control batches). Without a usable snapshot the whole log is replayed, and
a snapshot is written at the last segment's base so that the next start need not.

The replay derives each replayed segment's aborted transactions (`LogSegment.updateProducerState`): a
sealed segment's `.txnindex` that is missing, torn or different is written again. Idle producers are
forgotten afterwards (log.py), never one with an open transaction (KAFKA-9144).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.producers import ProducerStates, replay_batch
from kcoord.partition_log.segment import Segment
from kcoord.partition_log.snapshots import read_snapshot, snapshot_offsets, snapshot_path, write_snapshot
from kcoord.protocol.record_batch import BatchHeader

__all__ = ["LOG_START_FILE", "read_log_start", "recover_segments"]

log = logging.getLogger("kcoord.partition_log")

LOG_START_FILE = "log-start-offset"
_OFFSET = struct.Struct(">q")


def read_log_start(directory: Path) -> int | None:
    checkpoint = directory / LOG_START_FILE
    return _OFFSET.unpack(checkpoint.read_bytes())[0] if checkpoint.exists() else None


def recover_segments(
    directory: Path, config: PartitionConfig, producers: ProducerStates, now_ms: int
) -> list[Segment]:
    """The partition's segments, in order, opened, with their producers' state loaded into `producers`."""
    segments, scanned = _open_segments(sorted(directory.glob("*.log")), now_ms)
    start = _load_snapshot(directory, segments, scanned, producers)
    last = len(segments) - 1
    for index in range(start, len(segments)):
        segment = segments[index]
        if index == last and index > start:  # the next start replays only the active segment
            write_snapshot(directory, segment.base_offset, producers.durable)
        headers = scanned.get(index)
        _replay(
            producers,
            segment,
            zip(segment.positions, headers, strict=True) if headers else segment.headers_from(0),
        )
        if index == last:
            if segment.txn_index_path.exists() and not segment.txn_index_matches():
                segment.txn_index_path.unlink()  # the active segment's entries live in memory
        elif headers is not None:  # recovered by a full scan: write its index files again
            segment.write_index_files(config.index_interval_bytes)
            segment.become_sparse(config.index_interval_bytes)
        elif not segment.txn_index_matches():
            log.warning("rebuilding the transaction index of %s from the log", segment.path)
            segment.write_txn_index()
    return segments


def _open_segments(paths: list[Path], now_ms: int) -> tuple[list[Segment], dict[int, list[BatchHeader]]]:
    """The segments, and the headers of those recovered by a full scan (by index)."""
    expected = int(paths[0].stem) if paths else 0
    segments: list[Segment] = []
    scanned: dict[int, list[BatchHeader]] = {}
    for index, path in enumerate(paths):
        if index < len(paths) - 1 and path.stat().st_size == 0:
            log.warning("removing %s: an empty segment before the last (a roll whose write failed)", path)
            path.unlink()
            continue
        segment = Segment(path, int(path.stem), now_ms)
        sealed = index < len(paths) - 1
        if not (sealed and segment.open_sealed(expected)):
            scanned[len(segments)] = segment.recover(expected, sealed=sealed)
        expected = segment.next_offset
        segments.append(segment)
    return segments, scanned


def _load_snapshot(
    directory: Path, segments: list[Segment], scanned: dict[int, list[BatchHeader]], producers: ProducerStates
) -> int:
    """Load the newest usable snapshot into `producers`; the index of the first segment to replay."""
    bases = {segment.base_offset: index for index, segment in enumerate(segments)}
    for offset in snapshot_offsets(directory):
        index = bases.get(offset)
        if index is None:  # below the log (retention) or past its end (a torn tail): of no use
            snapshot_path(directory, offset).unlink()
            continue
        if any(i in scanned for i in range(index)):
            continue
        if not all(segments[i].load_txn_index() for i in range(index)):
            continue
        entries = read_snapshot(directory, offset)
        if entries is not None:
            producers.load(entries)
            return index
    return 0


def _replay(producers: ProducerStates, segment: Segment, batches: Iterable[tuple[int, BatchHeader]]) -> None:
    segment.aborted = []
    for position, header in batches:
        aborted = replay_batch(producers, header, partial(segment.read, position, header.size))
        if aborted is not None:
            segment.aborted.append(aborted)
