"""What a partition led here answers reads from, all in memory (the base of `PgPartitionLog`,
partition_store.py, which adds the writes): the log start and high watermark, the place of every
batch and an LRU of their bytes (`PartitionBatches`), the producers' states (the last stable offset),
the aborted-transaction index, and the listeners a parked Fetch waits on.

Reads need no fence: every batch below the high watermark is committed in PostgreSQL, and one not in
memory is read back from `kcoord_partition_batch` when a read reaches it (partition_batches.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from kcoord.cluster.partition_batches import PartitionBatches
from kcoord.partition_log import ProducerStateRow
from kcoord.partition_log.log import PRODUCER_ID_EXPIRATION_MS
from kcoord.partition_log.producers import ProducerStates
from kcoord.partition_log.results import READ_COMMITTED, READ_UNCOMMITTED, ReadResult
from kcoord.partition_log.txn_index import AbortedTxn, collect_aborted

__all__ = ["PartitionReads"]

_FETCH = (
    "SELECT base_offset, batch FROM kcoord_partition_batch "
    "WHERE topic = $1 AND partition = $2 AND base_offset >= $3 ORDER BY base_offset LIMIT $4"
)


class PartitionReads:
    """The read side of partition `topic`-`partition`; `pool` is the node's asyncpg pool."""

    def __init__(self, pool: Any, topic: str, partition: int) -> None:
        self._pool = pool
        self.topic = topic
        self.partition = partition
        self.log_start_offset = 0
        self.high_watermark = 0
        self.producers = ProducerStates()
        self.batches = PartitionBatches(f"{topic}-{partition}", self._fetch, self.notify)
        self._aborted: list[AbortedTxn] = []  # in marker order, so by last offset
        self._listeners: list[Callable[[], None]] = []

    async def _fetch(self, base_offset: int, rows: int) -> list[tuple[int, bytes]]:
        """Batches from `base_offset` on, read back from PostgreSQL (committed: no fence needed)."""
        found = await self._pool.fetch(_FETCH, self.topic, self.partition, base_offset, rows)
        return [(int(r[0]), bytes(r[1])) for r in found]

    # -- reading ---------------------------------------------------------------------------------------
    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    @property
    def first_unstable_offset(self) -> int | None:
        return self.producers.first_unstable_offset

    @property
    def last_stable_offset(self) -> int:
        """As PartitionLog.last_stable_offset (UnifiedLog.lastStableOffset)."""
        first_unstable = self.producers.first_unstable_offset
        if first_unstable is None or first_unstable >= self.high_watermark:
            return self.high_watermark
        return max(first_unstable, self.log_start_offset)

    def read(
        self,
        offset: int,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        max_offset: int | None = None,
    ) -> ReadResult | None:
        """As PartitionLog.read: whole batches from the one holding `offset`, at least one (KIP-74)."""
        high_watermark, log_start = self.high_watermark, self.log_start_offset
        if offset < log_start or offset > high_watermark:
            return None
        last_stable = self.last_stable_offset
        committed = isolation_level == READ_COMMITTED
        limit = last_stable if committed else high_watermark
        index = self.batches.index_of(offset)
        if offset >= limit or index < 0:
            return ReadResult(b"", high_watermark, log_start, last_stable, [] if committed else None)
        chunks, end = self.batches.chunks(index, limit, max_bytes, max_offset)
        total = sum(len(c) for c in chunks)
        aborted = None
        if committed:
            first = bisect.bisect_left([t.last_offset for t in self._aborted], offset)
            aborted = collect_aborted([self._aborted[first:]], offset, end) if total else []
        return ReadResult(b"".join(chunks), high_watermark, log_start, last_stable, aborted)

    def batch_max_timestamp(self, offset: int) -> int:
        index = self.batches.index_of(offset)
        return self.batches.metas[index].max_timestamp if index >= 0 else -1

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return self.batches.offset_for_timestamp(timestamp, self.log_start_offset)

    def max_timestamp(self) -> tuple[int, int] | None:
        return self.batches.max_timestamp(self.log_start_offset)

    # -- transactions and producers --------------------------------------------------------------------
    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return self.producers.has_ongoing_transaction(producer_id)

    def producer_states(self) -> list[ProducerStateRow]:
        return self.producers.rows()

    def remove_expired_producers(self, now_ms: int) -> None:
        self.producers.remove_expired(now_ms, PRODUCER_ID_EXPIRATION_MS)

    @property
    def size(self) -> int:
        """Bytes of the partition's batches held (DescribeLogDirs' partition_size)."""
        return self.batches.size
