"""The storage-fault policy: which failed file operations are transient, which are fatal, and what each does.

One `FaultPolicy` per process, shared by every writer (the coordinator log in storage/, the partition
logs in partition_log/), so "are writes refused?" has one answer for /readyz and the logs.

* Transient: a write (or file creation) that failed and whose file was cleanly cut back to its last
  good size: ENOSPC, EDQUOT, or EIO from `write()` itself. Nothing of it survives, so the writer
  refuses that write (the caller answers a retriable code), keeps serving reads, and tries the next
  write as usual; the first write that succeeds ends the refusing. One WARNING when refusing starts,
  at most one reminder with a count every `reminder_s` seconds, one INFO when it ends.
* Fatal: a failed fsync/fdatasync (of a file or a directory), a failed truncate-back, or EIO while
  reading the data directory. After a failed fsync Linux may have dropped the dirty pages and cleared
  the error, so a second fsync could "succeed" without the data being on disk (PostgreSQL's 2018
  fsyncgate): there is no safe way to go on. The policy acknowledges nothing more, lets the writers
  fail what is in flight with the retriable code, logs one CRITICAL line (file, operation, errno)
  and calls `on_fatal` - in the server: exit with `EXIT_STORAGE_FATAL`, as Kafka halts the broker
  when its only log directory fails (`LogManager.handleLogDirFailure` -> `Exit.halt(1)`), so the
  supervisor restarts it and recovery runs. Without `on_fatal` (library use, tests) the writers just
  refuse every later write.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kcoord.storage.errors import StorageError

__all__ = [
    "EXIT_STORAGE_FATAL",
    "FATAL_OPERATIONS",
    "FaultPolicy",
    "StorageFault",
    "is_fatal",
    "operation",
]

log = logging.getLogger("kcoord.storage")

# `kcoord serve` exits with this code after a fatal storage fault (docs/running/operations.md, "Exit codes").
EXIT_STORAGE_FATAL = 75

# Operations whose failure leaves the file's durable state unknown: never retried, never survived.
FATAL_OPERATIONS = frozenset({"fsync", "fdatasync", "fsync_dir", "truncate-back", "read"})


def is_fatal(operation: str, exc: OSError) -> bool:
    """A failed `operation` is fatal when it is an fsync-like or truncate-back, or EIO on a read.

    A failed write is transient: the caller cuts the file back (a failure of that is "truncate-back",
    fatal), so nothing of it survives and the next write may succeed (space freed, the device back).
    Reads fail fatally only with EIO (the medium); ENOENT and the like are the caller's business.
    """
    if operation == "read":
        return exc.errno == errno.EIO
    return operation in FATAL_OPERATIONS


class StorageFault(StorageError, OSError):
    """A file operation failed: which file, which operation, the OS error, and whether it is fatal.

    Also an OSError (with the original errno), so code that handles OSError still sees it.
    """

    def __init__(self, path: str | os.PathLike[str], operation: str, exc: OSError, fatal: bool | None = None):
        code = exc.errno or 0
        name = errno.errorcode.get(code, str(code))
        self.message = f"{operation} of {path} failed: {exc.strerror or exc} ({name}, errno {code})"
        super().__init__(self.message)
        self.path = str(path)
        self.operation = operation
        self.errno = code
        self.strerror = exc.strerror
        self.fatal = is_fatal(operation, exc) if fatal is None else fatal

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (Exception, (self.message,))


@contextmanager
def operation(path: str | os.PathLike[str], name: str) -> Iterator[None]:
    """Turn an OSError raised inside into a `StorageFault` naming `path` and the operation `name`."""
    try:
        yield
    except StorageFault:
        raise
    except OSError as exc:
        raise StorageFault(path, name, exc) from exc


class FaultPolicy:
    """Refusing/ready state and the log lines for storage faults; `on_fatal` acts on a fatal one."""

    def __init__(
        self,
        on_fatal: Callable[[StorageFault], None] | None = None,
        *,
        reminder_s: float = 10.0,
        settle_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_fatal = on_fatal
        self._reminder_s = reminder_s
        self._clock = clock
        self.fatal: StorageFault | None = None
        self.refusing: StorageFault | None = None  # the first fault of the current refusing spell
        self.refused = 0  # writes refused in the current spell
        self._since = 0.0
        self._last_line = 0.0
        self._reminded_at_count = 0
        self._last_refused = 0.0
        self._settle_s = settle_s

    # -- what /readyz and the writers ask -----------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        if self.fatal is not None:
            return False, f"fatal storage fault: {self.fatal}"
        if self.refusing is not None:  # until a write succeeds after the settling time
            return False, f"refusing writes ({self.refused} so far): {self.refusing}"
        return True, "ok"

    def check(self) -> None:
        """Raise the fatal fault, if any: nothing is written or acknowledged after one."""
        if self.fatal is not None:
            raise self.fatal

    # -- what the writers report --------------------------------------------------------------------
    def failed(self, fault: StorageFault) -> None:
        """A write was refused (`fault.fatal` false) or the storage is unusable (true)."""
        if fault.fatal:
            self._fatal(fault)
        else:
            self._refused(fault)

    def succeeded(self) -> None:
        """A write became durable: refusing (if it was) ends once no write was refused for `settle_s`.

        On a nearly full disk a small write can fit where a larger one did not: without the settling
        time every such success would end the spell and the next refusal start one, two lines each."""
        if self.refusing is None or self.fatal is not None:
            return
        if self._clock() - self._last_refused < self._settle_s:
            return
        log.info(
            "storage writes accepted again after %.1fs; %d writes were refused meanwhile (first: %s)",
            self._clock() - self._since,
            self.refused,
            self.refusing,
        )
        self.refusing = None
        self.refused = 0

    def _refused(self, fault: StorageFault) -> None:
        now = self._clock()
        self.refused += 1
        self._last_refused = now
        if self.refusing is None:
            self.refusing, self._since, self._last_line, self._reminded_at_count = fault, now, now, 1
            log.warning(
                "storage: refusing writes (clients get a retriable error, reads go on) "
                "until a write succeeds: %s",
                fault,
            )
            return
        if now - self._last_line >= self._reminder_s and self.refused > self._reminded_at_count:
            self._last_line, self._reminded_at_count = now, self.refused
            log.warning(
                "storage: still refusing writes after %.0fs, %d refused so far; latest: %s",
                now - self._since,
                self.refused,
                fault,
            )

    def _fatal(self, fault: StorageFault) -> None:
        if self.fatal is not None:
            return
        self.fatal = fault
        action = (
            f"exiting with code {EXIT_STORAGE_FATAL}"
            if self._on_fatal is not None
            else "refusing every later write"
        )
        log.critical(
            "fatal storage fault: %s failed on %s with %s (errno %d); nothing more is acknowledged, %s",
            fault.operation,
            fault.path,
            errno.errorcode.get(fault.errno or 0, "?"),
            fault.errno,
            action,
        )
        if self._on_fatal is not None:
            self._on_fatal(fault)
