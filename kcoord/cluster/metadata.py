"""Cluster-wide records in PostgreSQL (`kcoord_metadata`, migration 2) and producer id blocks.

* `MetadataLog` is the `RecordLog` of the records no shard holds (`shard_key` None: topics, ACLs,
  SCRAM credentials). Appends are written in order, one call at a time, through
  `kcoord_metadata_put`, which stamps each row with a sequence number and notifies the nodes.
* `catch_up(apply)` reads the rows past the last sequence number seen and hands them to `apply`
  (a `Replayer`'s): every node replays the table at start and then follows it on a notification or
  a poll. Before the writer answers, `settle(seq)` waits until every live node has applied the
  change (kcoord/cluster/metadata_sync.py: read-your-writes across nodes, bounded by the lease TTL).
  The writer applies its own change when it is durable, as on a single node, and also when it reads
  it back: the owners' `apply` keep the newest value, so that is harmless. A group's configs are the
  exception (the group coordinator's `apply` keeps the last one applied): when another node's newer
  row of the same group was followed here before the writer's own apply, that row is applied again
  after it (`_reapply_newer`, and at the following catch_ups for a while: `_recheck`), so every node
  ends with the row of the highest `seq`.
* A topic record carries its topic id as the row's identity: PostgreSQL refuses it when the name is
  another topic's (IDENTITY_TAKEN_SQLSTATE), and the append fails with `TopicExists`, nothing
  written. So of two nodes creating one name at once the second loses, as Kafka's controller
  answers TOPIC_ALREADY_EXISTS (ReplicationControlManager.createTopics), and follows the winner.
* `ClusterProducerIds` hands out producer ids from blocks of 1,000 numbered by a PostgreSQL
  sequence (Kafka: the controller's ProducerIdControlManager hands out blocks; a block number is
  never handed out twice, so two nodes never give out the same id, across crashes too).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kcoord import storage
from kcoord.cluster.migrations import IDENTITY_TAKEN_SQLSTATE, STALE_METADATA_SQLSTATE
from kcoord.coordinator.groups.group_configs import GroupConfigRecord, GroupConfigsChanged
from kcoord.coordinator.metadata import TopicExists, TopicRecord
from kcoord.coordinator.metadata.producer_ids import BLOCK_SIZE, ProducerIdBlock, ProducerIds
from kcoord.coordinator.persistence.codec import AnyRecord, to_storage
from kcoord.coordinator.persistence.group_config_codec import GROUP_CONFIG_RECORD_TYPE
from kcoord.coordinator.runtime.ports import OnDone

__all__ = ["METADATA_CHANNEL", "ClusterProducerIds", "MetadataLog"]

log = logging.getLogger("kcoord.cluster")

METADATA_CHANNEL = "kcoord_metadata"
_PUT = "SELECT kcoord_metadata_put($1::smallint[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bigint[])"
_SINCE = "SELECT type, key, value, seq FROM kcoord_metadata WHERE seq > $1 ORDER BY seq"
_NEXT_BLOCK = "SELECT nextval('kcoord_producer_id_block')"
# How long a group config this node wrote is checked against newer rows at each catch_up: past any
# write of the same request (a shard's: the 5 s statement timeout, then its cancel's)
_RECHECK_S = 30.0


class MetadataLog:
    """The cluster-wide records' `RecordLog` and follower, over an asyncpg pool."""

    def __init__(self, pool: Any, settle: Callable[[int], Awaitable[object]] | None = None) -> None:
        self._pool = pool
        self._settle = settle  # after a put, before the caller hears: wait for the other nodes
        self._pending: list[tuple[Sequence[AnyRecord], OnDone, list[int | None] | None]] = []
        self._task: asyncio.Task[None] | None = None
        self.last_seq = 0
        self._reading = asyncio.Lock()
        self._apply: Callable[[storage.Record], None] | None = None  # the follower's, from catch_up
        self._group_configs: dict[bytes, tuple[int, storage.Record]] = {}  # key -> newest (seq, row) followed
        self._written: dict[bytes, tuple[int, float]] = {}  # group configs written here: key -> (seq, until)

    def append(self, records: Sequence[AnyRecord], on_done: OnDone) -> None:
        self._pending.append((records, on_done, self._expected(records)))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write(), name="kcoord-metadata-writer")

    async def _write(self) -> None:
        try:
            while self._pending:
                (records, on_done, expected), *rest = self._pending
                self._pending = rest
                error, seq = await self._put(records, expected)
                if error is None and self._settle is not None:
                    try:
                        await self._settle(seq)
                    except Exception as exc:  # durable already: answered, the followers' poll catches up
                        log.warning("cluster metadata seq %d: waiting for the nodes failed: %r", seq, exc)
                on_done(error)
                if error is None:
                    self._reapply_newer(records, seq)
        finally:
            self._task = None

    def _expected(self, records: Sequence[AnyRecord]) -> list[int | None] | None:
        """Per record, the sequence number of the row of its key this node holds (0: none) when the
        record is conditional (a group's configs computed from this node's copy), else None. Taken
        when the write is asked for, in the same step as the caller read the copy."""
        if not any(isinstance(r, GroupConfigRecord) and r.conditional for r in records):
            return None
        expected: list[int | None] = []
        for record in records:
            if isinstance(record, GroupConfigRecord) and record.conditional:
                key = to_storage(record).key
                followed, written = self._group_configs.get(key), self._written.get(key)
                expected.append(max(followed[0] if followed else 0, written[0] if written else 0))
            else:
                expected.append(None)
        return expected

    async def _put(
        self, records: Sequence[AnyRecord], expected: list[int | None] | None = None
    ) -> tuple[BaseException | None, int]:
        """Write `records`: (None, the sequence number written), or (the caller's error, 0)."""
        rows = [to_storage(r) for r in records]
        identities = [r.topic_id.bytes if isinstance(r, TopicRecord) else None for r in records]
        try:
            seq = await self._pool.fetchval(
                _PUT, [r.type for r in rows], [r.key for r in rows], [r.value for r in rows], identities,
                expected,
            )  # fmt: skip
        except Exception as exc:  # the database refused or is unreachable: the caller's error
            if getattr(exc, "sqlstate", None) == STALE_METADATA_SQLSTATE:
                log.info("cluster metadata: a group's configs were written by another node meanwhile")
                return GroupConfigsChanged("another node wrote the group's configs meanwhile"), 0
            if getattr(exc, "sqlstate", None) == IDENTITY_TAKEN_SQLSTATE:
                taken = set(str(getattr(exc, "detail", "") or "").split(","))
                names = [
                    r.name
                    for r, row in zip(records, rows, strict=True)
                    if isinstance(r, TopicRecord) and row.key.hex() in taken
                ]
                log.info("cluster metadata: topics %s are another topic's, nothing written", names)
                return TopicExists(names), 0
            log.warning("cluster metadata write failed: %r", exc)
            return exc, 0
        return None, int(seq)

    async def catch_up(self, apply: Callable[[storage.Record], None]) -> int:
        """Apply every row written since the last call, in sequence order; how many."""
        async with self._reading:
            self._apply = apply
            rows = await self._pool.fetch(_SINCE, self.last_seq)
            for row in rows:
                record = storage.Record(int(row["type"]), bytes(row["key"]), _bytes(row["value"]))
                apply(record)
                seq = int(row["seq"])
                self.last_seq = max(self.last_seq, seq)
                if record.type == GROUP_CONFIG_RECORD_TYPE:
                    self._group_configs[record.key] = (seq, record)
            self._recheck(apply)
            return len(rows)

    def _reapply_newer(self, records: Sequence[AnyRecord], seq: int) -> None:
        """After the writer's own apply of its group configs (the runtime's write path, in `on_done` or
        a callback it schedules): a newer row of the same group that this node followed meanwhile (an
        alter or a deletion through another node, `seq` after ours) wins again. Looked up when it
        runs, so a row followed in between counts too."""
        keys = [to_storage(r).key for r in records if isinstance(r, GroupConfigRecord)]
        until = time.monotonic() + _RECHECK_S
        self._written.update((key, (seq, until)) for key in keys)
        if not keys or self._apply is None:
            return
        apply, followed = self._apply, self._group_configs

        def reapply() -> None:
            for key in keys:
                newest = followed.get(key)
                if newest is not None and newest[0] > seq:
                    apply(newest[1])

        asyncio.get_running_loop().call_soon(reapply)

    def _recheck(self, apply: Callable[[storage.Record], None]) -> None:
        """At every catch_up (a poll at least every 500 ms), for `_RECHECK_S` after this node wrote a
        group's configs: a newer row followed wins again. It covers the writer's apply coming later
        than `_reapply_newer`'s callback: a DeleteGroups is applied once its shard's write settled too,
        which may be after the metadata write (bounded by the statement timeout)."""
        now = time.monotonic()
        for key, (seq, until) in list(self._written.items()):
            newest = self._group_configs.get(key)
            if newest is not None and newest[0] > seq:
                apply(newest[1])
            if now >= until:
                del self._written[key]


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


