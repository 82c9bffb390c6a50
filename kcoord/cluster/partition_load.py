"""`load_partition`: what a new partition leader reads from PostgreSQL to continue the partition
(the rows partition_rows.py encodes, into the PgPartitionLog of partition_store.py).

Bounded by the tail, not by the partition (issue 35 item 2): the lease row, the producers' entries
(Kafka's producer snapshot), the aborted-transaction index, the leader epoch rows (migration 6), the
place of every batch (offsets, max timestamp, size: no bytes) and the bytes of the newest batches only
(`partition_batches.TAIL_BYTES`, at most `TAIL_ROWS` rows); older bytes are read when asked for.
"""

from __future__ import annotations

from typing import Any

from kcoord.cluster.partition_batches import TAIL_BYTES, TAIL_ROWS, BatchMeta
from kcoord.cluster.partition_rows import PartitionMoved, StoredBatch, decode_entry
from kcoord.cluster.partition_store import PgPartitionLog
from kcoord.cluster.pg import LOAD_TIMEOUT_S
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.txn_index import AbortedTxn

__all__ = ["load_partition", "tail_start"]

_LEASE = (
    "SELECT epoch, log_start_offset, log_end_offset FROM kcoord_partition_lease "
    "WHERE topic = $1 AND partition = $2"
)

# octet_length of a value stored out of line reads its TOAST pointer, not its chunks
_METAS = (
    "SELECT base_offset, last_offset, max_timestamp, octet_length(batch) FROM kcoord_partition_batch "
    "WHERE topic = $1 AND partition = $2 AND last_offset >= $3 ORDER BY base_offset"
)

_TAIL = (
    "SELECT base_offset, last_offset, max_timestamp, batch FROM kcoord_partition_batch "
    "WHERE topic = $1 AND partition = $2 AND base_offset >= $3 ORDER BY base_offset"
)

_PRODUCERS = (
    "SELECT producer_id, producer_epoch, coordinator_epoch, last_timestamp, txn_first_offset, batches "
    "FROM kcoord_partition_producer WHERE topic = $1 AND partition = $2"
)

_ABORTED = (
    "SELECT producer_id, first_offset, last_offset, last_stable_offset FROM kcoord_partition_aborted "
    "WHERE topic = $1 AND partition = $2 AND last_offset >= $3 ORDER BY last_offset"
)

_EPOCHS = (
    "SELECT epoch, start_offset FROM kcoord_partition_epoch "
    "WHERE topic = $1 AND partition = $2 ORDER BY epoch"
)


def tail_start(metas: list[BatchMeta], tail_bytes: int = TAIL_BYTES, tail_rows: int = TAIL_ROWS) -> int:
    """The index of the first batch a new leader loads the bytes of: the newest ones up to
    `tail_bytes` (at least one), at most `tail_rows`."""
    index, total = len(metas), 0
    while index > 0 and len(metas) - index < tail_rows and (total < tail_bytes or index == len(metas)):
        index -= 1
        total += metas[index].size
    return index


async def load_partition(
    pool: Any,
    topic: str,
    partition: int,
    epoch: int,
    config: PartitionConfig,
    *,
    tail_bytes: int = TAIL_BYTES,
    tail_rows: int = TAIL_ROWS,
    **kwargs: Any,
) -> PgPartitionLog:
    """The partition as its new leader continues it: call after `PartitionLeases.acquire` returned
    `epoch` (its bump committed first, so every batch an earlier leader had acknowledged is visible
    and none it still has in flight can commit). Raises `PartitionMoved` if the lease moved on."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        lease = await conn.fetchrow(_LEASE, topic, partition)
        if lease is None or int(lease["epoch"]) != epoch:
            raise PartitionMoved(f"{topic}-{partition} is no longer led at epoch {epoch}")
        start, end = int(lease["log_start_offset"]), int(lease["log_end_offset"])
        meta_rows = await conn.fetch(_METAS, topic, partition, start, timeout=LOAD_TIMEOUT_S)
        metas = [BatchMeta(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in meta_rows]
        tail_found = []
        if metas:
            first = metas[tail_start(metas, tail_bytes, tail_rows)].base_offset
            tail_found = await conn.fetch(_TAIL, topic, partition, first, timeout=LOAD_TIMEOUT_S)
        producer_rows = await conn.fetch(_PRODUCERS, topic, partition)
        aborted_rows = await conn.fetch(_ABORTED, topic, partition, start)
        epoch_rows = await conn.fetch(_EPOCHS, topic, partition)
    if metas and metas[-1].last_offset + 1 != end:
        raise RuntimeError(f"{topic}-{partition}: batches end at {metas[-1].last_offset + 1}, lease at {end}")
    tail = [StoredBatch(int(r[0]), int(r[1]), int(r[2]), bytes(r[3])) for r in tail_found]
    log = PgPartitionLog(pool, topic, partition, epoch, config, **kwargs)
    producers = {int(r["producer_id"]): decode_entry(r) for r in producer_rows}
    aborted = [AbortedTxn(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in aborted_rows]
    epochs = [(int(r[0]), int(r[1])) for r in epoch_rows]
    log.restore(start, end, metas, tail, producers, aborted, epochs)
    return log
