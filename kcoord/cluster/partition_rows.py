"""A partition's rows in PostgreSQL (migration 3): the arguments of `kcoord_partition_append`, and
`load_partition`, what a new leader reads to continue the partition.

Producer rows are the durable `ProducerEntry` after the producer's newest batch (Kafka's producer
snapshot, `ProducerStateManager.writeSnapshot`, kept per batch instead of per segment): the epoch,
coordinator epoch, last timestamp, the first offset of its open transaction (-1: none) and its last
five batches packed as `>iiqq` (first sequence, last sequence, first offset, last offset).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kcoord.cluster.pg import LOAD_TIMEOUT_S
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.producers import ProducerEntry
from kcoord.partition_log.txn_index import AbortedTxn
from kcoord.protocol.record_batch import read_header

if TYPE_CHECKING:
    from kcoord.cluster.partition_store import PgPartitionLog, StoredBatch

__all__ = ["APPEND_SQL", "TRIM_SQL", "PartitionMoved", "append_args", "load_partition"]

APPEND_SQL = (
    "SELECT kcoord_partition_append($1, $2, $3, $4, $5, $6::bigint[], $7::bigint[], $8::bigint[], "
    "$9::bigint[], $10::smallint[], $11::integer[], $12::bytea[], $13::bigint[], $14::smallint[], "
    "$15::integer[], $16::bigint[], $17::bigint[], $18::bytea[], $19::bigint[], $20::bigint[], "
    "$21::bigint[], $22::bigint[])"
)
TRIM_SQL = "SELECT kcoord_partition_trim($1, $2, $3, $4)"

_BATCH = struct.Struct(">iiqq")
_LEASE = (
    "SELECT epoch, log_start_offset, log_end_offset FROM kcoord_partition_lease "
    "WHERE topic = $1 AND partition = $2"
)
_BATCHES = (
    "SELECT base_offset, last_offset, max_timestamp, batch FROM kcoord_partition_batch "
    "WHERE topic = $1 AND partition = $2 AND last_offset >= $3 ORDER BY base_offset"
)
_PRODUCERS = (
    "SELECT producer_id, producer_epoch, coordinator_epoch, last_timestamp, txn_first_offset, batches "
    "FROM kcoord_partition_producer WHERE topic = $1 AND partition = $2"
)
_ABORTED = (
    "SELECT producer_id, first_offset, last_offset, last_stable_offset FROM kcoord_partition_aborted "
    "WHERE topic = $1 AND partition = $2 AND last_offset >= $3 ORDER BY last_offset"
)

Row = tuple["StoredBatch", int, ProducerEntry | None, AbortedTxn | None]


class PartitionMoved(Exception):
    """The lease row is no longer at the epoch we loaded for: another node took the partition."""


def encode_batches(entry: ProducerEntry) -> bytes:
    return b"".join(_BATCH.pack(*batch) for batch in entry.batches)


def decode_entry(row: Any) -> ProducerEntry:
    batches = tuple(
        (int(a), int(b), int(c), int(d)) for a, b, c, d in _BATCH.iter_unpack(bytes(row["batches"]))
    )
    return ProducerEntry(
        int(row["producer_epoch"]),
        batches,
        int(row["coordinator_epoch"]),
        int(row["last_timestamp"]),
        int(row["txn_first_offset"]),
    )


def append_args(topic: str, partition: int, epoch: int, rows: Sequence[Row]) -> list[Any]:
    """`kcoord_partition_append`'s arguments for consecutive batches (in offset order): the batches,
    the newest entry of each producer among them, the aborted transactions their markers end."""
    batches = [row[0] for row in rows]
    headers = [read_header(b.data) for b in batches]
    producers: dict[int, ProducerEntry] = {}
    for _, producer_id, entry, _ in rows:
        if entry is not None:
            producers[producer_id] = entry
    aborted = [row[3] for row in rows if row[3] is not None]
    return [
        topic,
        partition,
        epoch,
        batches[0].base_offset,
        batches[-1].last_offset + 1,
        [b.base_offset for b in batches],
        [b.last_offset for b in batches],
        [b.max_timestamp for b in batches],
        [h.producer_id for h in headers],
        [h.producer_epoch for h in headers],
        [h.base_sequence for h in headers],
        [b.data for b in batches],
        list(producers),
        [e.epoch for e in producers.values()],
        [e.coordinator_epoch for e in producers.values()],
        [e.last_timestamp for e in producers.values()],
        [e.current_txn_first_offset for e in producers.values()],
        [encode_batches(e) for e in producers.values()],
        [t.producer_id for t in aborted],
        [t.first_offset for t in aborted],
        [t.last_offset for t in aborted],
        [t.last_stable_offset for t in aborted],
    ]


async def load_partition(
    pool: Any, topic: str, partition: int, epoch: int, config: PartitionConfig, **kwargs: Any
) -> PgPartitionLog:
    """The partition as its new leader continues it: call after `PartitionLeases.acquire` returned
    `epoch` (its bump committed first, so every batch an earlier leader had acknowledged is visible
    and none it still has in flight can commit). Raises `PartitionMoved` if the lease moved on."""
    from kcoord.cluster.partition_store import PgPartitionLog, StoredBatch

    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        lease = await conn.fetchrow(_LEASE, topic, partition)
        if lease is None or int(lease["epoch"]) != epoch:
            raise PartitionMoved(f"{topic}-{partition} is no longer led at epoch {epoch}")
        start, end = int(lease["log_start_offset"]), int(lease["log_end_offset"])
        batch_rows = await conn.fetch(_BATCHES, topic, partition, start, timeout=LOAD_TIMEOUT_S)
        producer_rows = await conn.fetch(_PRODUCERS, topic, partition)
        aborted_rows = await conn.fetch(_ABORTED, topic, partition, start)
    batches = [StoredBatch(int(r[0]), int(r[1]), int(r[2]), bytes(r[3])) for r in batch_rows]
    if batches and batches[-1].last_offset + 1 != end:
        raise RuntimeError(
            f"{topic}-{partition}: batches end at {batches[-1].last_offset + 1}, lease at {end}"
        )
    log = PgPartitionLog(pool, topic, partition, epoch, config, **kwargs)
    producers = {int(r["producer_id"]): decode_entry(r) for r in producer_rows}
    aborted = [AbortedTxn(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in aborted_rows]
    log.restore(start, end, batches, producers, aborted)
    return log
