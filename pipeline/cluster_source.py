"""The `kcoord` and `kcoord-topic` Spark sources over a cluster: .option("cluster", DSN).load().

Planned on the driver (pipeline/cluster_reader.py: shards packed into parts by their record counts
plus one part for the metadata table; partitions split into offset ranges, after the same filter
pushdown as a data directory's). Each executor opens its own PostgreSQL connection and streams its
part with a server-side cursor; rows are decoded by the data-directory readers' code and travel as
pyarrow RecordBatches, with the same schemas as the data-directory sources.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kcoord.pipeline import cluster_reader
from kcoord.pipeline.source import rows_batch
from kcoord.pipeline.topic_source import TopicReader, rows_batches


class ShardsInput(InputPartition):
    def __init__(self, part: cluster_reader.ShardPart) -> None:
        super().__init__(part)
        self.part = part


class ClusterRecordsReader(DataSourceReader):
    """format("kcoord").option("cluster", DSN): each shard's compacted records and the metadata."""

    def __init__(self, dsn: str) -> None:
        self.parts = cluster_reader.plan_shards(dsn)

    def partitions(self) -> list[ShardsInput]:
        return [ShardsInput(part) for part in self.parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ShardsInput)
        for raws in cluster_reader.raw_rows(partition.part):
            yield rows_batch(cluster_reader.decode(raw) for raw in raws)


class RangeInput(InputPartition):
    def __init__(self, part: cluster_reader.BatchRange | None) -> None:
        super().__init__(part)
        self.part = part


class ClusterTopicReader(TopicReader):
    """format("kcoord-topic").option("cluster", DSN): filters pushed down as for a data directory
    (TopicReader.pushFilters), then planned as batch ranges."""

    def __init__(self, dsn: str, offsets_per_part: int | None = None) -> None:
        super().__init__("")
        self.dsn = dsn
        self.offsets_per_part = offsets_per_part or cluster_reader.OFFSETS_PER_PART
        cluster_reader.partition_ends(dsn)  # a cluster without partitions fails at planning, in one line

    def partitions(self) -> list[RangeInput]:  # type: ignore[override]
        parts = cluster_reader.plan_batches(self.dsn, self.bounds, self.offsets_per_part)
        return [RangeInput(part) for part in parts] or [RangeInput(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangeInput)
        part = partition.part
        if part is not None:
            rows = cluster_reader.batch_records(part, self.bounds)
            yield from rows_batches(part.topic, part.partition, rows)
