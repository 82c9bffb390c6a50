"""A shard's records in PostgreSQL: `ShardRecordLog`, the coordinators' `RecordLog` port
(`kcoord/coordinator/runtime/ports.py`) for one owned shard, and `load_shard`, its replay source.

The bytes are the local log's: every domain record goes through `persistence.codec.to_storage`
(the `__consumer_offsets` key and value schemas) into `kcoord_record (shard, type, key, value, lsn)`,
and `load_shard` hands back `storage.Record`s that `persistence.Replayer.apply` (or `from_storage`)
reads as it reads a recovered local log. The table holds the newest value of each key, as the local
log after compaction; a tombstone deletes the row, and `lsn` keeps the order of the newest writes.

Writes (Kafka: `CoordinatorPartitionWriter.append` then the high watermark acknowledging it):
* group commit: the node's `NodeWriter` (node_writer.py) has one `kcoord_flush` call in flight for
  all its shards and partitions; appends that arrive meanwhile go into the next call, each append
  still atomic (one call is one transaction);
* fenced: the call carries this owner's lease epoch, and PostgreSQL writes nothing of the shard
  once another node took it over (the other logs of the call commit): `on_done(LeaseLost(...))`;
* fail-stop: after any failed call the log refuses every later append. A refused or rolled-back
  batch was undone in memory by the runtime, and appends queued behind it may depend on it; a
  broken connection leaves the outcome unknown. Either way memory may no longer match the table,
  so the owner unloads the shard and loads it again (or hands it over): the local log likewise
  stops the server on a failed fsync. Every append failure answers NOT_COORDINATOR (groups/errors.py).
* `lsn = epoch << 40 | n`: a new owner's epoch is higher than every earlier one, so its records
  sort after everything an earlier owner wrote without reading the old counter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from kcoord import storage
from kcoord.cluster.node_writer import FlushCall, NodeWriter, Outcome, Refusal
from kcoord.cluster.pg import LOAD_TIMEOUT_S
from kcoord.cluster.write_outcome import outcome_unknown
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    GroupTombstone,
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.groups.share.records import SHARE_RECORD_CLASSES
from kcoord.coordinator.persistence.codec import AnyRecord, to_storage
from kcoord.coordinator.runtime.ports import OnDone
from kcoord.coordinator.transactions.records import TransactionRecord

__all__ = [
    "LSN_EPOCH_SHIFT",
    "LeaseLost",
    "ShardLogError",
    "ShardLogFailed",
    "ShardRecordLog",
    "load_rows",
    "load_shard",
    "row_record",
    "shard_key",
]

LSN_EPOCH_SHIFT = 40
_MAX_EPOCH = (1 << (63 - LSN_EPOCH_SHIFT)) - 1
_MAX_COUNTER = (1 << LSN_EPOCH_SHIFT) - 1

_LOAD = "SELECT type, key, value, lsn FROM kcoord_record WHERE shard = $1 ORDER BY lsn"

_GROUP_KEYED = (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
    OffsetCommitRecord,
    OffsetTombstone,
    GroupMetadataRecord,
    GroupTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
    *SHARE_RECORD_CLASSES,  # a share group's membership and assignment too (issue 34), as Kafka's keys 10-15
)


def shard_key(record: AnyRecord) -> str | None:
    """The id whose shard holds `record` (`shards.shard_of`): the group id of group and offset
    records (a pending transactional offset belongs to its group, as in Kafka), the transactional
    id of a transaction's record; None for cluster-wide metadata (topics, producer id blocks, ACLs,
    SCRAM credentials, and a group's own configs: Kafka keeps them as ConfigRecords of the metadata log,
    which every broker applies, so a share partition's leader reads them wherever the group's shard
    is, issue 34), which no shard holds."""
    if isinstance(record, _GROUP_KEYED):
        return record.group_id
    if isinstance(record, TransactionRecord):
        return record.transactional_id
    return None


class ShardLogError(Exception):
    """An append a `ShardRecordLog` could not make durable; the shard must be reloaded."""

    def __init__(self, shard: int, message: str) -> None:
        super().__init__(f"shard {shard}: {message}")
        self.shard = shard


class LeaseLost(ShardLogError):
    """PostgreSQL refused the batch: `epoch` is no longer the shard's (another node took it over).
    Nothing of the batch was written."""

    def __init__(self, shard: int, epoch: int) -> None:
        super().__init__(shard, f"lease epoch {epoch} is no longer current: another node owns the shard")
        self.epoch = epoch


class ShardLogFailed(ShardLogError):
    """Any other failure (database error, broken connection: outcome unknown, or the log closed)."""

    def __init__(self, shard: int, message: str, cause: BaseException | None = None) -> None:
        super().__init__(shard, message)
        self.cause = cause


_Pending = tuple[list[storage.Record], OnDone]


class ShardRecordLog:
    """The `RecordLog` of one shard owned at lease `epoch`, over an asyncpg `pool`; its writes go
    through `writer`, the node's `NodeWriter` (one of its own when None: a log alone on its pool).

    Callbacks run on the event loop, in append order, never inside `append` itself (they are
    scheduled with `call_soon`), so a refused append is reported in order too.
    """

    def __init__(
        self,
        pool: Any,
        shard: int,
        epoch: int,
        on_durable: Callable[[Sequence[storage.Record], Sequence[int]], None] | None = None,
        writer: NodeWriter | None = None,
    ) -> None:
        if not 0 < epoch <= _MAX_EPOCH:
            raise ValueError(f"epoch {epoch} outside 1..{_MAX_EPOCH}")
        # Told each committed append as (records, their lsns) before its on_done: the
        # `__consumer_offsets` view's partition of this shard (kcoord/broker/topics/offsets_topic.py).
        self._on_durable = on_durable
        self._writer = NodeWriter(pool) if writer is None else writer
        self.shard = shard
        self.epoch = epoch
        self._counter = 0
        self._pending: list[_Pending] = []
        self._in_flight: list[_Pending] | None = None
        self._first = 0  # the lsn of the in-flight batch's first record
        self.failure: ShardLogError | None = None
        """Set once: every append after it is refused with it."""
        self.batches = 0
        """Flushes that committed this shard's appends (group commit: fewer than appends under load)."""
        self.records = 0

    @property
    def last_lsn(self) -> int:
        """The lsn of the newest record numbered (committed or in flight); epoch << 40 before any."""
        return self.epoch << LSN_EPOCH_SHIFT | self._counter

    def append(self, records: Sequence[AnyRecord], on_done: OnDone) -> None:
        loop = asyncio.get_running_loop()
        if self.failure is not None:
            loop.call_soon(on_done, self.failure)
            return
        self._pending.append(([to_storage(r) for r in records], on_done))
        self._writer.wake(self)

    async def flush(self) -> None:
        """Until every append made so far has settled and its `on_done` ran."""
        while self._pending or self._in_flight is not None:
            await self._writer.next_flush()
        await asyncio.sleep(0)  # the callbacks the last batch scheduled

    async def close(self) -> None:
        """Refuse later appends; let those already made settle (the shard is being handed over)."""
        if self.failure is None:
            self.failure = ShardLogFailed(self.shard, "the shard's log is closed")
        await self.flush()

    # -- the node writer's side (`node_writer.Writes`) ----------------------------------------------------
    def take(self, call: FlushCall) -> None:
        """Everything appended since the last call goes into `call`, numbered from the next lsn."""
        if self._in_flight is not None or not self._pending:
            return
        batch, self._pending = self._pending, []
        records = [record for appended, _ in batch for record in appended]
        if self._counter + len(records) > _MAX_COUNTER:
            error = ShardLogFailed(self.shard, f"2**40 records in epoch {self.epoch}: reload the shard")
            self._fail(batch, error)
            return
        self._first = self.epoch << LSN_EPOCH_SHIFT | (self._counter + 1)
        self._counter += len(records)
        self._in_flight = batch
        if records:
            call.add_shard(self, self.shard, self.epoch, records, self._first)
        else:  # appends of no records: durable at once, in order
            self.settle(None)

    def settle(self, outcome: Outcome) -> None:
        batch, self._in_flight = self._in_flight or [], None
        if outcome is None:
            self.batches += 1
            self.records += sum(len(records) for records, _ in batch)
            self._tell(batch, self._first)
            self._settle(batch, None)
        else:
            self._fail(batch, self._error(outcome))

    def _error(self, outcome: Refusal | BaseException) -> ShardLogError:
        if outcome is Refusal.FENCED:
            return LeaseLost(self.shard, self.epoch)
        if isinstance(outcome, BaseException) and outcome_unknown(outcome):
            # before PostgresError: asyncpg files a lost connection under it (write_outcome.py)
            return ShardLogFailed(self.shard, f"the batch's outcome is unknown: {outcome!r}", outcome)
        if isinstance(outcome, asyncpg.PostgresError):
            return ShardLogFailed(self.shard, f"PostgreSQL refused the batch: {outcome}", outcome)
        cause = outcome if isinstance(outcome, BaseException) else None
        return ShardLogFailed(self.shard, f"the writer stopped: {outcome!r}", cause)

    def _tell(self, batch: list[_Pending], first: int) -> None:
        """The lsns the call gave the batch's records, in order from `first`: scheduled like the
        answers (and before them), so a failing listener is the loop's to report, never the batch's."""
        if (listener := self._on_durable) is None:
            return
        loop = asyncio.get_running_loop()
        for records, _ in batch:
            loop.call_soon(listener, records, range(first, first + len(records)))
            first += len(records)

    def _fail(self, batch: list[_Pending], error: ShardLogError) -> None:
        if self.failure is None or isinstance(error, LeaseLost):  # the fence's verdict is the news
            self.failure = error
        queued, self._pending = self._pending, []
        self._settle(batch, error)
        self._settle(queued, error)

    @staticmethod
    def _settle(batch: list[_Pending], error: BaseException | None) -> None:
        loop = asyncio.get_running_loop()
        for _, on_done in batch:
            loop.call_soon(on_done, error)


async def load_rows(pool: Any, shard: int) -> list[Any]:
    """The shard's rows as `(type, key, value, lsn)` in lsn order (asyncpg records; `row_record`
    makes one a storage record). Call it after `ShardLeases.acquire`: the epoch bump committed
    first, so every batch a previous owner had acknowledged is visible, and none it will ever try
    again can commit.

    The table holds only the newest record of each live key (an upsert replaces a key's row, a
    tombstone deletes it), as a compacted `__consumer_offsets` partition does after its cleaner ran:
    a load reads the shard's live state, however often its keys were written."""
    rows: list[Any] = await pool.fetch(_LOAD, shard, timeout=LOAD_TIMEOUT_S)
    return rows


def row_record(row: Any) -> storage.Record:
    return storage.Record(row[0], row[1], row[2])


async def load_shard(pool: Any, shard: int, lsns: list[int] | None = None) -> list[storage.Record]:
    """The shard's records in lsn order, as the storage records a `Replayer` applies (their lsns
    appended to `lsns` when given); see `load_rows`."""
    rows = await load_rows(pool, shard)
    if lsns is not None:
        lsns.extend(int(row[3]) for row in rows)
    return [row_record(row) for row in rows]
