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
  partition (at a new epoch) or gives it up (the errors: partition_errors.py);
* a call of unknown outcome (write_outcome.py: it may have committed) answers nothing of its batches
  until `resolve` gives the verdict the reload read (`ClusterPartitions._resolve`), and a retry of a
  batch still in flight is refused rather than acknowledged before it is durable (`validate`).

Reads are answered from memory by the base class (partition_reads.py); `load_partition`
(partition_load.py) reads the place of every batch but the bytes of a bounded
tail only; older bytes are read from PostgreSQL when a read reaches them (`PartitionBatches`,
partition_batches.py: a Fetch waits for them as for new records; a timestamp lookup that needs them
answers KAFKA_STORAGE_ERROR, retriable, until they are in memory: docs/compat.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from kcoord.cluster.doubt import StoredIdentity, same_batch
from kcoord.cluster.migrations import FENCED_SQLSTATE
from kcoord.cluster.node_writer import FlushCall, NodeWriter, Outcome
from kcoord.cluster.partition_batches import BatchMeta
from kcoord.cluster.partition_errors import (
    PartitionFenced,
    PartitionWriteFailed,
    PartitionWriteUnknown,
    write_error,
)
from kcoord.cluster.partition_reads import PartitionReads
from kcoord.cluster.partition_rows import TRIM_SQL, StoredBatch
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.epochs import EpochHistory
from kcoord.partition_log.log import PRODUCER_ID_EXPIRATION_MS
from kcoord.partition_log.producers import CompletedTxn, ProducerEntry
from kcoord.partition_log.results import AppendResult
from kcoord.partition_log.stamp import stamp
from kcoord.partition_log.txn_index import AbortedTxn
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


@dataclass(slots=True)
class _Pending:
    batch: StoredBatch
    producer_id: int
    entry: ProducerEntry | None
    completed: CompletedTxn | None
    aborted: AbortedTxn | None
    append_time_ms: int
    future: asyncio.Future[AppendResult]


class PgPartitionLog(PartitionReads):
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
        super().__init__(pool, topic, partition)
        self._writer = NodeWriter(pool) if writer is None else writer
        self.epoch = epoch
        self.leader_epoch = epoch  # the lease epoch is the partition's leader epoch (KIP-320)
        self._epochs = EpochHistory([(epoch, 0)])  # `restore` rebuilds it
        self.config = config
        self._on_failed = on_failed
        self.log_end_offset = 0
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
            # duplicate's offsets, DelayedProduce waits): so does this, with the first copy's answer.
            first = self._not_durable(checked.base_offset)
            if first is not None:
                return DuplicateAppend(checked.base_offset, first)
            return AppendError(ErrorCode.REQUEST_TIMED_OUT, "the first copy of this batch is not durable yet")
        return checked

    def _not_durable(self, base_offset: int) -> asyncio.Future[AppendResult] | None:
        """The append future of the batch at `base_offset` queued, in flight or in doubt here."""
        in_flight: list[_Pending] = self._in_flight or []
        for pending in (*self._queue, *in_flight, *self.unresolved):
            if pending.batch.base_offset == base_offset:
                return pending.future
        return None

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
        """The batches queued since the last call go into `call` in offset order, as many as it has
        room for (at least one: `node_writer.CALL_BYTES`); the rest wait for the next call."""
        if self._in_flight is not None or not self._queue:
            return
        count, room = 0, call.room
        for pending in self._queue:
            if count and len(pending.batch.data) > room:
                break
            count, room = count + 1, room - len(pending.batch.data)
        self._in_flight, self._queue = self._queue[:count], self._queue[count:]
        rows = [(p.batch, p.producer_id, p.entry, p.aborted) for p in self._in_flight]
        call.add_partition(self, self.topic, self.partition, self.epoch, rows)

    def settle(self, outcome: Outcome) -> None:
        batch, self._in_flight = self._in_flight or [], None
        if outcome is None and self._abandoned is not None:  # crashed meanwhile: never acknowledged
            outcome = self._abandoned
        if outcome is not None:
            error = write_error(f"{self.topic}-{self.partition}", self.epoch, outcome)
            if isinstance(error, PartitionWriteUnknown):  # perhaps committed: answered once known
                self.unresolved, batch = batch, []
                asyncio.get_running_loop().call_later(RESOLVE_WITHIN_S, self.resolve, None)
            self._fail(batch, error)
            return
        self.calls += 1
        for pending in batch:
            self._written(pending)
        if self._queue:  # what did not fit into the call goes into the next
            self._writer.wake(self)
        self.notify()

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

    def unresolved_offsets(self) -> list[int]:
        return [p.batch.base_offset for p in self.unresolved]

    def resolve_stored(self, stored: Mapping[int, StoredIdentity]) -> None:
        """The verdict read from the table after another epoch fenced the call (kcoord/cluster/doubt.py):
        a batch found at its base offset was stored and is acknowledged there; the others never will be
        and are answered NOT_LEADER_OR_FOLLOWER (not persisted: the client retries with its sequence)."""
        unresolved, self.unresolved = self.unresolved, []
        for pending in unresolved:
            if pending.future.done():
                continue
            batch = pending.batch
            if same_batch(stored.get(batch.base_offset), batch.base_offset, batch.last_offset, batch.data):
                result = AppendResult(batch.base_offset, pending.append_time_ms, self.log_start_offset)
                pending.future.set_result(result)
            else:
                pending.future.set_exception(
                    PartitionFenced(f"{self.topic}-{self.partition}: not written; another epoch leads")
                )

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

    def expired_start(self, now_ms: int) -> int | None:
        """The log start retention asks for, never past the last stable offset (an open transaction
        or a write in flight): `PartitionBatches.expired_start`."""
        config = self.config
        return self.batches.expired_start(
            now_ms,
            self.last_stable_offset,
            self.log_start_offset,
            config.retention_ms,
            config.retention_bytes,
        )
