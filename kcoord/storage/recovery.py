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
from typing import NamedTuple

from crc32c import crc32c as crc32c_of

from kcoord.storage import framing, snapshot
from kcoord.storage.errors import StorageCorruption
from kcoord.storage.faults import operation
from kcoord.storage.files import (
    SEGMENT_HEADER_SIZE,
    SWAP_SUFFIX,
    TRANSIENT_SUFFIXES,
    FileOps,
    base_of,
    decode_segment_header,
    encode_segment_header,
    list_segments,
)
from kcoord.storage.records import LogConfig, Record

log = logging.getLogger(__name__)

Key = tuple[int, bytes]
_new = tuple.__new__


class Entry(NamedTuple):
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


def committed_offsets(  # noqa: C901 -- one inlined hot loop
    data: bytes, covered: int, last_lsn: int, max_record_bytes: int
) -> tuple[list[int], int, int]:
    """Where each committed user record of one segment's bytes starts: the one replay rule.

    Walks from the segment header, CRC-checking every record; a batch's records count only once its
    end marker is read; records below `covered` (in the snapshot) and storage's own types are left
    out. Stops at the first record that is invalid or whose LSN does not grow past `last_lsn`.
    Returns (offsets, good, last_lsn): `good` is the end of the last complete batch, which the
    caller compares with len(data) to tell a clean end from a torn tail or corruption.

    Recovery and the pipeline's column-wise reader both start from these offsets; the loop touches
    only the fixed header (no per-record objects), so it is the cheap half of any replay.
    """
    good = pos = SEGMENT_HEADER_SIZE
    end = len(data)
    view = memoryview(data)
    prefix, rest, crc32c = framing.PREFIX.unpack_from, framing.AFTER_CRC.unpack_from, crc32c_of
    header_size, fixed, max_bytes = framing.HEADER_SIZE, framing.FIXED_AFTER_CRC, max_record_bytes
    batch_start, batch_end, user_max = framing.FLAG_BATCH_START, framing.TYPE_BATCH_END, framing.USER_TYPE_MAX
    offsets: list[int] = []
    keep = offsets.append
    batch: list[int] | None = None
    while end - pos >= header_size:
        length, crc = prefix(data, pos)
        stop = pos + 8 + length
        if length < fixed or length > max_bytes or stop > end or crc32c(view[pos + 8 : stop]) != crc:
            break
        type_, flags, lsn, _, key_len = rest(data, pos + 8)
        if pos + header_size + key_len > stop or (last_lsn >= lsn >= covered):
            break  # LSNs only grow: a smaller one is garbage that happened to pass the CRC
        if lsn > last_lsn:
            last_lsn = lsn
        if batch is None and not flags & batch_start:  # the common single-record case
            if lsn >= covered:
                if type_ <= user_max:
                    keep(pos)
                elif type_ != batch_end:
                    log.warning("skipping unknown storage record type %#x at lsn %d", type_, lsn)
            good = pos = stop
            continue
        if flags & batch_start:
            batch = []
        if type_ == batch_end:
            if batch is not None:
                offsets.extend(batch)
            batch = None
            good = stop
        elif type_ > user_max:
            log.warning("skipping unknown storage record type %#x at lsn %d", type_, lsn)
        elif batch is not None and lsn >= covered:
            batch.append(pos)
        pos = stop
    return offsets, good, last_lsn


class _Replayer:
    def __init__(self, state: Recovered, apply: Callable[[Record], None]) -> None:
        self.state = state
        self.keydir = state.keydir
        self.apply = apply
        self.last_lsn = state.next_lsn - 1
        self.covered = state.next_lsn  # records below this came from the snapshot

    def segment(self, data: bytes, max_record_bytes: int) -> int:
        """Replay one segment's committed records; returns the offset after the last complete batch.

        The hot loop of every start: fields are read with precompiled structs, the same layout
        framing.scan reads, and nothing is built per record beyond the keydir entry and the Record.
        """
        offsets, good, self.last_lsn = committed_offsets(data, self.covered, self.last_lsn, max_record_bytes)
        header, header_size = framing.HEADER.unpack_from, framing.HEADER_SIZE
        tombstone = framing.FLAG_TOMBSTONE
        keydir, apply, new = self.keydir, self.apply, _new
        for pos in offsets:
            length, _, type_, flags, lsn, timestamp_ms, key_len = header(data, pos)
            key_end = pos + header_size + key_len
            key = data[pos + header_size : key_end]
            value = None if flags & tombstone else data[key_end : pos + 8 + length]
            # tuple.__new__ skips the NamedTuple constructor's argument handling: this runs per record.
            keydir[(type_, key)] = new(Entry, (lsn, 8 + length, timestamp_ms, value))
            apply(new(Record, (type_, key, value)))
        self.state.records += len(offsets)
        return good


def recover(directory: Path, config: LogConfig, apply: Callable[[Record], None], ops: FileOps) -> Recovered:
    started = time.monotonic()
    finish_interrupted_work(directory, ops)
    state = Recovered()
    snap = snapshot.load_newest(directory, config.max_record_bytes)
    if snap is not None:
        state.next_lsn = snap.next_lsn
        for frame in snap.frames:
            state.keydir[(frame.type, frame.key)] = Entry(
                frame.lsn, frame.size, frame.timestamp_ms, frame.value
            )
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
        state.records,
        state.bytes,
        seconds,
        state.records / seconds if seconds else 0.0,
        snap.path.name if snap else None,
    )
    return state


def _replay_segment(
    path: Path, is_last: bool, replayer: _Replayer, config: LogConfig, ops: FileOps
) -> Segment:
    with operation(path, "read"):  # EIO here is fatal (kcoord/storage/faults.py): `kcoord serve` exits 75
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
