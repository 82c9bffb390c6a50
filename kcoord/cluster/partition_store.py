"""One partition led by this node, its batches in PostgreSQL: `PgPartitionLog`, the second
implementation of what `TopicData` and the Produce / Fetch / ListOffsets / DeleteRecords /
DescribeProducers handlers and the transaction markers call on a partition (`partition_log.PartitionLog`).

The pure parts are partition_log's own: the batch checks and producer checks (`check_append`,
`marker_append`), the stamping of offsets (`stamp`), the producer state and last stable offset
(`ProducerStates`), the aborted-transaction search (`collect_aborted`). What differs is durability:

* a batch is written whole, with its producer's entry after it and (an ABORT marker) its aborted
  transaction entry, by the node's `NodeWriter` (node_writer.py: `kcoord_flush`, migration 4, one
  call for all the node's shards and partitions) in one transaction that checks the lease epoch and
  that the batches start at the stored log end offset; one call in flight per node, appends made
  meanwhile go into the next (group commit);
* the high watermark moves, and acks=1/all are answered, only once that call committed (PostgreSQL is
  the in-sync replica set: Kafka answers acks=all when the high watermark passes the batch);
* fail-stop: after a refused or unknown call every later append is refused; the node reloads the
  partition (at a new epoch) or gives it up. A fenced call is `PartitionFenced` (a `NotLeader`:
  NOT_LEADER_OR_FOLLOWER), anything else `PartitionWriteFailed` (KAFKA_STORAGE_ERROR, retriable);
* a call of unknown outcome (write_outcome.py: it may have committed) answers nothing of its batches
  until `resolve` gives the verdict the reload read (`ClusterPartitions._resolve`), and a retry of a
  batch still in flight is refused rather than acknowledged before it is durable (`validate`).

Reads: `load_partition` (partition_load.py) reads the place of every batch but the bytes of a bounded
tail only; older bytes are read from PostgreSQL when a read reaches them (`PartitionBatches`,
partition_batches.py: a Fetch waits for them as for new records; a timestamp lookup that needs them
answers KAFKA_STORAGE_ERROR, retriable, until they are in memory: docs/compat.md).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

from kcoord.cluster.migrations import FENCED_SQLSTATE, OFFSET_MISMATCH_SQLSTATE
from kcoord.cluster.node_writer import FlushCall, NodeWriter, Outcome, Refusal
from kcoord.cluster.partition_batches import BatchMeta, PartitionBatches
from kcoord.cluster.partition_rows import TRIM_SQL, StoredBatch
from kcoord.cluster.write_outcome import outcome_unknown
from kcoord.partition_log import PartitionConfig, ProducerStateRow
from kcoord.partition_log.epochs import EpochHistory
from kcoord.partition_log.log import PRODUCER_ID_EXPIRATION_MS
from kcoord.partition_log.producers import CompletedTxn, ProducerEntry, ProducerStates
from kcoord.partition_log.results import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    AppendResult,
    NotLeader,
    OutcomeUnknown,
    ReadResult,
)
from kcoord.partition_log.stamp import stamp
from kcoord.partition_log.txn_index import AbortedTxn, collect_aborted
from kcoord.partition_log.validation import (
    AppendError,
    DuplicateAppend,
    ValidatedAppend,
    check_append,
    marker_append,
)
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import EndTransactionMarker, ProducedBatch

RESOLVE_WITHIN_S = 15.0
"""How long a batch of a call with an unknown outcome waits for the partition's reload to tell."""

__all__ = [
    "RESOLVE_WITHIN_S",
    "PartitionFenced",
    "PartitionWriteFailed",
    "PartitionWriteUnknown",
    "PgPartitionLog",
    "StoredBatch",
]

_FETCH = (
    "SELECT base_offset, batch FROM kcoord_partition_batch "
    "WHERE topic = $1 AND partition = $2 AND base_offset >= $3 ORDER BY base_offset LIMIT $4"
)


class PartitionFenced(NotLeader):
    """PostgreSQL refused the write: another node leads the partition (or this log was closed)."""


class PartitionWriteFailed(Exception):
    """A write PostgreSQL did not commit for another reason (its outcome may be unknown)."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        """PostgreSQL's refusal (OFFSET_MISMATCH_SQLSTATE: memory and table disagree), None if unknown."""


