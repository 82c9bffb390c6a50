"""Snapshots: all live records at one point of the log, so restart time follows live keys.

    magic b"KCSNAP\\x00\\x01" | u16 version | u64 next_lsn | u64 record_count | records... | u32 crc32c

The records use the segment framing and keep their original LSNs. The trailing CRC covers every
byte before it; a snapshot that fails it is ignored (the previous one, or a full replay, is used).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kcoord.storage import framing
from kcoord.storage.faults import operation
from kcoord.storage.files import FileOps, list_snapshots, snapshot_name

log = logging.getLogger(__name__)

MAGIC = b"KCSNAP\x00\x01"
VERSION = 1
_HEAD = struct.Struct(">8sHQQ")
_CRC = struct.Struct(">I")
KEEP = 2


@dataclass(frozen=True, slots=True)
class Snapshot:
    path: Path
    next_lsn: int
    frames: list[framing.Frame]


def encode(next_lsn: int, frames: Iterable[bytes], count: int) -> bytes:
    body = b"".join((_HEAD.pack(MAGIC, VERSION, next_lsn, count), *frames))
    return body + _CRC.pack(crc32c(body))


def decode(path: Path, max_record_bytes: int) -> Snapshot | None:
    with operation(path, "read"):
        data = path.read_bytes()
    return decode_bytes(path, data, max_record_bytes)


def decode_bytes(path: Path, data: bytes, max_record_bytes: int) -> Snapshot | None:
    """A snapshot from bytes read elsewhere (the pipeline's one read): each frame's `offset` is its
    position in `data`; None if the snapshot is damaged."""
    if len(data) < _HEAD.size + _CRC.size:
        return None
    (crc,) = _CRC.unpack_from(data, len(data) - _CRC.size)
    if crc32c(memoryview(data)[: -_CRC.size]) != crc:
        return None
    magic, version, next_lsn, count = _HEAD.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        return None
    body = memoryview(data)[: -_CRC.size]
    frames = list(framing.scan(body, _HEAD.size, max_record_bytes))
    if len(frames) != count:
        return None
    return Snapshot(path, next_lsn, frames)


def load_newest(directory: Path, max_record_bytes: int) -> Snapshot | None:
    for path in reversed(list_snapshots(directory)):
        snap = decode(path, max_record_bytes)
        if snap is not None:
            return snap
        log.warning("ignoring damaged snapshot %s", path)
    return None


def write(directory: Path, next_lsn: int, frames: list[bytes], ops: FileOps) -> Path:
    path = directory / snapshot_name(next_lsn)
    ops.write_file_atomically(path, encode(next_lsn, frames, len(frames)))
    for old in list_snapshots(directory)[:-KEEP]:
        old.unlink(missing_ok=True)
    with operation(directory, "fsync_dir"):
        ops.fsync_dir(directory)
    return path
