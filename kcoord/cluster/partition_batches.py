"""Where a led partition's batches are, and which of their bytes are in memory (issue 35 item 2).

A new leader no longer holds every batch: it reads the place of each (offsets, max timestamp, size:
32 bytes a batch, Kafka's offset and time indexes, which a broker loads per segment) and the bytes of
a bounded tail (`TAIL_BYTES`, at most `TAIL_ROWS` rows), so its load is bounded by the tail, not by
the partition. Bytes it writes stay in memory; older ones are read from PostgreSQL on demand, into
an LRU cache bounded by `CACHE_BYTES` (the tail and what it wrote included). A read that reaches
bytes not in memory starts their fetch and answers what it has (nothing, if the first batch is
missing); the fetch, once done, calls `on_fetched`, which wakes parked Fetch requests
(`PgPartitionLog.notify`) as an append does, so a consumer of old offsets waits as for new records.
"""

from __future__ import annotations

import asyncio
import bisect
import errno
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import NamedTuple

from kcoord.cluster.partition_rows import StoredBatch
from kcoord.protocol.record_batch import iter_records
from kcoord.storage.faults import StorageFault

__all__ = ["CACHE_BYTES", "FETCH_BYTES", "TAIL_BYTES", "TAIL_ROWS", "BatchMeta", "PartitionBatches"]

log = logging.getLogger(__name__)

TAIL_BYTES = 16 << 20
"""The newest batches' bytes a new leader loads (and at least one batch)."""
TAIL_ROWS = 1024
"""At most this many batch rows are loaded with their bytes, whatever their size."""
CACHE_BYTES = 64 << 20
"""Bytes of batches held in memory per partition (least recently used go first)."""
FETCH_BYTES = 1 << 20
"""A fetch from PostgreSQL reads batches from the one asked for until this many bytes (at least one)."""
_FETCH_ROWS = 256


class BatchMeta(NamedTuple):
    base_offset: int
    last_offset: int
    max_timestamp: int
    size: int


Fetch = Callable[[int, int], Awaitable[list[tuple[int, bytes]]]]
"""(base offset, rows) -> [(base offset, batch bytes)] from that batch on, in offset order."""


