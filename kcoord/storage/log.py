"""The durable log: one writer task, group commit, snapshots and background compaction.

`append(records)` assigns LSNs at once (so log order is call order) and returns a future that
resolves with the last LSN only when the records are durable under the fsync policy. Everything
queued while a write is in flight goes out in the next single write + fsync (group commit). The
keydir (newest record per key) is updated only after a write succeeded, so snapshots and
compaction only ever see durable records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kcoord.storage import compaction, framing, history, snapshot
from kcoord.storage.errors import StorageError
from kcoord.storage.faults import FaultPolicy, StorageFault, operation
from kcoord.storage.files import (
    DirectoryLock,
    FileOps,
    encode_segment_header,
    segment_name,
)
from kcoord.storage.records import LogConfig, Record
from kcoord.storage.recovery import Entry, Key, Recovered, Segment, recover

log = logging.getLogger(__name__)

# After a snapshot or compaction failed transiently (a full disk): try again no sooner than this.
SNAPSHOT_RETRY_S = 10
COMPACTION_RETRY_S = 10
# History retention is checked this often besides after each compaction: a listing of one directory.
HISTORY_CHECK_S = 60


@dataclass(slots=True)
class _Pending:
    future: asyncio.Future[int]
    data: bytes
    entries: list[tuple[Key, Entry]]
    last_lsn: int


def _now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        ops: FileOps,
        lock: DirectoryLock,
        state: Recovered,
        policy: FaultPolicy | None = None,
    ):
        self.directory = directory
        self.policy = policy or FaultPolicy()
        self.config = config
        self.ops = ops
        self._lock = lock
        self.keydir = state.keydir
        self.segments = state.segments
        self.next_lsn = state.next_lsn
        # Past the last record in the keydir: what a snapshot covers (queued appends are not in it).
        self._durable_next_lsn = state.next_lsn
        self._fsync_interval = config.fsync_interval_ms()
        self._queue: list[_Pending] = []
        self._wakeup = asyncio.Event()
        self._closing = False
        self._failure: StorageError | None = None
        self._last_fsync = time.monotonic()
        self._dirty = False
        self._records_since_snapshot = state.records
        self._compaction: asyncio.Task[None] | None = None
        self.compactions = 0  # passes run since open (metrics)
        self._next_compaction_check = 0.0
        self._next_history_check = time.monotonic() + HISTORY_CHECK_S
        self._history_trim: asyncio.Future[int] | None = None
        self._next_snapshot_try = 0.0  # after a transient snapshot failure: retry no sooner than this
        self._fd = self._open_active()
        self._writer = asyncio.get_running_loop().create_task(self._run(), name="storage-writer")

    @classmethod
    async def open(
        cls,
        data_dir: str | os.PathLike[str],
        config: LogConfig | None = None,
        apply: Callable[[Record], None] | None = None,
        *,
        ops: FileOps | None = None,
        policy: FaultPolicy | None = None,
    ) -> Log:
        """Lock the directory, recover it (replaying every live record through `apply`), start writing."""
        directory = Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        config = config or LogConfig()
        config.fsync_interval_ms()  # validate the policy before touching anything
        ops = ops or FileOps()
        lock = DirectoryLock(directory)
        lock.acquire()
        try:
            state = recover(directory, config, apply or (lambda record: None), ops)
            # The history is never read by recovery; its retention is applied at open and then
            # periodically, so a server that was down for a week starts with a trimmed history.
            history.apply_retention(directory, config, ops, _now_ms())
            return cls(directory, config, ops, lock, state, policy)
        except BaseException:
            lock.release()
            raise

    # -- appending --------------------------------------------------------------------------------
    def append(self, records: Sequence[Record]) -> asyncio.Future[int]:
        """Queue `records` as one atomic batch; the future resolves once they are durable."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if self._failure is None and self.policy.fatal is not None:
            self._failure = self.policy.fatal  # another writer of this process hit a fatal fault
        if self._failure is not None or self._closing:
            future.set_exception(self._failure or StorageError("log is closed"))
            return future
        if not records:
            future.set_result(self.next_lsn - 1)
            return future
        try:
            pending = self._encode(records, future)
        except ValueError as exc:
            # e.g. an oversized record: the caller answers a retriable error, so say why here
            log.warning("append of %d records rejected: %s", len(records), exc)
            future.set_exception(StorageError(str(exc)))
            return future
        self._queue.append(pending)
        self._wakeup.set()
        return future

    def _encode(self, records: Sequence[Record], future: asyncio.Future[int]) -> _Pending:
        now = _now_ms()
        lsn = self.next_lsn
        chunks: list[bytes] = []
        entries: list[tuple[Key, Entry]] = []
        batch = len(records) > 1
        for index, record in enumerate(records):
            if not 0 <= record.type <= framing.USER_TYPE_MAX:
                raise ValueError(f"record type {record.type} is reserved for storage")
            flags = framing.FLAG_BATCH_START if batch and index == 0 else 0
            frame = framing.encode(record.type, flags, lsn, now, record.key, record.value)
            if len(frame) - 8 > self.config.max_record_bytes:
                raise ValueError(f"record of {len(frame)} bytes exceeds max_record_bytes")
            chunks.append(frame)
            entries.append(((record.type, record.key), Entry(lsn, len(frame), now, record.value)))
            lsn += 1
        if batch:
            chunks.append(framing.encode(framing.TYPE_BATCH_END, 0, lsn, now, b"", b""))
            lsn += 1
        self.next_lsn = lsn
        return _Pending(future, b"".join(chunks), entries, lsn - 1)

    # -- the writer task --------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            timeout = self._fsync_interval / 1000 if self._dirty and self._fsync_interval else None
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                try:
                    await self._fsync_now()
                except StorageFault as fault:
                    self._fatal(fault)
            self._wakeup.clear()
            while self._queue:
                pending, self._queue = self._queue, []
                await self._write(pending)
            if self._closing:
                return
            await self._maybe_snapshot()
            self._maybe_compact()

    def _refused(self, pending: list[_Pending]) -> bool:
        """After a fatal fault (here or in another writer of the process) nothing is written."""
        if self._failure is None and self.policy.fatal is not None:
            self._failure = self.policy.fatal
        if self._failure is None:
            return False
        for item in pending:
            item.future.set_exception(self._failure)
        return True

    async def _write(self, pending: list[_Pending]) -> None:
        if self._refused(pending):
            return
        data = b"".join(item.data for item in pending)
        start = self.segments[-1].size
        try:
            if self._should_roll():
                await asyncio.to_thread(self._roll, pending[0].entries[0][1].lsn)
            start = self.segments[-1].size
            await asyncio.to_thread(self._write_sync, data)
        except OSError as exc:
            fault = await self._classify(exc, start)
            for item in pending:
                if not item.future.done():
                    item.future.set_exception(fault)
            return
        self.policy.succeeded()
        self.segments[-1].size += len(data)
        self._durable_next_lsn = pending[-1].last_lsn + 1
        for item in pending:
            for key, entry in item.entries:
                self.keydir[key] = entry
            self._records_since_snapshot += len(item.entries)
            if not item.future.done():
                item.future.set_result(item.last_lsn)

    async def _classify(self, exc: OSError, start: int) -> StorageFault:
        """kcoord/storage/faults.py: a write cut cleanly back is transient (refused, retried by the client);
        a failed fsync or truncate-back is fatal (nothing more is acknowledged)."""
        fault = exc if isinstance(exc, StorageFault) else StorageFault(self._active_path(), "write", exc)
        if not fault.fatal:
            fault = await self._undo(start, fault)
        else:  # best effort, never an fsync again: what this process reads back stays clean
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.ops.truncate, self._fd, start)
        if fault.fatal:
            self._fatal(fault)
        else:
            self.policy.failed(fault)
        return fault

    def _active_path(self) -> Path:
        return self.segments[-1].path

    def _fatal(self, fault: StorageFault) -> None:
        """Refuse every later append; the policy logs it and (in the server) ends the process."""
        if self._failure is None:
            self._failure = fault
        self.policy.failed(fault)
        for item in self._queue:
            if not item.future.done():
                item.future.set_exception(fault)
        self._queue = []

    def _write_sync(self, data: bytes) -> None:
        with operation(self._active_path(), "write"):
            self.ops.write(self._fd, data)
        interval = self._fsync_interval
        if interval is None or (interval > 0 and time.monotonic() - self._last_fsync >= interval / 1000):
            with operation(self._active_path(), "fsync"):
                self.ops.fsync(self._fd)
            self._last_fsync = time.monotonic()
            self._dirty = False
        else:
            self._dirty = interval > 0

    async def _fsync_now(self) -> None:
        if self._dirty:
            await asyncio.to_thread(self._fsync_active)
            self._last_fsync = time.monotonic()
            self._dirty = False

    def _fsync_active(self) -> None:
        with operation(self._active_path(), "fsync"):
            self.ops.fsync(self._fd)

    async def _undo(self, size: int, fault: StorageFault) -> StorageFault:
        """Cut the active segment back to its last good size so no partial record survives.

        Returns `fault` (transient: the write is refused, later ones may succeed), or a fatal
        "truncate-back" fault if cutting back failed: the file's end is then unknown, recovery at
        the next start truncates the torn tail.
        """
        try:
            await asyncio.to_thread(self._truncate_active, size)
        except OSError as exc:
            return StorageFault(self._active_path(), "truncate-back", exc, fatal=True)
        return fault

    def _truncate_active(self, size: int) -> None:
        self.ops.truncate(self._fd, size)
        os.lseek(self._fd, size, os.SEEK_SET)
        self.ops.fsync(self._fd)

    # -- segments ---------------------------------------------------------------------------------
    def _open_active(self) -> int:
        if not self.segments:
            self.segments.append(self._create_segment(self.next_lsn))
        active = self.segments[-1]
        self._active_opened = time.monotonic()
        fd = os.open(active.path, os.O_WRONLY)
        os.lseek(fd, active.size, os.SEEK_SET)
        return fd

    def _create_segment(self, base_lsn: int) -> Segment:
        path = self.directory / segment_name(base_lsn)
        header = encode_segment_header(base_lsn)
        self.ops.write_new_file(path, header)  # a failed write removes it again: a later roll retries
        with operation(self.directory, "fsync_dir"):
            self.ops.fsync_dir(self.directory)
        return Segment(path, base_lsn, len(header))

    def _should_roll(self) -> bool:
        active = self.segments[-1]
        if active.size <= len(encode_segment_header(0)):
            return False
        age_ms = (time.monotonic() - self._active_opened) * 1000
        return active.size >= self.config.segment_bytes or age_ms >= self.config.segment_ms

    def _roll(self, base_lsn: int) -> None:
        # The new segment exists before the old one is closed: if creating it fails (a full disk),
        # the old one stays active and the next write tries the roll again.
        self._fsync_active()
        segment = self._create_segment(base_lsn)
        os.close(self._fd)
        self.segments.append(segment)
        self._fd = self._open_active()
        log.info("rolled to segment %s", self.segments[-1].path.name)

    # -- snapshots and compaction -----------------------------------------------------------------
    async def _maybe_snapshot(self) -> None:
        if self._records_since_snapshot < self.config.snapshot_every_records:
            return
        if time.monotonic() < self._next_snapshot_try or self._failure is not None:
            return
        try:
            await self.snapshot()
        except OSError as exc:
            # The snapshot is written to a .tmp and renamed: whatever failed, the previous snapshot
            # and the segments are untouched. Transient: try again later; fatal: stop.
            fault = exc if isinstance(exc, StorageFault) else StorageFault(self.directory, "snapshot", exc)
            if fault.fatal:
                self._fatal(fault)
                return
            self._next_snapshot_try = time.monotonic() + SNAPSHOT_RETRY_S
            log.warning("snapshot failed, existing data intact, retrying in %ds: %s", SNAPSHOT_RETRY_S, fault)

    async def snapshot(self) -> Path:
        """Write every live record (as of now, all durable) to a new snapshot file."""
        # Only two C-level list copies happen on the event loop; sorting and encoding a large keydir
        # would stall it. Parallel lists, not (key, entry) pairs: no new objects for the GC to chase.
        keys, entries = list(self.keydir), list(self.keydir.values())
        path, count = await asyncio.to_thread(self._write_snapshot, keys, entries, self._durable_next_lsn)
        self._records_since_snapshot = 0
        log.info("snapshot %s written with %d live records", path.name, count)
        return path

    def _write_snapshot(self, keys: list[Key], entries: list[Entry], next_lsn: int) -> tuple[Path, int]:
        frames = []
        for done, index in enumerate(sorted(range(len(entries)), key=lambda i: entries[i].lsn)):
            compaction.share_gil(done)
            entry = entries[index]
            if entry.value is not None:
                key = keys[index]
                frames.append(framing.encode(key[0], 0, entry.lsn, entry.timestamp_ms, key[1], entry.value))
        return snapshot.write(self.directory, next_lsn, frames, self.ops), len(frames)

    def dirty_ratio(self) -> float:
        return compaction.dirty_ratio(self.segments[:-1], self.segments[-1].base_lsn, self.keydir)

    def _maybe_trim_history(self) -> None:
        if self._history_trim is not None and not self._history_trim.done():
            return
        now = time.monotonic()
        if now < self._next_history_check:
            return
        self._next_history_check = now + HISTORY_CHECK_S
        self._history_trim = asyncio.ensure_future(
            asyncio.to_thread(history.apply_retention, self.directory, self.config, self.ops, _now_ms())
        )

    def _maybe_compact(self) -> None:
        self._maybe_trim_history()
        if self._compaction is not None and not self._compaction.done():
            return
        # The dirty ratio walks the whole keydir: after every write batch that would cost more than
        # the write itself once there are many keys. Kafka's cleaner also checks on a backoff.
        now = time.monotonic()
        if now < self._next_compaction_check:
            return
        self._next_compaction_check = now + self.config.compaction_check_interval_ms / 1000
        if len(self.segments) > 1 and self.dirty_ratio() >= self.config.min_cleanable_dirty_ratio:
            self._compaction = asyncio.get_running_loop().create_task(self._compact_while_dirty())

    async def _compact_while_dirty(self) -> None:
        # Appends that arrived during a pass may have made the log dirty again: go on until clean.
        while len(self.segments) > 1 and self.dirty_ratio() >= self.config.min_cleanable_dirty_ratio:
            if self._failure is not None:
                return
            try:
                if await self.compact() <= 0:
                    return
            except OSError as exc:
                fault = exc if isinstance(exc, StorageFault) else StorageFault(self.directory, "compact", exc)
                if fault.fatal:
                    self._fatal(fault)
                    return
                # Each segment is swapped in whole or not at all: existing data is intact.
                self._next_compaction_check = time.monotonic() + COMPACTION_RETRY_S
                log.warning(
                    "compaction failed, existing data intact, retrying in %ds: %s", COMPACTION_RETRY_S, fault
                )
                return

    async def compact(self) -> int:
        """Rewrite the sealed segments keeping only each key's newest record; returns bytes freed."""
        sealed = list(self.segments[:-1])
        if not sealed:
            return 0
        plan = compaction.Plan.build(sealed, self.keydir, _now_ms(), self.config.tombstone_retention_ms)
        try:
            freed = await asyncio.to_thread(compaction.run, plan, self.directory, self.config, self.ops)
        except OSError:
            # The segments swapped in before the failure are the new ones; the rest are untouched.
            done = {segment.path: segment for segment in plan.outputs}
            self.segments[:] = [done.get(segment.path, segment) for segment in self.segments]
            raise
        # Segments only ever get appended at the end, so everything after `sealed` is untouched.
        self.segments[:] = plan.outputs + self.segments[len(sealed) :]
        for key, lsn in plan.expired_tombstones:
            entry = self.keydir.get(key)
            if entry is not None and entry.lsn == lsn:
                del self.keydir[key]
        self.compactions += 1
        log.info(
            "compaction freed %d bytes over %d sealed segments, %d originals moved to the history",
            freed,
            len(sealed),
            len(plan.moved_aside),
        )
        return freed

    async def seal_active(self) -> None:
        """Roll to a new, empty active segment so the current one can be compacted (offline tools:
        `kcoord storage compact`, with no writer, compacts every record)."""
        await self.flush()
        if self.segments[-1].size > len(encode_segment_header(0)):
            await asyncio.to_thread(self._roll, self.next_lsn)

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Appends queued and not yet written."""
        return len(self._queue)

    async def flush(self) -> None:
        """Wait until everything appended so far has been written."""
        while self._queue:
            await asyncio.gather(*(p.future for p in list(self._queue)), return_exceptions=True)

    def abandon(self) -> None:
        """A crash (the test controls' `App.abandon()`): stop writing, drop what is queued, close the
        active segment without fsync or snapshot and release the lock; recovery then sees the files
        exactly as a kill -9 would leave them."""
        if self._closing:
            return
        self._closing = True
        self._queue.clear()
        for task in (self._writer, self._compaction, self._history_trim):
            if task is not None:
                task.cancel()
        os.close(self._fd)
        self._lock.release()

    async def close(self, *, write_snapshot: bool = True) -> None:
        """Flush, fsync, snapshot and release the lock."""
        if self._closing:
            return
        await self.flush()
        self._closing = True
        self._wakeup.set()
        await self._writer
        if self._compaction is not None:
            await asyncio.gather(self._compaction, return_exceptions=True)
        if self._history_trim is not None:
            await asyncio.gather(self._history_trim, return_exceptions=True)
        try:
            if self._failure is None:
                await asyncio.to_thread(self._fsync_active)
                if write_snapshot:
                    try:
                        await self.snapshot()
                    except StorageFault as fault:
                        if fault.fatal:
                            raise
                        # Everything is in the fsynced segments; the next start replays them.
                        log.warning("no snapshot at close (the data is intact in the segments): %s", fault)
        finally:
            os.close(self._fd)
            self._lock.release()
