"""`load_partition`: what a new partition leader reads from PostgreSQL to continue the partition
(the rows partition_rows.py encodes, into the PgPartitionLog of partition_store.py)."""

from __future__ import annotations

from typing import Any

from kcoord.cluster.partition_rows import PartitionMoved, StoredBatch, decode_entry
from kcoord.cluster.partition_store import PgPartitionLog
from kcoord.cluster.pg import LOAD_TIMEOUT_S
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.txn_index import AbortedTxn

__all__ = ["load_partition"]

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


async def load_partition(
    pool: Any, topic: str, partition: int, epoch: int, config: PartitionConfig, **kwargs: Any
) -> PgPartitionLog:
    """The partition as its new leader continues it: call after `PartitionLeases.acquire` returned
    `epoch` (its bump committed first, so every batch an earlier leader had acknowledged is visible
    and none it still has in flight can commit). Raises `PartitionMoved` if the lease moved on."""
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
