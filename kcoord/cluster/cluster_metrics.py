"""A node's cluster series on /metrics (with `--http-listen`), read from the node's objects at scrape
time as `kcoord/wiring/metrics.py`'s collector reads the rest; nothing is counted on the request path.

* `kcoord_cluster_shards{state}` (loading, active, draining): group shards this node holds;
* `kcoord_cluster_partitions_led`: partition leader leases this node holds;
* `kcoord_cluster_lease_renewals{lease, result}`: lease node/shard/partition, result ok, lost (some
  lease was taken over), reregistered (the node row was gone), failed (the database did not answer);
* `kcoord_cluster_lease_acquisitions{lease, previous}`: previous holder free, self or other;
* `kcoord_cluster_failovers{lease}`: leases acquired after their holder's lease ran out;
* `kcoord_cluster_database_reachable`: 1 while the node's row was renewed within the lease TTL.

A failover is an acquisition of a lease whose holder did not release it (its lease expired: it was
killed, paused or cut off, or this node itself lost the database for longer than the TTL); a
graceful handover releases, so its successor's acquisition counts as `previous="free"`. Kafka's
nearest: the coordinator runtime's `num-partitions` by `state` (loading, active, failed;
`CoordinatorRuntimeMetricsImpl`), `ReplicaManager`'s `LeaderCount`, and the controller's
`LeaderElectionRateAndTimeMs` / `UncleanLeaderElectionsPerSec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["ClusterCollector", "ClusterSources"]

SHARD_STATES = ("loading", "active", "draining")


@dataclass(frozen=True, slots=True)
class ClusterSources:
    """What the collector reads (callables: the node builds some of these objects after startup)."""

    shard_states: Callable[[], Mapping[int, Any]]  # Ownership.owned: shard -> Phase
    partitions_led: Callable[[], int]
    renewals: Callable[[], Mapping[str, Mapping[str, int]]]  # lease kind -> result -> count
    acquisitions: Callable[[], Mapping[str, Mapping[str, int]]]  # lease kind -> previous -> count
    reachable: Callable[[], bool]


class ClusterCollector(Collector):
    def __init__(self, sources: ClusterSources) -> None:
        self._sources = sources

    def collect(self) -> Iterator[Any]:
        src = self._sources
        shards = GaugeMetricFamily(
            "kcoord_cluster_shards", "Group shards this node holds, by state", labels=["state"]
        )
        counts = dict.fromkeys(SHARD_STATES, 0)
        for state in list(src.shard_states().values()):
            name = str(getattr(state, "value", state)).lower()
            counts[name] = counts.get(name, 0) + 1
        for name, count in counts.items():
            shards.add_metric([name], count)
        yield shards
        yield GaugeMetricFamily(
            "kcoord_cluster_partitions_led",
            "Partition leader leases this node holds",
            value=src.partitions_led(),
        )
        renewals = CounterMetricFamily(
            "kcoord_cluster_lease_renewals", "Lease renewal statements by result", labels=["lease", "result"]
        )
        for kind, result, count in _flat(src.renewals()):
            renewals.add_metric([kind, result], count)
        yield renewals
        acquired = CounterMetricFamily(
            "kcoord_cluster_lease_acquisitions",
            "Leases acquired, by the holder before (free, self, other)",
            labels=["lease", "previous"],
        )
        failovers = CounterMetricFamily(
            "kcoord_cluster_failovers",
            "Shards and partitions taken over after their holder's lease expired",
            labels=["lease"],
        )
        taken: dict[str, int] = {}
        for kind, previous, count in _flat(src.acquisitions()):
            acquired.add_metric([kind, previous], count)
            if previous != "free":
                taken[kind] = taken.get(kind, 0) + count
        for kind in ("shard", "partition"):
            failovers.add_metric([kind], taken.get(kind, 0))
        yield acquired
        yield failovers
        yield GaugeMetricFamily(
            "kcoord_cluster_database_reachable",
            "1 while the node's database answered within the lease TTL",
            value=1 if src.reachable() else 0,
        )


def _flat(nested: Mapping[str, Mapping[str, int]]) -> Iterator[tuple[str, str, int]]:
    for kind, by_label in sorted(nested.items()):
        for label, count in sorted(dict(by_label).items()):
            yield kind, label, count