class PartitionWriteUnknown(PartitionWriteFailed, OutcomeUnknown):
    """The call broke after it was sent (write_outcome.py): its batches may be in the table. Answered as
    Kafka answers an acks=all wait that expired (REQUEST_TIMED_OUT: possibly persisted), and the
    partition is reloaded (at a new epoch) before it takes a retry, so the retry meets the batch."""


@dataclass(slots=True)
class _Pending:
    batch: StoredBatch
    producer_id: int
    entry: ProducerEntry | None
    completed: CompletedTxn | None
    aborted: AbortedTxn | None
    append_time_ms: int
    future: asyncio.Future[AppendResult]


class PgPartitionLog:
    """A partition this node leads at lease `epoch`; `pool` is the node's asyncpg pool."""

    def __init__(
        self,
        pool: Any,
        topic: str,
        partition: int,
        epoch: int,
        config: PartitionConfig,
        on_failed: Callable[[PgPartitionLog], None] | None = None,
        writer: NodeWriter | None = None,
    ) -> None:
        self._pool = pool
        self._writer = NodeWriter(pool) if writer is None else writer
        self.topic = topic
        self.partition = partition
        self.epoch = epoch
        self.leader_epoch = epoch  # the lease epoch is the partition's leader epoch (KIP-320)
        self._epochs = EpochHistory([(epoch, 0)])  # `restore` rebuilds it
        self.config = config
        self._on_failed = on_failed
        self.log_start_offset = 0
        self.high_watermark = 0
        self.log_end_offset = 0
        self.producers = ProducerStates()
        self.batches = PartitionBatches(f"{topic}-{partition}", self._fetch, self.notify)
        self._aborted: list[AbortedTxn] = []  # in marker order, so by last offset
        self._listeners: list[Callable[[], None]] = []
        self._queue: list[_Pending] = []
        self._in_flight: list[_Pending] | None = None
        self._abandoned: BaseException | None = None
        self.failure: BaseException | None = None
        self.unresolved: list[_Pending] = []
        """The batches of a call whose outcome is unknown, unanswered until `resolve`."""
        self.calls = 0
        """Flushes that committed this partition's batches (group commit: fewer than appends under load)."""

    def restore(
        self,
        log_start: int,
        log_end: int,
        metas: list[BatchMeta],
        tail: list[StoredBatch],
        producers: dict[int, ProducerEntry],
        aborted: list[AbortedTxn],
        epochs: list[tuple[int, int]],
    ) -> None:
        """The state `load_partition` read from PostgreSQL: every batch's place, the bytes of the
        tail, the producers, aborted transactions and (epoch, start offset) rows; offsets continue
        from `log_end`."""
        self.log_start_offset = log_start
        self.high_watermark = self.log_end_offset = log_end
        self.batches.restore(metas, tail)
        self.producers.load(producers)
        self.producers.remove_expired(time.time_ns() // 1_000_000, PRODUCER_ID_EXPIRATION_MS)
        self._aborted = aborted
        # Kafka's leader reads its epoch cache (leader-epoch-checkpoint), then starts its own epoch at
        # the log end (Partition.makeLeader -> UnifiedLog.assignEpochStartOffset)
        self._epochs = EpochHistory.from_batches(epochs)
        self._epochs.truncate_from_start(log_start)
        self._epochs.assign(self.epoch, log_end)

    async def _fetch(self, base_offset: int, rows: int) -> list[tuple[int, bytes]]:
        """Batches from `base_offset` on, read back from PostgreSQL (committed: no fence needed)."""
        found = await self._pool.fetch(_FETCH, self.topic, self.partition, base_offset, rows)
        return [(int(r[0]), bytes(r[1])) for r in found]

    def epoch_history(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    # -- writing ---------------------------------------------------------------------------------------
    def validate(
        self, records: bytes | ProducedBatch, now_ms: int
    ) -> ValidatedAppend | DuplicateAppend | AppendError:
        checked = check_append(records, self.config, self.producers, now_ms)
        if isinstance(checked, DuplicateAppend) and checked.base_offset >= self.high_watermark:
            # A retry of a batch whose call is still in flight: answered with its offset now, it was
            # acknowledged before it was durable, and lost when that call failed (the chaos run).
            # Kafka answers it once the high watermark passes it (UnifiedLog.append returns the
            # duplicate's offsets, DelayedProduce waits); here the retry is refused, retriable and
            # possibly persisted, and the client's next retry meets the durable copy (docs/compat.md).
            return AppendError(ErrorCode.REQUEST_TIMED_OUT, "the first copy of this batch is not durable yet")
        return checked

    def append(self, validated: ValidatedAppend, now_ms: int | None = None) -> asyncio.Future[AppendResult]:
        return self._append(validated, now_ms, None)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> asyncio.Future[AppendResult] | AppendError:
        now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        made = marker_append(self.producers, producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        if isinstance(made, AppendError):
            return made
        return self._append(made[0], now_ms, made[1])

    def _append(
        self, validated: ValidatedAppend, now_ms: int | None, marker: EndTransactionMarker | None
    ) -> asyncio.Future[AppendResult]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendResult] = loop.create_future()
        if self.failure is not None:
            future.set_exception(self.failure)
            return future
        header = validated.header
        now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        base = self.log_end_offset
        # every batch carries the lease epoch as its partitionLeaderEpoch (outside the CRC)
        data, max_timestamp, append_time = stamp(
            validated.data, header, base, self.config, now_ms, self.epoch
        )
        self.log_end_offset = base + header.last_offset_delta + 1
        entry, completed = self.producers.stage(header, marker, base, max_timestamp)
        aborted = None
        if completed is not None and completed.is_aborted:  # LogSegment.updateTxnIndex
            last_stable = self.producers.last_stable_at_append(completed)
            aborted = AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset, last_stable
            )
        batch = StoredBatch(base, self.log_end_offset - 1, max_timestamp, data)
        self._queue.append(
            _Pending(batch, header.producer_id, entry, completed, aborted, append_time, future)
        )
        self._writer.wake(self)
        return future

    # -- the node writer's side (`node_writer.Writes`) ----------------------------------------------------
    def take(self, call: FlushCall) -> None:
        """Every batch queued since the last call goes into `call` (in offset order)."""
        if self._in_flight is not None or not self._queue:
            return
        self._in_flight, self._queue = self._queue, []
        rows = [(p.batch, p.producer_id, p.entry, p.aborted) for p in self._in_flight]
        call.add_partition(self, self.topic, self.partition, self.epoch, rows)

    def settle(self, outcome: Outcome) -> None:
        batch, self._in_flight = self._in_flight or [], None
        if outcome is None and self._abandoned is not None:  # crashed meanwhile: never acknowledged
            outcome = self._abandoned
        if outcome is not None:
            error = self._error(outcome)
            if isinstance(error, PartitionWriteUnknown):  # perhaps committed: answered once known
                self.unresolved, batch = batch, []
                asyncio.get_running_loop().call_later(RESOLVE_WITHIN_S, self.resolve, None)
            self._fail(batch, error)
            return
        self.calls += 1
        for pending in batch:
            self._written(pending)
        self.notify()

    def _error(self, outcome: Refusal | BaseException) -> BaseException:
        name = f"{self.topic}-{self.partition}"
        if isinstance(outcome, (PartitionFenced, PartitionWriteFailed)):
            return outcome
        if outcome is Refusal.FENCED:
            return PartitionFenced(f"{name}: epoch {self.epoch} fenced: another node leads the partition")
        if outcome is Refusal.MOVED:
            return PartitionWriteFailed(f"{name}: the stored log end moved", OFFSET_MISMATCH_SQLSTATE)
        if outcome_unknown(outcome):  # checked first: a lost connection is a PostgresError to asyncpg
            return PartitionWriteUnknown(f"{name}: the batch's outcome is unknown: {outcome!r}")
        if isinstance(outcome, asyncpg.PostgresError):
            return PartitionWriteFailed(f"{name}: PostgreSQL refused the batch: {outcome}", outcome.sqlstate)
        return PartitionWriteFailed(f"{name}: the writer stopped: {outcome!r}")

    def _written(self, pending: _Pending) -> None:
        batch = pending.batch
        self.batches.add(batch)
        self.high_watermark = batch.last_offset + 1
        if pending.entry is not None:
            self.producers.make_durable(pending.producer_id, pending.entry, pending.completed)
        if pending.aborted is not None:
            self._aborted.append(pending.aborted)
        pending.future.set_result(
            AppendResult(batch.base_offset, pending.append_time_ms, self.log_start_offset)
        )

    def _fail(self, batch: list[_Pending], error: BaseException) -> None:
        if self.failure is None or isinstance(error, PartitionFenced):
            self.failure = error
        queued, self._queue = self._queue, []
        self.log_end_offset = self.high_watermark
        self.producers.failed()
        for pending in batch + queued:
            if not pending.future.done():
                pending.future.set_exception(error)
        if self._on_failed is not None:
            self._on_failed(self)

    def resolve(self, stored_end: int | None) -> None:
        """The verdict on the call whose outcome was unknown, read from the table by `ClusterPartitions
        .reload` after it fenced this log's epoch (so the call can no longer commit, and nothing else
        wrote since): a batch below the stored log end `stored_end` was committed and is acknowledged
        at its offset, the others were not. None: not known (the lease moved on, or no reload within
        RESOLVE_WITHIN_S), answered as Kafka answers an acks=all wait that expired (REQUEST_TIMED_OUT).
        Answering a committed batch with an error instead let the client send it again under a new
        producer epoch (librdkafka's epoch bump renumbers every unacknowledged batch): a duplicate."""
        unresolved, self.unresolved = self.unresolved, []
        for pending in unresolved:
            if pending.future.done():
                continue
            batch = pending.batch
            if stored_end is not None and batch.last_offset < stored_end:
                result = AppendResult(batch.base_offset, pending.append_time_ms, self.log_start_offset)
                pending.future.set_result(result)
            elif stored_end is not None:  # known not written: the client's retry is appended
                pending.future.set_exception(
                    PartitionWriteFailed(f"{self.topic}-{self.partition}: not written")
                )
            else:
                pending.future.set_exception(self.failure or PartitionWriteUnknown("outcome unknown"))

    @property
    def pending(self) -> bool:
        return bool(self._queue) or self._in_flight is not None

    async def flush(self) -> None:
        while self.pending:
            await self._writer.next_flush()

    def abandon(self) -> None:
        """A crash: nothing queued is written or answered; a call in flight for it (shared with the
        node's other logs) ends, and its batches are failed, never acknowledged."""
        self.failure = self.failure or PartitionFenced(f"{self.topic}-{self.partition}: abandoned")
        self._abandoned = self.failure
        self._queue.clear()
        self.unresolved = []  # never answered, as nothing else after a crash
        self._writer.forget(self)
        self.batches.close()

    async def close(self) -> None:
        """Refuse later appends; let those already made settle (the partition is handed over)."""
        if self.failure is None:
            self.failure = PartitionFenced(f"{self.topic}-{self.partition}: no longer led here")
        await self.flush()
        self.batches.close()

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

    # -- log start and retention -----------------------------------------------------------------------
    async def move_log_start(self, offset: int) -> int:
        """As PartitionLog.move_log_start, fenced by the lease epoch (`kcoord_partition_trim`)."""
        first_unstable = self.producers.first_unstable_offset
        if first_unstable is not None:
            offset = min(offset, first_unstable)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        try:
            start = int(await self._pool.fetchval(TRIM_SQL, self.topic, self.partition, self.epoch, offset))
        except asyncpg.PostgresError as exc:
            if exc.sqlstate == FENCED_SQLSTATE:
                raise PartitionFenced(f"{self.topic}-{self.partition}: epoch {self.epoch} fenced") from exc
            raise
        self.log_start_offset = max(self.log_start_offset, start)
        self._epochs.truncate_from_start(self.log_start_offset)  # UnifiedLog.maybeIncrementLogStartOffset
        self.batches.trim(self.log_start_offset)
        self._aborted = [t for t in self._aborted if t.last_offset >= self.log_start_offset]
        return self.log_start_offset

    def delete_records(self, before_offset: int) -> asyncio.Future[int]:
        if before_offset > self.high_watermark:
            raise ValueError(f"offset {before_offset} is above the high watermark {self.high_watermark}")
        return asyncio.ensure_future(self.move_log_start(before_offset))

    @property
    def size(self) -> int:
        """Bytes of the partition's batches held (DescribeLogDirs' partition_size)."""
        return self.batches.size

    def expired_start(self, now_ms: int) -> int | None:
        """The log start retention asks for (deleteRetentionMs/SizeBreachedSegments), batch by batch;
        never past the last stable offset (an open transaction or a write in flight)."""
        total = self.size
        bound = self.last_stable_offset
        start = None
        for batch in self.batches.metas[:-1]:  # Kafka never deletes the active segment: keep the newest
            if batch.last_offset + 1 > bound:
                break
            by_time = (
                self.config.retention_ms >= 0 and now_ms - batch.max_timestamp > self.config.retention_ms
            )
            by_size = self.config.retention_bytes >= 0 and total - batch.size >= self.config.retention_bytes
            if not (by_time or by_size):
                break
            total -= batch.size
            start = batch.last_offset + 1
        return start if start is not None and start > self.log_start_offset else None
