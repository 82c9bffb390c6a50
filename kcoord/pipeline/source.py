"""The Spark data source `kcoord` (pyspark.sql.datasource, Spark 4) over reader.py's rows.

One InputPartition per segment and one for the snapshot, planned on the driver (copy-on-read sizes);
rows travel as pyarrow RecordBatches, which Spark takes without per-row conversion. Offset commits
are decoded column-wise (kcoord/pipeline/columnar.py); the few other records row by row here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kcoord.pipeline import columnar, reader
from kcoord.pipeline.columnar import rows_batch

ARROW_SCHEMA = columnar.ARROW_SCHEMA
MEMBER = columnar.MEMBER
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


def part_batches(part: reader.Part) -> Iterator[pa.RecordBatch]:
    """A part's rows, BATCH_ROWS records at a time: the offset commits among them column-wise
    (kcoord/pipeline/columnar.py), then the rest row by row. Rows of a part are not in LSN order; the
    `lsn` column gives it."""
    data, offsets = reader.committed(part)
    for start in range(0, len(offsets), BATCH_ROWS):
        commits, others = columnar.offset_commits(data, offsets[start : start + BATCH_ROWS])
        if commits.num_rows:
            yield commits
        if others:
            yield _batch(reader.raw_at(data, others))


def to_batches(raws: Sequence[reader.Raw]) -> Iterator[pa.RecordBatch]:
    """Rows built one record at a time, in the order given (the per-row path)."""
    for start in range(0, len(raws), BATCH_ROWS):
        yield _batch(raws[start : start + BATCH_ROWS])


def _batch(raws: Sequence[reader.Raw]) -> pa.RecordBatch:
    return rows_batch(reader.decode_row_tuple(raw) for raw in raws)


class KcoordReader(DataSourceReader):
    def __init__(self, data_dir: str, with_history: bool = True) -> None:
        self.parts = reader.plan(data_dir, with_history)

    def partitions(self) -> list[PartInput]:
        return [PartInput(part) for part in self.parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PartInput)
        yield from part_batches(partition.part)


class KcoordDataSource(DataSource):
    """spark.read.format("kcoord").load(DATA_DIR): every record on disk, the history area's included;
    with .option("history", "false") only what recovery restores (the newest snapshot and after).
    .option("cluster", DSN).load(): a cluster's records from PostgreSQL (pipeline/cluster_reader.py)."""

    @classmethod
    def name(cls) -> str:
        return "kcoord"

    def schema(self) -> str:
        return SPARK_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        path, cluster = self.options.get("path"), self.options.get("cluster")
        if cluster and path:
            raise reader.PipelineError("kcoord source: a data directory or option cluster, not both")
        if cluster:
            from kcoord.pipeline.cluster_source import ClusterRecordsReader

            return ClusterRecordsReader(str(cluster))
        if not path:
            raise reader.PipelineError(
                'kcoord source: load(DATA_DIR) needs a data directory (or .option("cluster", DSN))'
            )
        with_history = str(self.options.get("history", "true")).lower() != "false"
        return KcoordReader(str(path), with_history)


def register(spark: Any) -> None:
    """spark.read.format("kcoord") (the coordinator log) and format("kcoord-topic") (partition logs).

    kcoord-topic pushes filters down, which Spark 4.1+ only offers a Python data source with
    spark.sql.python.filterPushdown.enabled (else it refuses a reader that implements pushFilters).
    """
    from kcoord.pipeline.topic_source import KcoordTopicDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KcoordDataSource)
    spark.dataSource.register(KcoordTopicDataSource)
