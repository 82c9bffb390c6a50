"""A FUSE passthrough file system that fails `read`, `write`, `fsync` or `fsyncdir` with EIO on demand.

    python -m tests.faults.fusefs BACKING MOUNTPOINT CONTROL_DIR

While CONTROL_DIR/fail-write (or fail-read, fail-fsync, fail-fsyncdir) exists, that operation
returns EIO: a real error from the kernel's FUSE path, which is what kcoord sees. Mounted with
direct_io, so every read reaches this process (none is answered from the page cache). Runs in the
foreground until `fusermount3 -u MOUNTPOINT`. Needs Debian's fuse3 and PyPI's mfusepy.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import mfusepy as fuse


class FailingPassthrough(fuse.Operations):  # type: ignore[misc]
    def __init__(self, backing: str, control: str) -> None:
        self.root = backing
        self.control = Path(control)

    def _path(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _failing(self, what: str) -> None:
        if (self.control / f"fail-{what}").exists():
            raise fuse.FuseOSError(errno.EIO)

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        st = os.lstat(self._path(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime", "st_ctime")
        return {key: getattr(st, key) for key in keys}

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", "..", *os.listdir(self._path(path))]

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._path(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def open(self, path: str, flags: int) -> int:
        return os.open(self._path(path), flags)

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        # read-write whatever the caller asked: the kernel checks the caller's access mode itself,
        # and with direct_io a file created O_RDWR is read back through this handle
        return os.open(self._path(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._failing("read")
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self._failing("write")
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._path(path), length)
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._failing("fsync")
        os.fsync(fh)
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: Any) -> int:
        self._failing("fsyncdir")
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._path(path))
        return 0

    def rename(self, old: str, new: str) -> int:
        os.replace(self._path(old), self._path(new))
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._path(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._path(path))
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._path(path), mode)
        return 0

    def utimens(self, path: str, times: Any = None) -> int:
        os.utime(self._path(path), times)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._path(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag",
                "f_frsize", "f_namemax")  # fmt: skip
        return {key: getattr(st, key) for key in keys}


def main() -> None:
    backing, mountpoint, control = sys.argv[1:4]
    operations = FailingPassthrough(backing, control)
    # allow_other: a container's user (tests/container) reads and writes it too
    fuse.FUSE(operations, mountpoint, foreground=True, nothreads=False, direct_io=True, allow_other=True)


if __name__ == "__main__":
    main()
