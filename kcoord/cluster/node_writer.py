"""A node's writes to PostgreSQL, one fenced call per flush (issue 35 item 1): every shard log
(`ShardRecordLog`) and partition log (`PgPartitionLog`) with writes queued hands them to the node's
`NodeWriter`, which sends them all in one `kcoord_flush` call (migration 4).

Why: one call per shard and per partition made the round trips, the statement planning and the
commit (one WAL flush each) the cost of a durable commit, not the rows (docs/cluster.md, "Cost").

* group commit: one call in flight per node; whatever is queued meanwhile goes into the next call.
  A log takes its whole queue into a call, so its writes stay in order and it is in one call at a time;
* fenced as before, per shard and per partition in the same transaction: PostgreSQL writes only the
  ones still held at their epoch (and, for a partition, ending where its batches start) and names
  the others; a refused log fails alone (`Refusal`), the rest of the call commits;
* a call that failed (a database error, a broken connection: outcome unknown, a timeout) fails every
  log in it: nothing of it is acknowledged, and each log is fail-stop as before.

Kafka's coordinator runtime likewise batches a partition's writes (`CoordinatorRuntime`'s
`CoordinatorBatch`, appended by `CoordinatorPartitionWriter.append`), one batch per partition;
here one transaction carries every partition's batch, as PostgreSQL commits once per transaction
(Kafka: `CoordinatorRuntime.CoordinatorContext.flushCurrentBatch`; a failed batch fails every write in
it, `failCurrentBatch`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from kcoord import storage
from kcoord.cluster.partition_rows import Row, encode_batches
from kcoord.cluster.pg import COMMAND_TIMEOUT_S
from kcoord.partition_log.producers import ProducerEntry
from kcoord.protocol.record_batch import read_header

__all__ = ["CALL_BYTES", "FLUSH_SQL", "FlushCall", "NodeWriter", "Outcome", "Refusal", "Writes"]

log = logging.getLogger(__name__)

FLUSH_SQL = "SELECT * FROM kcoord_flush(" + ", ".join(f"${i}" for i in range(1, 34)) + ")"

CALL_BYTES = 768 << 10
"""A call takes no more logs, and a partition log no more batches, once it carries this many bytes (at
least one batch): what is left goes into the next call, at once. Under a produce load the group commit
gathered 1 to 7 MiB a call, and the backend's copies of arguments that large (the message, the arrays,
plpgsql's expanded array) page-faulted fresh memory each call: a quarter of its CPU, 6.8 ms per MiB
stored against 4.0 with calls of 768 KiB (bench.cluster_flush --perf, docs/cluster.md)."""


class Refusal(enum.Enum):
    """Why `kcoord_flush` wrote nothing of one log while it wrote the others."""

    FENCED = "fenced"
    """Not held at the log's epoch: another node took the shard or partition over."""
    MOVED = "moved"
    """A partition's stored log end is not where the log's batches start (memory and table differ)."""


Outcome = Refusal | BaseException | None
"""A log's share of a call: None committed, a `Refusal`, or the error that failed the whole call."""


class Writes(Protocol):
    """A log whose writes a `NodeWriter` sends."""

    def take(self, call: FlushCall) -> None:
        """Move everything queued into `call` (`add_shard` / `add_partition`), or nothing."""

    def settle(self, outcome: Outcome) -> None:
        """The verdict on what `take` put into the call (every queued write, on a failure)."""


