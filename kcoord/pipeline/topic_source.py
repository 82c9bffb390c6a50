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

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    InputPartition,
)

from kcoord.pipeline import topic_reader
from kcoord.pipeline.reader import PipelineError
from kcoord.pipeline.topic_batches import (
    SPARK_DDL,
    FilteredTopicReader,
    rows_batches,
)


class SegmentInput(InputPartition):
    def __init__(self, part: topic_reader.TopicPart | None) -> None:
        super().__init__(part)
        self.part = part


def to_batches(part: topic_reader.TopicPart, bounds: topic_reader.Bounds) -> Iterator[pa.RecordBatch]:
    yield from rows_batches(part.topic, part.partition, topic_reader.records(part, bounds))


class TopicReader(FilteredTopicReader):
    def __init__(self, data_dir: str) -> None:
        super().__init__()
        self.data_dir = data_dir

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