class ClusterProducerIds(ProducerIds):
    """`ProducerIds` whose blocks come from PostgreSQL's `kcoord_producer_id_block` sequence.

    It writes no record, so nothing goes through the runtime: a block is a number drawn from the
    sequence, durable once drawn (the sequence never hands it out again)."""

    def __init__(self, pool: Any) -> None:
        super().__init__(_NoBlockLog())
        self._pool = pool

    def apply(self, record: ProducerIdBlock) -> None:
        """Blocks of a single-node log mean nothing here: the sequence is the only source."""

    def _write_block(self) -> None:
        asyncio.get_running_loop().create_task(self._next_block(), name="kcoord-producer-id-block")

    async def _next_block(self) -> None:
        try:
            number = int(await self._pool.fetchval(_NEXT_BLOCK))
        except Exception as exc:
            log.error("producer id block: %r", exc)
            self._fail_waiting(exc)
            return
        self._next, self._block_end = number * BLOCK_SIZE, (number + 1) * BLOCK_SIZE
        log.info("producer id block %d-%d", self._next, self._block_end - 1)
        self._serve_waiting()


class _NoBlockLog:
    def append(self, records: Sequence[ProducerIdBlock], on_done: OnDone) -> None:
        raise AssertionError("ClusterProducerIds writes no block records")
