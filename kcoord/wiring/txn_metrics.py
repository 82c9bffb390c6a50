"""Prometheus metrics of transactions, computed when /metrics is scraped (nothing on the request path).

From the transaction coordinator: transactional ids by state, open transactions (Ongoing or Prepare*:
they hold the last stable offset back), the oldest open one's age, and the transactions completed
since start by result (their Complete record durable; Kafka's coordinator has no such counters, its
brokers only time the markers). From the partition logs: the LSO lag of each transactional partition,
high watermark minus last stable offset: what a read_committed consumer cannot read yet. A partition
is transactional while its producer state holds a transactional producer (one with an open
transaction or a marker written), so its series stays, at 0, once its transactions complete, until
the producer's state expires (producer.id.expiration.ms). Per-partition series are capped like the
per-group ones (`--metrics-max-groups`), largest lag first; the rest are counted as omitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from kcoord.coordinator.transactions import TransactionCoordinator, TransactionState
from kcoord.partition_log.port import PartitionStore
from kcoord.wiring.txn_views import LIVE_STATES

__all__ = ["TransactionCollector", "lso_lags"]

LsoLag = tuple[str, int, int]  # topic, partition, high watermark - last stable offset


def lso_lags(logs: Iterable[PartitionStore]) -> list[LsoLag]:
    """Every transactional partition's LSO lag, largest first, then by topic and partition."""
    out = []
    for log in logs:
        if log.first_unstable_offset is not None or any(
            r.coordinator_epoch >= 0 or r.current_txn_start_offset >= 0 for r in log.producer_states()
        ):
            out.append((log.topic, log.partition, log.high_watermark - log.last_stable_offset))
    return sorted(out, key=lambda lag: (-lag[2], lag[0], lag[1]))


class TransactionCollector(Collector):
    def __init__(
        self,
        transactions: TransactionCoordinator,
        partitions: Callable[[], Iterable[PartitionStore]],
        now_ms: Callable[[], int],
        max_partitions: int,
    ) -> None:
        self._tc = transactions
        self._partitions = partitions
        self._now_ms = now_ms
        self._max_partitions = max_partitions

    def collect(self) -> Iterator[Any]:
        yield from self._coordinator_metrics()
        yield from self._partition_metrics()

    def _coordinator_metrics(self) -> Iterator[Any]:
        by_state = GaugeMetricFamily(
            "kcoord_transactional_ids", "Transactional ids by transaction state", labels=["state"]
        )
        counts: dict[TransactionState, int] = dict.fromkeys(LIVE_STATES, 0)
        for md in self._tc.transactions():
            counts[md.state] = counts.get(md.state, 0) + 1
        for state, count in counts.items():
            by_state.add_metric([state.state_name], count)
        yield by_state
        stats = self._tc.stats()
        yield GaugeMetricFamily(
            "kcoord_transactions_open", "Transactions Ongoing or PrepareCommit/PrepareAbort", value=stats.open
        )
        oldest = stats.oldest_open_start_ms
        age = 0.0 if oldest is None else max(self._now_ms() - oldest, 0) / 1000
        yield GaugeMetricFamily(
            "kcoord_transaction_oldest_open_age_seconds",
            "Now minus the start of the oldest open transaction (0 when none is open)",
            value=age,
        )
        completed = CounterMetricFamily(
            "kcoord_transactions_completed",
            "Transactions completed (CompleteCommit / CompleteAbort durable) since start",
            labels=["result"],
        )
        completed.add_metric(["commit"], stats.commits)
        completed.add_metric(["abort"], stats.aborts)
        yield completed

    def _partition_metrics(self) -> Iterator[Any]:
        lags = lso_lags(self._partitions())
        family = GaugeMetricFamily(
            "kcoord_partition_lso_lag_offsets",
            "High watermark minus last stable offset of a transactional partition",
            labels=["topic", "partition"],
        )
        for topic, partition, lag in lags[: self._max_partitions]:
            family.add_metric([topic, str(partition)], lag)
        yield family
        yield GaugeMetricFamily(
            "kcoord_metrics_partitions_omitted",
            "Transactional partitions left out of kcoord_partition_lso_lag_offsets (--metrics-max-groups)",
            value=max(len(lags) - self._max_partitions, 0),
        )
