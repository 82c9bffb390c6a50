"""PartitionLogs: the partition logs of one data directory and the one writer they share.

Directory layout: `<root>/<topic>-<partition>/<20-digit base offset>.log` plus `log-start-offset`.
The writer takes every batch appended since its last round, writes each partition's batches with one
`write()` at the positions already reserved, then (fsync policy `always`) fsyncs every file it
touched, all in a worker thread so the event loop keeps serving; only then does it move high
watermarks and resolve the appends. `interval:<ms>` fsyncs on a timer and `never` only at close: the
high watermark then moves once the bytes are written.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.log import PartitionLog, Pending
from kcoord.storage.faults import FaultPolicy, StorageFault, operation

__all__ = ["PartitionLogs"]

log = logging.getLogger("kcoord.partition_log")


class PartitionLogs:
    def __init__(
        self, root: Path, fsync: str, now_ms: Callable[[], int], policy: FaultPolicy | None = None
    ) -> None:
        self.root = root
        # kcoord/storage/faults.py: the same policy as the coordinator log's (one per process)
        self.policy = policy or FaultPolicy()
        self._fsync_always = fsync == "always"
        self._interval_ms = int(fsync.split(":", 1)[1]) if fsync.startswith("interval:") else None
        self._now_ms = now_ms
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._queue: list[Pending] = []
        self._writer: asyncio.Task[None] | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._dirty: set[tuple[int, Path]] = set()
        self._dirty_dirs: set[Path] = set()  # directories that gained a file since their last fsync
        self._tasks: set[asyncio.Future[object]] = set()  # referenced until done (asyncio keeps weak refs)

    @classmethod
    async def open(
        cls, root: Path, *, fsync: str, now_ms: Callable[[], int], policy: FaultPolicy | None = None
    ) -> PartitionLogs:
        logs = cls(root, fsync, now_ms, policy)
        root.mkdir(parents=True, exist_ok=True)
        for directory in sorted(p for p in root.iterdir() if p.is_dir()):
            topic, _, partition = directory.name.rpartition("-")
            if not topic or not partition.isdigit():
                log.warning("ignoring %s: not a <topic>-<partition> directory", directory)
                continue
            plog = PartitionLog(
                directory, topic, int(partition), PartitionConfig(), logs._submit, logs._background
            )
            await asyncio.to_thread(plog.recover, now_ms())
            logs._logs[(topic, int(partition))] = plog
        if logs._interval_ms is not None:
            logs._tick()
        return logs

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def ensure(self, topic: str, partition: int, config: PartitionConfig) -> PartitionLog:
        plog = self._logs.get((topic, partition))
        if plog is None:
            plog = PartitionLog(
                self.root / f"{topic}-{partition}", topic, partition, config, self._submit, self._background
            )
            plog.recover(self._now_ms())
            self._logs[(topic, partition)] = plog
        plog.config = config
        return plog

    def partitions(self) -> list[PartitionLog]:
        return list(self._logs.values())

    async def delete_topic(self, topic: str) -> None:
        doomed = [p for key, p in self._logs.items() if key[0] == topic]
        for plog in doomed:
            del self._logs[(plog.topic, plog.partition)]
            await asyncio.to_thread(plog.remove_files)
        if doomed:
            try:
                await asyncio.to_thread(_fsync_dirs, {self.root})
            except StorageFault as fault:
                if fault.fatal:
                    self.policy.failed(fault)
                raise

    def enforce_retention(self) -> None:
        now = self._now_ms()
        for plog in self.partitions():
            plog.remove_expired_producers(now)  # Kafka: every producer.id.expiration.check.interval.ms
            start = plog.expired_start(now)
            if start is not None:
                log.info(
                    "retention: topic=%s partition=%d log start -> %d", plog.topic, plog.partition, start
                )
                self._background(plog.move_log_start(start))

    async def close(self) -> None:
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)
        if self._tasks:  # index files of sealed segments, retention: let them finish
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._ticker is not None:
            self._ticker.cancel()
        if self.policy.fatal is None:  # never fsync again after a failed one
            await asyncio.to_thread(
                self._fsync, {s.fd: s.path for p in self.partitions() for s in p.segments if s.fd >= 0}
            )
            await asyncio.to_thread(_fsync_dirs, self._dirty_dirs)
        for plog in self.partitions():
            plog.close()

    @property
    def pending(self) -> bool:
        """Appends submitted and not yet written."""
        return bool(self._queue) or (self._writer is not None and not self._writer.done())

    async def flush(self) -> None:
        """Wait until every append submitted so far is written (the test controls' `advance()`)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def discard(self) -> None:
        """Close without fsync (the test controls' reset deletes the files next)."""
        await self.flush()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._ticker is not None:
            self._ticker.cancel()
        for plog in self.partitions():
            plog.close()

    def abandon(self) -> None:
        """A crash: drop what is queued, close the files as they are (no write, no fsync)."""
        self._queue.clear()
        for task in [self._writer, *self._tasks]:
            if task is not None:
                task.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
        for plog in self.partitions():
            plog.close()

    # -- the writer ----------------------------------------------------------------------------------------
    def _submit(self, pending: Pending) -> None:
        if self.policy.fatal is not None:  # acknowledge nothing after a fatal fault
            pending.log.failed()
            pending.future.set_exception(self.policy.fatal)
            return
        pending.log.place(pending, self._now_ms())
        self._queue.append(pending)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                self.policy.check()
                await asyncio.to_thread(self._write, batch)
            except OSError as exc:
                fault = exc if isinstance(exc, StorageFault) else StorageFault(self.root, "write", exc)
                self._fail(batch + self._queue, fault)
                self._queue = []
                continue
            self.policy.succeeded()
            touched = []
            for pending in batch:
                pending.log.written(pending)
                if pending.log not in touched:
                    touched.append(pending.log)
            for plog in touched:
                plog.notify()

    def _write(self, batch: list[Pending]) -> None:
        """Write (and under `always` fsync) a batch; failures are `StorageFault`s (kcoord/storage/faults.py).

        A failed write cuts every touched file back to its last durable batch: transient. A failed
        fsync, or a failed cut-back, is fatal; after a failed fsync nothing is cut back with another
        fsync, the files are only truncated (best effort) so this process never reads them back."""
        fds: dict[int, Path] = {}
        new_dirs: set[Path] = set()
        try:
            for pending in batch:
                segment = pending.segment
                assert segment is not None
                with operation(segment.path, "write"):
                    if segment.open():
                        # A new file is durable only once its directory entry is: fsync the partition's
                        # directory, and the root, which may have just gained that directory (Kafka's
                        # LocalLog flushes the parent directory after a roll for the same reason).
                        new_dirs.update((segment.path.parent, self.root))
                    _pwrite_all(segment.fd, pending.data, pending.position)
                fds[segment.fd] = segment.path
            if self._fsync_always:
                self._fsync(fds)
                _fsync_dirs(new_dirs)
            else:
                self._dirty.update(fds.items())
                self._dirty_dirs.update(new_dirs)
        except StorageFault as fault:
            for pending in batch:  # cut back to the last durable batch of each file
                segment = pending.segment
                if segment is not None and segment.fd >= 0:
                    try:
                        os.ftruncate(segment.fd, segment.durable_end)
                    except OSError as exc:
                        if not fault.fatal:
                            fault = StorageFault(segment.path, "truncate-back", exc, fatal=True)
            raise fault from None

    @staticmethod
    def _fsync(fds: dict[int, Path]) -> None:
        for fd, path in fds.items():
            with operation(path, "fsync"):
                os.fsync(fd)

    def _fail(self, pendings: list[Pending], fault: StorageFault) -> None:
        self.policy.failed(fault)  # logs: once when refusing starts, then rate-limited; CRITICAL if fatal
        for plog in {id(p.log): p.log for p in pendings}.values():
            plog.failed()
        for pending in pendings:
            if not pending.future.done():
                pending.future.set_exception(fault)

    async def _fsync_dirty(self, fds: dict[int, Path], dirs: set[Path]) -> None:
        try:
            await asyncio.to_thread(self._fsync, fds)
            await asyncio.to_thread(_fsync_dirs, dirs)
        except StorageFault as fault:
            self.policy.failed(fault)

    def _background(self, work: Awaitable[object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[object]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if isinstance(error, StorageFault):
            # index files, log-start checkpoint, retention: redone later (transient) or fatal
            if error.fatal:
                self.policy.failed(error)
            else:
                log.warning(
                    "partition log background work failed (redone by the next retention pass or start): %s",
                    error,
                )
        elif error is not None:
            log.error("partition log background work failed: %s", error)

    def _tick(self) -> None:
        assert self._interval_ms is not None
        dirty, self._dirty = self._dirty, set()
        dirs, self._dirty_dirs = self._dirty_dirs, set()
        if (dirty or dirs) and self.policy.fatal is None:
            self._background(self._fsync_dirty(dict(dirty), dirs))
        self._ticker = asyncio.get_running_loop().call_later(self._interval_ms / 1000, self._tick)


def _pwrite_all(fd: int, data: bytes, position: int) -> None:
    """pwrite until every byte is written: on a filling disk pwrite can return a short count (and
    raise ENOSPC only on the next call); a short write taken as whole would leave a torn batch in
    the middle of the file, and recovery would cut every later (acknowledged) batch with it."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view, position = view[written:], position + written


def _fsync_dirs(directories: set[Path]) -> None:
    for directory in sorted(directories, reverse=True):  # a partition's directory before the root
        with operation(directory, "fsync_dir"):
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
