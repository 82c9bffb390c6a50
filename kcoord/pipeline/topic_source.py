"""The Spark data source `kcoord-topic` over topic_reader.py: format("kcoord-topic").load(DATA_DIR).

Rows: topic, partition, offset, timestamp (TIMESTAMP, the record's CreateTime or the batch's
LogAppendTime), key, value, headers (array of (key, value)) - the columns of Spark's own Kafka
source, minus the ones a single-node log does not have. One InputPartition per segment, planned
on the driver after filter pushdown: equality/IN on topic and partition, comparisons on partition
and offset are applied exactly by the reader (Spark does not re-check them), so
`where("partition = 1 AND offset >= 1000")` never opens the other partitions' segments nor the
segments below offset 1000. Rows travel as pyarrow RecordBatches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from kcoord.pipeline import topic_reader
from kcoord.pipeline.reader import PipelineError

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),  # Spark's TIMESTAMP
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(pa.field("element", HEADER))),  # Spark names list items "element"
    ]
)
SPARK_DDL = (
    "topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
BATCH_ROWS = 50_000
_OPS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
    In: "in",
}


class SegmentInput(InputPartition):
    def __init__(self, part: topic_reader.TopicPart | None) -> None:
        super().__init__(part)
        self.part = part


def to_batches(part: topic_reader.TopicPart, bounds: topic_reader.Bounds) -> Iterator[pa.RecordBatch]:
    yield from rows_batches(part.topic, part.partition, topic_reader.records(part, bounds))


def rows_batches(topic: str, partition: int, rows: Iterable[topic_reader.Row]) -> Iterator[pa.RecordBatch]:
    """One partition's records as Arrow batches of BATCH_ROWS rows."""
    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    offsets, timestamps, keys, values, headers = columns

    def flush() -> pa.RecordBatch:
        n = len(offsets)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.repeat(topic, n).cast(pa.string()) if n else pa.array([], pa.string()),
                pa.array([partition] * n, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(timestamps, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(headers, ARROW_SCHEMA.field("headers").type),
            ],
            schema=ARROW_SCHEMA,
        )
        for column in columns:
            column.clear()
        return batch

    for row in rows:
        offsets.append(row.offset)
        timestamps.append(row.timestamp)
        keys.append(row.key)
        values.append(row.value)
        headers.append(row.headers)
        if len(offsets) >= BATCH_ROWS:
            yield flush()
    if offsets:
        yield flush()


class TopicReader(DataSourceReader):
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.bounds = topic_reader.Bounds()

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        left = []
        for f in filters:
            op = _OPS.get(type(f))
            attribute: tuple[str, ...] = getattr(f, "attribute", ())
            narrowed = None
            if op is not None and len(attribute) == 1:
                narrowed = self.bounds.narrowed(op, attribute[0], getattr(f, "value", None))
            if narrowed is None:
                left.append(f)
            else:
                self.bounds = narrowed
        return left

    def partitions(self) -> list[SegmentInput]:
        parts = topic_reader.plan(self.data_dir, self.bounds)
        return [SegmentInput(part) for part in parts] or [SegmentInput(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SegmentInput)
        if partition.part is not None:
            yield from to_batches(partition.part, self.bounds)


class KcoordTopicDataSource(DataSource):
    """spark.read.format("kcoord-topic").load(DATA_DIR), or .option("cluster", DSN).load(): a
    cluster's partition batches from PostgreSQL, one input part per partition or range of offsets
    (.option("offsetsPerPartition", N), default cluster_reader.OFFSETS_PER_PART)."""

    @classmethod
    def name(cls) -> str:
        return "kcoord-topic"

    def schema(self) -> str:
        return SPARK_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        path, cluster = self.options.get("path"), self.options.get("cluster")
        if cluster and path:
            raise PipelineError("kcoord-topic source: a data directory or option cluster, not both")
        if cluster:
            from kcoord.pipeline.cluster_source import ClusterTopicReader

            per_part = int(self.options.get("offsetsPerPartition", 0)) or None
            return ClusterTopicReader(str(cluster), per_part)
        if not path:
            raise PipelineError(
                'kcoord-topic source: load(DATA_DIR) needs a data directory (or .option("cluster", DSN))'
            )
        topic_reader.partition_dirs(str(path))  # a wrong directory fails at planning, in one line
        return TopicReader(str(path))
