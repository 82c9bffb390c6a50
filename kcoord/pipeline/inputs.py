"""What a job reads: a data directory or a cluster's PostgreSQL (`--data-dir` / `--cluster`).

The jobs ask an `Input` for the coordinator records, the partitions' records and their log ends and
for the notes about history, and never care which one it is. A plain string is a data directory
(the jobs' original signature). A cluster keeps the compacted state only, and the notes say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcoord.pipeline import history, reader, topic_reader

CLUSTER_NOTE = (
    "a cluster (PostgreSQL) keeps the newest value of each key, no history: the newest commit of each "
    "partition, the newest generation of each group; times are the records' own"
)


@dataclass(frozen=True)
class Input:
    data_dir: str | None = None
    cluster: str | None = None  # a PostgreSQL DSN

    def __post_init__(self) -> None:
        if (self.data_dir is None) == (self.cluster is None):
            raise ValueError("an Input is a data directory or a cluster DSN, exactly one")

    def check(self) -> None:
        """Fail in one line (PipelineError) before Spark starts: a wrong directory, a bad DSN, an
        unreachable database, a database that is not a kcoord cluster."""
        if self.cluster is not None:
            from kcoord.pipeline import cluster_tables

            cluster_tables.schema_of(self.cluster)
        else:
            reader.plan(str(self.data_dir))

    def coordinator(self, spark: Any, with_history: bool = True) -> Any:
        """The `kcoord` source's DataFrame (a cluster has no history: `with_history` is moot)."""
        read = spark.read.format("kcoord")
        if self.cluster is not None:
            return read.option("cluster", self.cluster).load()
        return read.option("history", str(with_history).lower()).load(self.data_dir)

    def topic_records(self, spark: Any) -> Any:
        """The `kcoord-topic` source's DataFrame."""
        read = spark.read.format("kcoord-topic")
        if self.cluster is not None:
            return read.option("cluster", self.cluster).load()
        return read.load(self.data_dir)

    def log_ends(self) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) per partition, read on the driver."""
        if self.cluster is not None:
            from kcoord.pipeline import cluster_reader

            return cluster_reader.partition_ends(self.cluster)
        return topic_reader.log_ends(str(self.data_dir))

    def notes(self, since_ms: int | None) -> list[str]:
        """How far back the records reach, for the jobs' output and charts."""
        if self.cluster is None:
            return history.notes(history.plan_coverage(str(self.data_dir)), since_ms)
        lines = [CLUSTER_NOTE]
        if since_ms is not None:
            lines.append(f"--since {history.when(since_ms)} keeps the newest records written since then")
        return lines


def as_input(source: str | Input) -> Input:
    """A job's input: an `Input`, or a data directory's path."""
    return source if isinstance(source, Input) else Input(data_dir=str(source))
