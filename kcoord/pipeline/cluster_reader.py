"""A cluster's coordinator records and partition batches, read from its PostgreSQL, no Spark.

The bytes are the ones a data directory holds, so the rows come out of the same code: coordinator
records through reader.decode_row_tuple, Kafka record batches through topic_reader's checks and
decoding. The tables: kcoord/pipeline/cluster_tables.py.

What differs from a data directory, and is said by the jobs (kcoord/pipeline/inputs.py):
* PostgreSQL keeps the compacted state, the newest value of each key: no history, no tombstones of
  shard records (a tombstone deletes the row); `kcoord_metadata` keeps its tombstones as NULL values.
* A shard record carries no write time. `timestamp_ms` is the record's own time where it has one
  (an offset commit's commit timestamp, a group's current-state timestamp), else null.
* `lsn` is the table's: a shard's lsn orders that shard's writes (epoch << 40 | n), metadata's is its
  `seq`; lsns of different shards are not comparable and may be equal.
* Consistency: each input part reads its shards (or its partition's batch range) in one statement,
  so one snapshot; a group's records all live in its one shard. A partition is read up to the log end
  planned on the driver (batches appended later are left out), as a segment is read up to its size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kcoord.pipeline import cluster_tables as tables
from kcoord.pipeline import reader, topic_reader
from kcoord.pipeline.reader import PipelineError
from kcoord.pipeline.topic_reader import Bounds, Row
from kcoord.protocol.record_batch import BATCH_HEADER, batch_crc, framing_problem, read_header

PART_ROWS = 200_000  # shards are packed into input parts of about this many records
FETCH_ROWS = 10_000  # rows per round trip of a part's server-side cursor
OFFSETS_PER_PART = 1_000_000  # a partition's offsets are split into input parts of this many

_COMMIT_TS = reader.COLUMNS.index("commit_timestamp")
_STATE_TS = reader.COLUMNS.index("state_timestamp")
_TIMESTAMP = reader.COLUMNS.index("timestamp_ms")
_ALL = Bounds()


@dataclass(frozen=True)
class ShardPart:
    """One input part of the `kcoord` source over a cluster: some shards, or the metadata table."""

    dsn: str
    shards: tuple[int, ...]
    metadata: bool = False


def plan_shards(dsn: str, part_rows: int = PART_ROWS) -> list[ShardPart]:
    """Every shard in exactly one part (an empty shard too: it may fill before the part runs), packed
    in shard order up to `part_rows` records per part; plus one part for the metadata table."""
    conn = tables.connect(dsn)
    try:
        schema = tables.read_schema(conn, dsn)
        sizes = dict(_fetch_all(conn, dsn, tables.SHARD_SIZES))
    finally:
        conn.close()
    parts: list[ShardPart] = []
    current: list[int] = []
    rows = 0
    for shard in range(schema.num_shards):
        size = int(sizes.get(shard, 0))
        if current and rows + size > part_rows:
            parts.append(ShardPart(dsn, tuple(current)))
            current, rows = [], 0
        current.append(shard)
        rows += size
    if current:
        parts.append(ShardPart(dsn, tuple(current)))
    if schema.has_metadata:
        parts.append(ShardPart(dsn, (), metadata=True))
    return parts


def raw_rows(part: ShardPart) -> Iterator[list[reader.Raw]]:
    """The part's records as reader.Raw, FETCH_ROWS at a time (timestamp_ms -1: see decode)."""
    params: tuple[Any, ...] = ()
    statement = tables.METADATA_RECORDS
    if not part.metadata:
        statement, params = tables.SHARD_RECORDS, (list(part.shards),)
    conn = tables.connect(part.dsn)
    try:
        with conn.cursor(name="kcoord_pipeline", binary=True) as cur:
            cur.itersize = FETCH_ROWS
            cur.execute(statement, params)
            while chunk := cur.fetchmany(FETCH_ROWS):
                yield [reader.Raw(int(lsn), -1, int(t), bytes(k), _bytes(v)) for t, k, v, lsn in chunk]
    except _errors() as exc:
        raise PipelineError(f"cluster {tables.redact(part.dsn)}: reading records failed: {exc}") from None
    finally:
        conn.close()


