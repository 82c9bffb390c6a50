"""Offline analytics over a kcoord data directory on Spark (issue #10).

`reader` turns the coordinator log into typed rows with storage's and protocol's own code and no
Spark; `source` exposes it as the Spark data source `kcoord`. `topic_reader` reads the partition
logs of the data plane and `topic_source` exposes them as `kcoord-topic`. The jobs: `offsets`,
`rebalances`, `lag`, `compact`. A cluster's PostgreSQL is read instead of a data directory with
`--cluster DSN` / `.option("cluster", DSN)`: `cluster_tables` names what is read, `cluster_reader`
and `cluster_source` read it, `inputs.Input` is what a job is given (docs/cluster.md).
"""

from typing import Any


def register(spark: Any) -> None:
    """Make the `kcoord` and `kcoord-topic` data sources available to `spark` (imports pyspark)."""
    from kcoord.pipeline.source import register as register_sources

    register_sources(spark)