class PartitionBatches:
    """Every batch's `BatchMeta` from the log start, in offset order, and an LRU of their bytes."""

    def __init__(
        self, name: str, fetch: Fetch, on_fetched: Callable[[], None], cache_bytes: int = CACHE_BYTES
    ) -> None:
        self.name = name
        self._fetch = fetch
        self._on_fetched = on_fetched
        self.cache_bytes = cache_bytes
        self.metas: list[BatchMeta] = []
        self._bases: list[int] = []
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cached = 0
        self.size = 0
        """Bytes of every batch (DescribeLogDirs' partition_size)."""
        self._fetching: dict[int, asyncio.Task[None]] = {}
        self.fetches = 0
        """Reads from PostgreSQL of batches not in memory (for tests and metrics)."""
        self.loaded = 0
        """Batches whose bytes the load read (the tail)."""

    def restore(self, metas: list[BatchMeta], tail: Iterable[StoredBatch]) -> None:
        self.metas = metas
        self._bases = [m.base_offset for m in metas]
        self.size = sum(m.size for m in metas)
        self.loaded = 0
        for batch in tail:
            self._keep(batch.base_offset, batch.data)
            self.loaded += 1

    @property
    def resident(self) -> int:
        """Batches whose bytes are in memory."""
        return len(self._cache)

    @property
    def resident_bytes(self) -> int:
        return self._cached

    def add(self, batch: StoredBatch) -> None:
        """A batch just made durable (the newest)."""
        meta = BatchMeta(batch.base_offset, batch.last_offset, batch.max_timestamp, len(batch.data))
        self.metas.append(meta)
        self._bases.append(batch.base_offset)
        self.size += len(batch.data)
        self._keep(batch.base_offset, batch.data)

    def index_of(self, offset: int) -> int:
        """The index of the batch holding `offset` (-1: before the first)."""
        return bisect.bisect_right(self._bases, offset) - 1

    def data(self, index: int) -> bytes | None:
        """The bytes of batch `index`, or None: not in memory, its fetch started (`on_fetched` follows)."""
        base = self.metas[index].base_offset
        found = self._cache.get(base)
        if found is not None:
            self._cache.move_to_end(base)
            return found
        self._start_fetch(index)
        return None

    def chunks(
        self, index: int, limit: int, max_bytes: int, max_offset: int | None = None
    ) -> tuple[list[bytes], int]:
        """Whole batches from `index` below offset `limit`, up to `max_bytes` (at least one) and
        stopping after the first batch that reaches `max_offset` (PartitionStore.read's), and the
        offset after them; they stop at the first batch not in memory (its fetch started)."""
        chunks: list[bytes] = []
        total, end = 0, -1
        for i in range(index, len(self.metas)):
            meta = self.metas[i]
            if meta.base_offset >= limit or (
                total and (total + meta.size > max_bytes or (max_offset is not None and end > max_offset))
            ):
                break
            data = self.data(i)
            if data is None:
                break
            chunks.append(data)
            total, end = total + meta.size, meta.last_offset + 1
        return chunks, end

    def offset_for_timestamp(self, timestamp: int, log_start: int) -> tuple[int, int] | None:
        """The first record at or after `timestamp` (LogSegment.findOffsetByTimestamp, batch by batch)."""
        for i, meta in enumerate(self.metas):
            if meta.max_timestamp < timestamp or meta.last_offset < log_start:
                continue
            for record in iter_records(self._resident(i)):
                if record.timestamp >= timestamp and record.offset >= log_start:
                    return record.offset, record.timestamp
        return None

    def max_timestamp(self, log_start: int) -> tuple[int, int] | None:
        live = [(i, m) for i, m in enumerate(self.metas) if m.last_offset >= log_start]
        if not live:
            return None
        index, best = max(live, key=lambda e: e[1].max_timestamp)  # the first batch holding the maximum
        for record in iter_records(self._resident(index)):
            if record.timestamp == best.max_timestamp and record.offset >= log_start:
                return record.offset, record.timestamp
        return best.last_offset, best.max_timestamp

    def _resident(self, index: int) -> bytes:
        """Batch `index`'s bytes; not in memory: its fetch starts and the caller answers
        KAFKA_STORAGE_ERROR (retriable) this time, as a broker whose read of its log failed."""
        data = self.data(index)
        if data is None:
            raise StorageFault(
                f"{self.name}@{self.metas[index].base_offset}",
                "a read from PostgreSQL (under way: ask again)",
                OSError(errno.EAGAIN, "the batch is being read from PostgreSQL"),
                fatal=False,
            )
        return data

    def expired_start(
        self, now_ms: int, bound: int, log_start: int, retention_ms: int, retention_bytes: int
    ) -> int | None:
        """The log start retention asks for (UnifiedLog.deleteRetentionMsBreachedSegments and
        deleteRetentionSizeBreachedSegments), batch by batch, never past offset `bound`; None: none."""
        total, start = self.size, None
        for batch in self.metas[:-1]:  # Kafka never deletes the active segment: keep the newest
            if batch.last_offset + 1 > bound:
                break
            by_time = retention_ms >= 0 and now_ms - batch.max_timestamp > retention_ms
            by_size = retention_bytes >= 0 and total - batch.size >= retention_bytes
            if not (by_time or by_size):
                break
            total -= batch.size
            start = batch.last_offset + 1
        return start if start is not None and start > log_start else None

    def trim(self, log_start: int) -> None:
        """Forget the batches wholly below the new log start."""
        keep = bisect.bisect_left([m.last_offset for m in self.metas], log_start)
        for meta in self.metas[:keep]:
            self.size -= meta.size
            dropped = self._cache.pop(meta.base_offset, None)
            if dropped is not None:
                self._cached -= len(dropped)
        del self.metas[:keep], self._bases[:keep]

    def close(self) -> None:
        for task in list(self._fetching.values()):
            task.cancel()
        self._fetching.clear()

    def _keep(self, base: int, data: bytes) -> None:
        if base in self._cache:
            return
        self._cache[base] = data
        self._cached += len(data)
        while self._cached > self.cache_bytes and len(self._cache) > 1:
            _, evicted = self._cache.popitem(last=False)
            self._cached -= len(evicted)

    def _start_fetch(self, index: int) -> None:
        base = self.metas[index].base_offset
        if base in self._fetching:
            return
        rows, total = 0, 0
        wanted = min(FETCH_BYTES, self.cache_bytes // 2)  # what it reads fits beside what is held
        for meta in self.metas[index : index + _FETCH_ROWS]:
            if rows and (total + meta.size > wanted or meta.base_offset in self._cache):
                break
            rows, total = rows + 1, total + meta.size
        task = asyncio.get_running_loop().create_task(self._read(base, rows), name=f"kcoord-fetch-{base}")
        self._fetching[base] = task

    async def _read(self, base: int, rows: int) -> None:
        try:
            fetched = await self._fetch(base, rows)
        except Exception as exc:  # the parked Fetch answers at its max wait; the client asks again
            log.warning("reading batches from offset %d from PostgreSQL failed: %r", base, exc)
            return
        finally:
            self._fetching.pop(base, None)
        self.fetches += 1
        for fetched_base, data in fetched:
            index = self.index_of(fetched_base)
            if index >= 0 and self._bases[index] == fetched_base:  # a batch trimmed meanwhile is not kept
                self._keep(fetched_base, data)
        self._on_fetched()