class FlushCall:
    """The arguments of one `kcoord_flush` call, and which log each part came from."""

    def __init__(self, max_bytes: int = CALL_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        """Bytes of keys, values and batches added so far."""
        self.writers: list[Writes] = []
        self._shards: dict[int, Writes] = {}
        self._partitions: list[Writes] = []  # index + 1 is the partition's number in the call
        self._s: tuple[list[Any], ...] = ([], [], [])  # shard, epoch, last lsn
        self._r: tuple[list[Any], ...] = ([], [], [], [], [])  # shard, type, key, value, lsn
        self._p: tuple[list[Any], ...] = ([], [], [], [], [])  # topic, partition, epoch, start, end
        self._b: tuple[list[Any], ...] = tuple([] for _ in range(8))
        self._e: tuple[list[Any], ...] = tuple([] for _ in range(7))
        self._a: tuple[list[Any], ...] = tuple([] for _ in range(5))

    def __bool__(self) -> bool:
        return bool(self.writers)

    @property
    def room(self) -> int:
        """Bytes this call still takes before it is full (`CALL_BYTES`); at most 0."""
        return self.max_bytes - self.bytes

    def add_shard(
        self, writer: Writes, shard: int, epoch: int, records: Sequence[storage.Record], first_lsn: int
    ) -> None:
        """A shard's records, numbered from `first_lsn` (kcoord_append's arguments)."""
        if shard in self._shards:
            raise ValueError(f"shard {shard} twice in one call")
        self._shards[shard] = writer
        self.writers.append(writer)
        for column, value in zip(self._s, (shard, epoch, first_lsn + len(records) - 1), strict=True):
            column.append(value)
        types, keys, values, lsns = self._r[1:]
        self._r[0].extend([shard] * len(records))
        for lsn, record in enumerate(records, first_lsn):
            types.append(record.type)
            keys.append(record.key)
            values.append(record.value)
            lsns.append(lsn)
            self.bytes += len(record.key) + len(record.value or b"")

    def add_partition(
        self, writer: Writes, topic: str, partition: int, epoch: int, rows: Sequence[Row]
    ) -> None:
        """A partition's consecutive batches (kcoord_partition_append's arguments, `append_args`): the
        batches, the newest entry of each producer among them, the aborted transactions they end."""
        self._partitions.append(writer)
        self.writers.append(writer)
        number = len(self._partitions)
        start, end = rows[0][0].base_offset, rows[-1][0].last_offset + 1
        for column, value in zip(self._p, (topic, partition, epoch, start, end), strict=True):
            column.append(value)
        producers: dict[int, ProducerEntry] = {}
        for batch, producer_id, entry, aborted in rows:
            header = read_header(batch.data)
            stored = (number, batch.base_offset, batch.last_offset, batch.max_timestamp)
            values = (*stored, header.producer_id, header.producer_epoch, header.base_sequence, batch.data)
            for column, value in zip(self._b, values, strict=True):
                column.append(value)
            self.bytes += len(batch.data)
            if entry is not None:
                producers[producer_id] = entry
            if aborted is not None:
                txn = (number, aborted.producer_id, aborted.first_offset, aborted.last_offset,
                       aborted.last_stable_offset)  # fmt: skip
                for column, value in zip(self._a, txn, strict=True):
                    column.append(value)
        for producer_id, entry in producers.items():
            state = (number, producer_id, entry.epoch, entry.coordinator_epoch, entry.last_timestamp,
                     entry.current_txn_first_offset, encode_batches(entry))  # fmt: skip
            for column, value in zip(self._e, state, strict=True):
                column.append(value)

    def args(self) -> list[Any]:
        return [*self._s, *self._r, *self._p, *self._b, *self._e, *self._a]

    def refusals(self, row: Any) -> dict[Writes, Refusal]:
        """The logs `kcoord_flush`'s answer names, and why."""
        refused: dict[Writes, Refusal] = {}
        for shard in row["fenced_shards"]:
            refused[self._shards[int(shard)]] = Refusal.FENCED
        for number in row["fenced_partitions"]:
            refused[self._partitions[int(number) - 1]] = Refusal.FENCED
        for number in row["moved_partitions"]:
            refused[self._partitions[int(number) - 1]] = Refusal.MOVED
        return refused


class NodeWriter:
    """The one writer of a node's shard and partition logs over its asyncpg `pool`."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._dirty: dict[Writes, None] = {}  # an ordered set: logs with writes queued
        self._task: asyncio.Task[None] | None = None
        self._flushed: asyncio.Future[None] | None = None
        # Held while the writer is busy, given back when it goes idle: a pool call per flush paid
        # the pool's release, which resets the session (asyncpg `Connection.reset`, a round trip of
        # its own), about a third of the node's database time per commit in the profile.
        self._conn: Any = None
        self.calls = 0
        """`kcoord_flush` calls committed."""
        self.writes = 0
        """Logs' shares of those calls (writes / calls: how many logs a call carries)."""

    def wake(self, writes: Writes) -> None:
        """`writes` has something queued: it goes into the next call."""
        self._dirty[writes] = None
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="kcoord-node-writer")

    def forget(self, writes: Writes) -> None:
        """`writes` dropped its queue (a crash): nothing of it goes into a later call."""
        self._dirty.pop(writes, None)

    async def next_flush(self) -> None:
        """Until the call in flight (if any) has settled its logs; a log waits for its own writes so,
        not for the writer to go idle, which under load from other logs it may never be."""
        if self._task is None:
            return
        if self._flushed is None:
            self._flushed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._flushed)

    async def _run(self) -> None:
        call, dirty = FlushCall(), list[Writes]()
        try:
            while self._dirty:
                dirty, self._dirty = list(self._dirty), {}
                call = FlushCall()
                for index, writes in enumerate(dirty):
                    if call.room <= 0:  # full: the others go first into the next call
                        self._dirty = {**dict.fromkeys(dirty[index:]), **self._dirty}
                        break
                    writes.take(call)
                if call:
                    outcomes = await self._send(call)
                    for writes in call.writers:
                        writes.settle(outcomes.get(writes))
                call, dirty = FlushCall(), []
                self._wake_waiters()
        except BaseException as exc:  # cancelled, or a bug: every write is still answered, once
            if self._conn is not None:  # perhaps cancelled mid-call: its session is never reused
                self._conn.terminate()
            for writes in dict.fromkeys([*call.writers, *dirty, *self._dirty]):
                writes.settle(exc)
            self._dirty = {}
            raise
        finally:
            self._task = None
            self._wake_waiters()
            await self._give_back()

    async def _send(self, call: FlushCall) -> dict[Writes, Outcome]:
        try:
            if self._conn is None:
                self._conn = await self._pool.acquire()
            row = await self._conn.fetchrow(FLUSH_SQL, *call.args())
        except Exception as exc:  # the whole call failed: no log's share of it is acknowledged
            await self._give_back(broken=True)
            return dict.fromkeys(call.writers, exc)
        self.calls += 1
        self.writes += len(call.writers)
        return dict(call.refusals(row))

    async def _give_back(self, *, broken: bool = False) -> None:
        """Return the held connection to the pool. After a failed call its state is unknown (a
        statement timed out against a silent database, its cancel perhaps still waiting): it is
        closed at once, never reset, which would wait for that database (the answers wait for this)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if broken:
            conn.terminate()
        try:
            await self._pool.release(conn, timeout=COMMAND_TIMEOUT_S)
        except Exception as exc:  # the pool terminates a connection it cannot reset; nothing to do
            log.warning("node writer: giving its connection back failed: %r", exc)

    def _wake_waiters(self) -> None:
        flushed, self._flushed = self._flushed, None
        if flushed is not None and not flushed.done():
            flushed.set_result(None)
