"""The data directory: file names, the segment header, the lock, and the file operations.

All writes go through `FileOps` so tests can inject ENOSPC or EIO on write and fsync; nothing else
in storage touches os.write/os.fsync directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kcoord.storage.errors import StorageError, StorageLocked
from kcoord.storage.faults import StorageFault, operation

SEGMENT_SUFFIX = ".log"
SNAPSHOT_SUFFIX = ".snap"
TRANSIENT_SUFFIXES = (".tmp", ".cleaned")
SWAP_SUFFIX = ".swap"
LOCK_NAME = "LOCK"

SEGMENT_MAGIC = b"KCLOG\x00\x00\x01"
FORMAT_VERSION = 1
# magic, format version, base lsn, created ms, flags (was reserved, 0); then crc32c of those 28 bytes
# COMPACTED: records were dropped from this segment (its original went to the history area, or nowhere).
# Readers that ignore flags lose nothing: it only tells the pipeline how far back the history is whole.
SEGMENT_COMPACTED = 0x0001
_SEGMENT_HEADER = struct.Struct(">8sHQqH")
_CRC = struct.Struct(">I")
SEGMENT_HEADER_SIZE = _SEGMENT_HEADER.size + _CRC.size  # 32


def segment_name(base_lsn: int) -> str:
    return f"{base_lsn:020d}{SEGMENT_SUFFIX}"


def snapshot_name(next_lsn: int) -> str:
    return f"{next_lsn:020d}{SNAPSHOT_SUFFIX}"


def base_of(path: Path) -> int:
    return int(path.name.split(".")[0])


def encode_segment_header(base_lsn: int, created_ms: int | None = None, flags: int = 0) -> bytes:
    created = int(time.time() * 1000) if created_ms is None else created_ms
    head = _SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, base_lsn, created, flags)
    return head + _CRC.pack(crc32c(head))


@dataclass(frozen=True, slots=True)
class SegmentHeader:
    base_lsn: int
    created_ms: int
    flags: int = 0


def decode_segment_header(data: bytes) -> SegmentHeader | None:
    """None when the header is missing, torn or not ours."""
    if len(data) < SEGMENT_HEADER_SIZE:
        return None
    head = data[: _SEGMENT_HEADER.size]
    (crc,) = _CRC.unpack_from(data, _SEGMENT_HEADER.size)
    magic, version, base_lsn, created_ms, flags = _SEGMENT_HEADER.unpack(head)
    if crc32c(head) != crc or magic != SEGMENT_MAGIC or version != FORMAT_VERSION:
        return None
    return SegmentHeader(base_lsn, created_ms, flags)


class FileOps:
    """The write side of the file system. Subclass to inject failures in tests."""

    def write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def fsync_dir(self, directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_new_file(self, path: Path, data: bytes) -> None:
        """Create (or truncate) `path` with `data` and fsync it; the caller renames it into place.

        Failures are `StorageFault`s (kcoord/storage/faults.py); after a failed write the file is removed
        again, so a full disk gets its space back and nothing half-written is left behind.
        """
        with operation(path, "create"):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with operation(path, "write"):
                self.write(fd, data)
            with operation(path, "fsync"):
                self.fsync(fd)
        except StorageFault as fault:
            if not fault.fatal:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        finally:
            os.close(fd)

    def write_file_atomically(self, path: Path, data: bytes) -> None:
        """tmp -> fsync -> rename -> fsync dir: the file is either wholly there or absent."""
        tmp = path.with_name(path.name + ".tmp")
        self.write_new_file(tmp, data)
        with operation(path, "rename"):
            os.replace(tmp, path)
        with operation(path.parent, "fsync_dir"):
            self.fsync_dir(path.parent)


class DirectoryLock:
    """flock on DATA_DIR/LOCK: one writer process per data directory (Bitcask's rule)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StorageLocked(
                f"data directory {self.path.parent} is locked by {holder} "
                f"(only one kcoord process may use a data directory)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def list_segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*" + SEGMENT_SUFFIX), key=base_of)


def list_snapshots(directory: Path) -> list[Path]:
    return sorted(directory.glob("*" + SNAPSHOT_SUFFIX), key=base_of)


def wrap_os_error(action: str, exc: OSError) -> StorageError:
    return StorageError(f"{action} failed: {exc.strerror or exc} (errno {exc.errno})")
