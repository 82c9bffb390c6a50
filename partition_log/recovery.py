"""Opening a partition log: its segments, the producers' state and the aborted-transaction indexes.

Sealed segments open from their index files when those fit (a full scan otherwise, refusing a bad
batch); the last segment is scanned and its torn tail cut. Every batch is then replayed into the
producers' state, open transactions included (Kafka's `LogLoader` / `UnifiedLog.rebuildProducerState`
start from producer snapshots, which kcoord does not write, so the whole log is replayed; only batch
headers are read, and the body of control batches). The replay derives each segment's aborted
transactions (`LogSegment.updateProducerState`): a sealed segment's `.txnindex` that is missing, torn or
different is written again. Idle producers are forgotten afterwards, never one with an open transaction.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from partition_log.config import PartitionConfig
from partition_log.producers import ProducerStates, replay_batch
from partition_log.segment import Segment
from protocol.record_batch import BatchHeader

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
    """The partition's segments, in order, opened and replayed into `producers`."""
    paths = sorted(directory.glob("*.log"))
    expected = int(paths[0].stem) if paths else 0
    segments = []
    for index, path in enumerate(paths):
        segment = Segment(path, int(path.stem), now_ms)
        sealed = index < len(paths) - 1
        if sealed and segment.open_sealed(expected):
            _replay(producers, segment, segment.headers_from(0))
            if not segment.txn_index_matches():
                log.warning("rebuilding the transaction index of %s from the log", segment.path)
                segment.write_txn_index()
        else:
            headers = segment.recover(expected, sealed=sealed)
            _replay(producers, segment, zip(segment.positions, headers, strict=True))
            if sealed:  # recovered by a full scan: write its index files again
                segment.write_index_files(config.index_interval_bytes)
                segment.become_sparse(config.index_interval_bytes)
            elif segment.txn_index_path.exists() and not segment.txn_index_matches():
                segment.txn_index_path.unlink()  # the active segment's entries live in memory
        expected = segment.next_offset
        segments.append(segment)
    return segments


def _replay(producers: ProducerStates, segment: Segment, batches: Iterable[tuple[int, BatchHeader]]) -> None:
    for position, header in batches:
        aborted = replay_batch(producers, header, partial(segment.read, position, header.size))
        if aborted is not None:
            segment.aborted.append(aborted)
