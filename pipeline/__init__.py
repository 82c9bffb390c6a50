"""Offline analytics over a kcoord data directory on Spark (issue #10).

`reader` turns the coordinator log into typed rows with storage's and protocol's own code and no
Spark; `source` exposes it as the Spark data source `kcoord`; `jobs` holds the jobs. A `kcoord-topic`
source over partition logs belongs next to `source` once the data plane has landed.
"""
