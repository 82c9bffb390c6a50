"""The verdict on a partition write of unknown outcome once another epoch has fenced it, read back from
the table: `read_stored`.

A flush holds its partition's lease row (`kcoord_flush`: FOR NO KEY UPDATE at the writer's epoch), and
every acquire, refence or deletion updates that row with a higher epoch, so it waits for the flush's
transaction to end. Once the row's epoch is above the writer's, the call has committed or never will,
and the table says which of its batches were stored: each one is found at its base offset with its
producer id, epoch and base sequence (or, without a producer id, its bytes).

Why not answer "unknown" at once (REQUEST_TIMED_OUT, possibly persisted) when the lease moves on:
librdkafka bumps its producer epoch when a later request of a partition fails behind an earlier one
(`rd_kafka_handle_idempotent_Produce_error`, "skipped sequence numbers") and renumbers every batch not
yet acknowledged, possibly persisted ones included; a batch this node had stored was then sent again
under the new epoch, which no producer state can tell from new data (the chaos run, stop 43). Kafka
answers a produce when its acks=all wait ends (DelayedProduce), truthfully: so does this, once known.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from kcoord.protocol.record_batch import read_header

__all__ = ["StoredIdentity", "read_stored", "same_batch"]

log = logging.getLogger("kcoord.cluster.partitions")

_LEASE_EPOCH = "SELECT epoch FROM kcoord_partition_lease WHERE topic = $1 AND partition = $2"
_STORED = """
SELECT base_offset, last_offset, producer_id, producer_epoch, base_sequence, md5(batch) AS digest
  FROM kcoord_partition_batch
 WHERE topic = $1 AND partition = $2 AND base_offset = ANY($3::bigint[])
"""
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class StoredIdentity:
    """What identifies the batch stored at a base offset."""

    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    digest: str


def same_batch(stored: StoredIdentity | None, base_offset: int, last_offset: int, data: bytes) -> bool:
    """Whether `stored` (the row at `base_offset`) is this batch: an idempotent batch by its producer id,
    epoch and base sequence (a copy the next leader stored from the client's retry is the same records,
    stored once), any other by its bytes."""
    if stored is None or stored.last_offset != last_offset:
        return False
    header = read_header(data)
    if header.producer_id >= 0:
        ours = (header.producer_id, header.producer_epoch, header.base_sequence)
        return ours == (stored.producer_id, stored.producer_epoch, stored.base_sequence)
    return hashlib.md5(data, usedforsecurity=False).hexdigest() == stored.digest


async def read_stored(
    pool: Any, topic: str, partition: int, epoch: int, offsets: Sequence[int], waiting: Callable[[], bool]
) -> dict[int, StoredIdentity] | None:
    """Once the lease row's epoch is above `epoch` (the call at `epoch` has settled), the batches stored
    at `offsets`, by base offset. Polls while `waiting()` (the caller's own bound ends it); None if it
    stopped waiting first. A database that does not answer is asked again."""
    while waiting():
        try:
            async with pool.acquire() as conn:
                current = await conn.fetchval(_LEASE_EPOCH, topic, partition)
                if current is not None and int(current) > epoch:
                    rows = await conn.fetch(_STORED, topic, partition, list(offsets))
                    return {int(r["base_offset"]): _identity(r) for r in rows}
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            log.debug("%s-%d: the verdict read failed: %r", topic, partition, exc)  # away: ask again
        await asyncio.sleep(POLL_S)
    return None


def _identity(row: Any) -> StoredIdentity:
    return StoredIdentity(
        int(row["last_offset"]), int(row["producer_id"]), int(row["producer_epoch"]),
        int(row["base_sequence"]), str(row["digest"]),
    )  # fmt: skip
