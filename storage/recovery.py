"""Recovery on open: clean transient files, load the newest snapshot, replay the segments after it.

A bad record in the *last* segment is a torn tail from a crash: truncate there and warn. A bad record
in a *sealed* segment cannot come from a crash (sealed files are fsynced before the next one is
created), so it is corruption: refuse to start, naming file and offset.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from storage import framing, snapshot
from storage.errors import StorageCorruption
from storage.files import (
    SEGMENT_HEADER_SIZE,
    SWAP_SUFFIX,
    TRANSIENT_SUFFIXES,
    FileOps,
    base_of,
    decode_segment_header,
    encode_segment_header,
    list_segments,
)
from storage.records import LogConfig, Record

log = logging.getLogger(__name__)

Key = tuple[int, bytes]


@dataclass(slots=True)
class Entry:
    """The newest record of one key: what the keydir (Bitcask's term) holds."""

    lsn: int
    size: int
    timestamp_ms: int
    value: bytes | None


@dataclass(slots=True)
class Segment:
    path: Path
    base_lsn: int
    size: int


@dataclass(slots=True)
class Recovered:
    keydir: dict[Key, Entry] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    next_lsn: int = 0
    records: int = 0
    bytes: int = 0


def finish_interrupted_work(directory: Path, ops: FileOps) -> None:
    """Delete *.tmp / *.cleaned; complete any *.swap (it was fsynced before it was named .swap)."""
    for path in directory.iterdir():
        if path.name.endswith(TRANSIENT_SUFFIXES):
            log.info("removing leftover %s", path.name)
            path.unlink()
        elif path.name.endswith(SWAP_SUFFIX):
            target = path.with_name(path.name[: -len(SWAP_SUFFIX)])
            log.info("completing interrupted compaction: %s -> %s", path.name, target.name)
            os.replace(path, target)
    ops.fsync_dir(directory)


class _Replayer:
    def __init__(self, state: Recovered, apply: Callable[[Record], None]) -> None:
        self.state = state
        self.apply = apply
        self.last_lsn = state.next_lsn - 1
        self.covered = state.next_lsn  # records below this came from the snapshot

    def commit(self, frame: framing.Frame) -> None:
        if frame.type == framing.TYPE_BATCH_END:
            return
        if frame.type > framing.USER_TYPE_MAX:
            log.warning("skipping unknown storage record type %#x at lsn %d", frame.type, frame.lsn)
            return
        key = (frame.type, frame.key)
        self.state.keydir[key] = Entry(frame.lsn, frame.size, frame.timestamp_ms, frame.value)
        self.state.records += 1
        self.apply(Record(frame.type, frame.key, frame.value))

    def segment(self, data: bytes, max_record_bytes: int) -> int:
        """Replay one segment's records; returns the offset after the last complete batch."""
        good = SEGMENT_HEADER_SIZE
        batch: list[framing.Frame] | None = None
        for frame in framing.scan(data, SEGMENT_HEADER_SIZE, max_record_bytes):
            if frame.lsn <= self.last_lsn and frame.lsn >= self.covered:
                break  # LSNs only grow: a smaller one is garbage that happened to pass the CRC
            self.last_lsn = max(self.last_lsn, frame.lsn)
            if frame.flags & framing.FLAG_BATCH_START:
                batch = [frame]
            elif batch is not None:
                batch.append(frame)
            if batch is None or frame.type == framing.TYPE_BATCH_END:
                for item in batch or (frame,):
                    if item.lsn >= self.covered:
                        self.commit(item)
                batch = None
                good = frame.offset + frame.size
        return good


def recover(directory: Path, config: LogConfig, apply: Callable[[Record], None], ops: FileOps) -> Recovered:
    started = time.monotonic()
    finish_interrupted_work(directory, ops)
    state = Recovered()
    snap = snapshot.load_newest(directory, config.max_record_bytes)
    if snap is not None:
        state.next_lsn = snap.next_lsn
        for frame in snap.frames:
            state.keydir[(frame.type, frame.key)] = Entry(frame.lsn, frame.size, frame.timestamp_ms, frame.value)
            apply(Record(frame.type, frame.key, frame.value))
        state.records += len(snap.frames)
    replayer = _Replayer(state, apply)
    paths = list_segments(directory)
    for index, path in enumerate(paths):
        is_last = index == len(paths) - 1
        if not is_last and base_of(paths[index + 1]) <= state.next_lsn:
            state.segments.append(Segment(path, base_of(path), path.stat().st_size))  # wholly in the snapshot
            continue
        state.segments.append(_replay_segment(path, is_last, replayer, config, ops))
        state.bytes += state.segments[-1].size
    state.next_lsn = max(state.next_lsn, replayer.last_lsn + 1)
    seconds = time.monotonic() - started
    log.info(
        "storage recovered records=%d bytes=%d seconds=%.3f records_per_s=%.0f snapshot=%s",
        state.records, state.bytes, seconds, state.records / seconds if seconds else 0.0,
        snap.path.name if snap else None,
    )
    return state


def _replay_segment(path: Path, is_last: bool, replayer: _Replayer, config: LogConfig, ops: FileOps) -> Segment:
    data = path.read_bytes()
    header = decode_segment_header(data)
    if header is None or header.base_lsn != base_of(path):
        if not is_last:
            raise StorageCorruption(str(path), 0, "bad segment header")
        log.warning("segment %s has a torn header (crash while creating it): rewriting it", path)
        _truncate(path, 0, ops, encode_segment_header(base_of(path)))
        return Segment(path, base_of(path), SEGMENT_HEADER_SIZE)
    good = replayer.segment(data, config.max_record_bytes)
    if good < len(data):
        if not is_last:
            raise StorageCorruption(str(path), good, "checksum, length or sequence mismatch")
        log.warning(
            "torn tail in %s: truncating at offset %d, dropping %d bytes", path, good, len(data) - good
        )
        _truncate(path, good, ops)
    return Segment(path, base_of(path), good)


def _truncate(path: Path, size: int, ops: FileOps, then_write: bytes = b"") -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        ops.truncate(fd, size)
        if then_write:
            os.lseek(fd, 0, os.SEEK_SET)
            ops.write(fd, then_write)
        ops.fsync(fd)
    finally:
        os.close(fd)
