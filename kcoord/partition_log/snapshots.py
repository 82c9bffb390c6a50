"""Producer-state snapshots at segment boundaries, so that opening a partition replays only the segments
after the last one (Kafka's `ProducerStateManager.takeSnapshot` on roll, `<offset>.snapshot`).

`<20-digit offset>.producers` holds the durable producers' state once every batch below `offset` (the
base offset of the next segment) is in the log, written atomically when the segment before it is
sealed. Kafka's snapshot keeps only each producer's last batch; this one keeps the five that
duplicate detection uses, so a retry across a restart is still recognised (which kcoord did before
snapshots, by replaying), hence its own suffix and layout, big-endian:

    version INT16 (1), crc UINT32 (CRC-32C of everything after it), count INT32, then per producer:
    producer id INT64, epoch INT16, coordinator epoch INT32, last timestamp INT64,
    current transaction first offset INT64 (-1: none open), batch count INT8,
    per batch: first sequence INT32, last sequence INT32, first offset INT64, last offset INT64
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c

from kcoord.partition_log.producers import ProducerEntry
from kcoord.storage.files import FileOps

__all__ = ["SUFFIX", "read_snapshot", "snapshot_offsets", "snapshot_path", "write_snapshot"]

SUFFIX = ".producers"
VERSION = 1
_HEAD = struct.Struct(">hIi")  # version, crc, count
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iiqq")


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the snapshots in `directory`, newest first."""
    return sorted((int(p.stem) for p in directory.glob(f"*{SUFFIX}") if p.stem.isdigit()), reverse=True)


def encode(producers: dict[int, ProducerEntry]) -> bytes:
    body = bytearray()
    for producer_id, e in sorted(producers.items()):
        body += _ENTRY.pack(
            producer_id,
            e.epoch,
            e.coordinator_epoch,
            e.last_timestamp,
            e.current_txn_first_offset,
            len(e.batches),
        )
        for batch in e.batches:
            body += _BATCH.pack(*batch)
    count = struct.pack(">i", len(producers))
    return struct.pack(">hI", VERSION, crc32c.crc32c(count + body)) + count + bytes(body)


def decode(data: bytes) -> dict[int, ProducerEntry]:
    """The producers of a snapshot; ValueError if it is torn, corrupt or of another version."""
    try:
        version, crc, count = _HEAD.unpack_from(data)
        if version != VERSION:
            raise ValueError(f"unknown producer snapshot version {version}")
        if crc32c.crc32c(data[6:]) != crc:
            raise ValueError("producer snapshot CRC mismatch")
        producers, position = {}, _HEAD.size
        for _ in range(count):
            producer_id, epoch, coordinator_epoch, timestamp, txn, batches = _ENTRY.unpack_from(
                data, position
            )
            position += _ENTRY.size
            found = []
            for _ in range(batches):
                found.append(_BATCH.unpack_from(data, position))
                position += _BATCH.size
            producers[producer_id] = ProducerEntry(epoch, tuple(found), coordinator_epoch, timestamp, txn)
    except struct.error as exc:
        raise ValueError(f"torn producer snapshot: {exc}") from exc
    if position != len(data):
        raise ValueError("producer snapshot has trailing bytes")
    return producers


def write_snapshot(directory: Path, offset: int, producers: dict[int, ProducerEntry]) -> None:
    """Write (tmp, fsync, rename, fsync the directory) the snapshot at `offset`; a worker thread's job."""
    FileOps().write_file_atomically(snapshot_path(directory, offset), encode(producers))


def read_snapshot(directory: Path, offset: int) -> dict[int, ProducerEntry] | None:
    try:
        return decode(snapshot_path(directory, offset).read_bytes())
    except (OSError, ValueError):
        return None
