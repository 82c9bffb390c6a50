"""The Spark data source `kcoord` (pyspark.sql.datasource, Spark 4) over reader.py's rows.

One InputPartition per segment and one for the snapshot, planned on the driver (copy-on-read sizes);
rows travel as pyarrow RecordBatches, which Spark takes without per-row conversion.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from pipeline import reader
from protocol.messages.records import decode_offset_commit_fast

_ASSIGNED = pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))])
MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("instance_id", pa.string()),
        ("client_id", pa.string()),
        ("host", pa.string()),
        ("session_timeout", pa.int32()),
        ("rebalance_timeout", pa.int32()),
        ("topics", pa.list_(pa.string())),
        ("assigned", pa.list_(_ASSIGNED)),
    ]
)
ARROW_SCHEMA = pa.schema(
    [
        ("lsn", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("record_type", pa.int32()),
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()),
        ("generation", pa.int32()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("state_timestamp", pa.int64()),
        ("members", pa.list_(MEMBER)),
        ("topic_id", pa.string()),
        ("num_partitions", pa.int32()),
        ("tombstone", pa.bool_()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
SPARK_DDL = (
    "lsn BIGINT, timestamp_ms BIGINT, record_type INT, `group` STRING, topic STRING, partition INT, "
    "offset BIGINT, leader_epoch INT, metadata STRING, commit_timestamp BIGINT, "
    "expire_timestamp BIGINT, generation INT, protocol_type STRING, protocol STRING, leader STRING, "
    "state_timestamp BIGINT, members ARRAY<STRUCT<member_id: STRING, instance_id: STRING, "
    "client_id: STRING, host: STRING, session_timeout: INT, rebalance_timeout: INT, "
    "topics: ARRAY<STRING>, assigned: ARRAY<STRUCT<topic: STRING, partitions: ARRAY<INT>>>>>, "
    "topic_id STRING, num_partitions INT, tombstone BOOLEAN, key BINARY, value BINARY"
)
BATCH_ROWS = 50_000


class PartInput(InputPartition):
    def __init__(self, part: reader.Part) -> None:
        super().__init__(part)
        self.part = part


def to_batches(raws: Sequence[reader.Raw]) -> Iterator[pa.RecordBatch]:
    """Arrow batches built column by column (from_pylist on per-row dicts cost more per row than
    decoding them). Offset commits, most of any log, are struct-decoded straight into their
    columns; every other row goes through `reader.decode_row_tuple`."""
    for start in range(0, len(raws), BATCH_ROWS):
        yield _batch(raws[start : start + BATCH_ROWS])


def _batch(raws: Sequence[reader.Raw]) -> pa.RecordBatch:
    columns: list[list[Any]] = [[] for _ in reader.COLUMNS]
    (lsn, ts, type_, group, topic, partition, offset, epoch, metadata, commit_ts, expire_ts,
     *_, tombstone, key, value) = columns  # fmt: skip
    others = columns[11:19]  # generation .. num_partitions: group-metadata and topic rows only
    fast_decode = decode_offset_commit_fast
    for raw in raws:
        fast = fast_decode(raw.key, raw.value) if raw.type == reader.OFFSET_COMMIT_TYPE else None
        if fast is None:
            for column, cell in zip(columns, reader.decode_row_tuple(raw), strict=True):
                column.append(cell)
            continue
        lsn.append(raw.lsn)
        ts.append(raw.timestamp_ms)
        type_.append(raw.type)
        group.append(fast.group)
        topic.append(fast.topic)
        partition.append(fast.partition)
        live = not fast.tombstone
        offset.append(fast.offset if live else None)
        epoch.append(fast.leader_epoch if live else None)
        metadata.append(fast.metadata if live else None)
        commit_ts.append(fast.commit_timestamp if live else None)
        expire_ts.append(-1 if live else None)
        for column in others:
            column.append(None)
        tombstone.append(fast.tombstone)
        key.append(raw.key)
        value.append(raw.value)
    arrays = [_array(column, field.type) for column, field in zip(columns, ARROW_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _array(column: list[Any], type_: pa.DataType) -> pa.Array:
    # Offset-commit rows leave half the columns empty: an all-null column costs nothing to build.
    if column.count(None) == len(column):
        return pa.nulls(len(column), type=type_)
    return pa.array(column, type=type_)


class KcoordReader(DataSourceReader):
    def __init__(self, data_dir: str) -> None:
        self.parts = reader.plan(data_dir)

    def partitions(self) -> list[PartInput]:
        return [PartInput(part) for part in self.parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PartInput)
        yield from to_batches(reader.raw_records(partition.part))


class KcoordDataSource(DataSource):
    """spark.read.format("kcoord").load(DATA_DIR)"""

    @classmethod
    def name(cls) -> str:
        return "kcoord"

    def schema(self) -> str:
        return SPARK_DDL

    def reader(self, schema: Any) -> KcoordReader:
        path = self.options.get("path")
        if not path:
            raise reader.PipelineError("kcoord source: load(DATA_DIR) needs a data directory")
        return KcoordReader(str(path))


def register(spark: Any) -> None:
    """spark.read.format("kcoord") (the coordinator log) and format("kcoord-topic") (partition logs).

    kcoord-topic pushes filters down, which Spark 4.1+ only offers a Python data source with
    spark.sql.python.filterPushdown.enabled (else it refuses a reader that implements pushFilters).
    """
    from pipeline.topic_source import KcoordTopicDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KcoordDataSource)
    spark.dataSource.register(KcoordTopicDataSource)