def decode(raw: reader.Raw) -> tuple[Any, ...]:
    """reader.decode_row_tuple's row, with the record's own time as timestamp_ms (null if none)."""
    row = list(reader.decode_row_tuple(raw))
    times = [t for t in (row[_COMMIT_TS], row[_STATE_TS]) if t is not None and t >= 0]  # -1: none
    row[_TIMESTAMP] = times[0] if times else None
    return tuple(row)


# -- partitions ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchRange:
    """One input part of `kcoord-topic` over a cluster: a partition's batches starting in
    [start, end) (the first range also takes the batch straddling `lo`), offsets >= lo."""

    dsn: str
    topic: str
    partition: int
    lo: int
    start: int
    end: int  # a batch range's end; the last range's is the log end planned on the driver


def partition_ends(dsn: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start, log end) of every partition a leader ever held (topic_reader.log_ends' shape);
    PipelineError when the cluster keeps no partitions in PostgreSQL."""
    conn = tables.connect(dsn)
    try:
        if not tables.read_schema(conn, dsn).has_partitions:
            raise PipelineError(
                f"cluster {tables.redact(dsn)}: keeps no partitions in PostgreSQL "
                f"(no {tables.PARTITION_BATCH} table: schema older than migration 3)"
            )
        rows = _fetch_all(conn, dsn, tables.PARTITION_ENDS)
    finally:
        conn.close()
    return {(str(t), int(p)): (int(start), int(end)) for t, p, start, end in rows}


def plan_batches(
    dsn: str, bounds: Bounds = _ALL, offsets_per_part: int = OFFSETS_PER_PART
) -> list[BatchRange]:
    """The wanted partitions' offsets [max(lo, log start), min(hi + 1, log end)) in ranges."""
    parts = []
    for (topic, partition), (log_start, log_end) in sorted(partition_ends(dsn).items()):
        if not bounds.wants(topic, partition):
            continue
        lo = max(bounds.lo, log_start)
        end = min(log_end, bounds.hi + 1)
        cut, first = lo, True
        while cut < end:
            stop = min(end, cut + offsets_per_part)
            # the first range starts at 0: it takes the batch that begins below lo and reaches it
            parts.append(BatchRange(dsn, topic, partition, lo, 0 if first else cut, stop))
            cut, first = stop, False
    return parts


def batch_records(part: BatchRange, bounds: Bounds = _ALL) -> Iterator[Row]:
    """The records of a range's batches within `bounds`, checked as a segment's are."""
    where = f"{tables.PARTITION_BATCH} {part.topic}-{part.partition}"
    lo = max(part.lo, bounds.lo)
    conn = tables.connect(part.dsn)
    try:
        with conn.cursor(name="kcoord_pipeline", binary=True) as cur:
            cur.itersize = 1000
            cur.execute(tables.PARTITION_BATCHES, (part.topic, part.partition, lo, part.start, part.end))
            for base_offset, batch in cur:
                data = bytes(batch)
                header = _checked(data, int(base_offset), where)
                if header.is_control:
                    continue
                yield from topic_reader.batch_rows(data, header.base_offset, lo, bounds.hi, where)
    except _errors() as exc:
        raise PipelineError(f"cluster {tables.redact(part.dsn)}: reading {where} failed: {exc}") from None
    finally:
        conn.close()


def _checked(data: bytes, base_offset: int, where: str) -> Any:
    """The batch's header, once its framing and CRC hold (a stored batch is whole: else corruption)."""
    header = read_header(data) if len(data) >= BATCH_HEADER.size else None
    problem = framing_problem(header, 0, len(data), base_offset)
    if problem is None and header is not None:
        if header.size != len(data):
            problem = f"batch of {header.size} bytes stored in {len(data)}"
        elif batch_crc(data, 0, header.size) != header.crc:
            problem = "CRC mismatch"
    if problem is not None or header is None:
        raise PipelineError(f"{where}: corrupt batch at offset {base_offset}: {problem}")
    return header


# -- helpers -------------------------------------------------------------------------------------------
def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


def _fetch_all(conn: Any, dsn: str, statement: str) -> list[tuple[Any, ...]]:
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
            rows: list[tuple[Any, ...]] = cur.fetchall()
    except _errors() as exc:
        raise PipelineError(f"cluster {tables.redact(dsn)}: {exc}") from None
    conn.rollback()
    return rows
