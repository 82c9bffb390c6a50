"""A partition's rows in PostgreSQL (migration 3): the arguments of `kcoord_partition_append`, and
the rows' encodings `load_partition` (partition_load.py) decodes when a new leader continues the partition.

Producer rows are the durable `ProducerEntry` after the producer's newest batch (Kafka's producer
snapshot, `ProducerStateManager.writeSnapshot`, kept per batch instead of per segment): the epoch,
coordinator epoch, last timestamp, the first offset of its open transaction (-1: none) and its last
five batches packed as `>iiqq` (first sequence, last sequence, first offset, last offset).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

from kcoord.partition_log.producers import ProducerEntry
from kcoord.partition_log.txn_index import AbortedTxn
from kcoord.protocol.record_batch import read_header

__all__ = ["APPEND_SQL", "TRIM_SQL", "PartitionMoved", "StoredBatch", "append_args", "decode_entry"]

APPEND_SQL = (
    "SELECT kcoord_partition_append($1, $2, $3, $4, $5, $6::bigint[], $7::bigint[], $8::bigint[], "
    "$9::bigint[], $10::smallint[], $11::integer[], $12::bytea[], $13::bigint[], $14::smallint[], "
    "$15::integer[], $16::bigint[], $17::bigint[], $18::bytea[], $19::bigint[], $20::bigint[], "
    "$21::bigint[], $22::bigint[])"
)
TRIM_SQL = "SELECT kcoord_partition_trim($1, $2, $3, $4)"

_BATCH = struct.Struct(">iiqq")


class StoredBatch(NamedTuple):
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


Row = tuple[StoredBatch, int, ProducerEntry | None, AbortedTxn | None]


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
