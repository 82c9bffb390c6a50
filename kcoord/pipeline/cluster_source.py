"""The `kcoord` and `kcoord-topic` Spark sources over a cluster: .option("cluster", DSN).load().

Planned on the driver (kcoord/pipeline/cluster_reader.py: shards packed into parts by their record counts
plus one part for the metadata table; partitions split into offset ranges, after the same filter
pushdown as a data directory's). Each executor opens its own PostgreSQL connection and streams its
part with a server-side cursor; rows are decoded by the data-directory readers' code (a shard's rows
framed as a segment's, so offset commits go column-wise) and travel as pyarrow RecordBatches, with
the same schemas as the data-directory sources.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kcoord.pipeline import cluster_reader, columnar, reader
from kcoord.pipeline.columnar import ARROW_SCHEMA, rows_batch
from kcoord.pipeline.topic_batches import FilteredTopicReader, rows_batches
from kcoord.storage import framing


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
            yield from raws_batches(raws)


def raws_batches(raws: list[reader.Raw]) -> Iterator[pa.RecordBatch]:
    """The rows of `raws`: framed as a segment frames them, so the offset commits among them are
    decoded column-wise (kcoord/pipeline/columnar.py, twice the per-row rate) with their commit time as
    timestamp_ms; the rest row by row (cluster_reader.decode)."""
    offsets, frames, position = [], [], 0
    for raw in raws:
        frame = framing.encode(raw.type, 0, raw.lsn, -1, raw.key, raw.value)
        offsets.append(position)
        frames.append(frame)
        position += len(frame)
    data = b"".join(frames)
    commits, others = columnar.offset_commits(data, offsets)
    if commits.num_rows:
        at = ARROW_SCHEMA.get_field_index("timestamp_ms")
        commit_time = commits.column(ARROW_SCHEMA.get_field_index("commit_timestamp"))
        own_time = pc.if_else(pc.less(commit_time, 0), pa.scalar(None, pa.int64()), commit_time)  # -1: none
        yield pa.RecordBatch.from_arrays(
            [own_time if i == at else column for i, column in enumerate(commits.columns)], schema=ARROW_SCHEMA
        )
    if others:
        yield rows_batch(cluster_reader.decode(raw) for raw in reader.raw_at(data, others))


class RangeInput(InputPartition):
    def __init__(self, part: cluster_reader.BatchRange | None) -> None:
        super().__init__(part)
        self.part = part


class ClusterTopicReader(FilteredTopicReader):
    """format("kcoord-topic").option("cluster", DSN): filters pushed down as for a data directory
    (FilteredTopicReader.pushFilters), then planned as batch ranges."""

    def __init__(self, dsn: str, offsets_per_part: int | None = None) -> None:
        super().__init__()
        self.dsn = dsn
        self.offsets_per_part = offsets_per_part or cluster_reader.OFFSETS_PER_PART
        cluster_reader.partition_ends(dsn)  # a cluster without partitions fails at planning, in one line

    def partitions(self) -> list[RangeInput]:
        parts = cluster_reader.plan_batches(self.dsn, self.bounds, self.offsets_per_part)
        return [RangeInput(part) for part in parts] or [RangeInput(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangeInput)
        part = partition.part
        if part is not None:
            rows = cluster_reader.batch_records(part, self.bounds)
            yield from rows_batches(part.topic, part.partition, rows)
