"""The edge's request counters: what every answered request adds, read by the metrics collector.

The request path only bumps plain ints and lists here: no prometheus_client object, no lock, no label
lookup per request. `kcoord.wiring.metrics` turns these counts into metric families when /metrics is
scraped, so the edge counts without importing the composition root.
"""

from __future__ import annotations

import bisect
import time
from typing import Any

__all__ = [
    "ALWAYS_TIMED",
    "LATENCY_BUCKETS",
    "LATENCY_SAMPLE_EVERY",
    "MAX_API_KEYS",
    "MAX_VERSIONS",
    "OFFSET_COMMIT",
    "Histogram",
    "RequestStats",
]

# Request latency and wait buckets (seconds): parked JoinGroups wait up to the rebalance timeout.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                   2.5, 5, 10, 30, 60, 300)  # fmt: skip
JOIN_GROUP, HEARTBEAT, SYNC_GROUP, OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT = 11, 12, 14, 8, 68
MAX_API_KEYS, MAX_VERSIONS = 128, 32  # every key and version the protocol table can serve
LATENCY_SAMPLE_EVERY = 16
ALWAYS_TIMED = frozenset({JOIN_GROUP, SYNC_GROUP})


class Histogram:
    """Bucket counts in a plain list: `observe` is one bisect and two additions."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1  # Prometheus buckets are `le`
        self.total += value

    def count(self) -> int:
        return sum(self.counts)

    def merge(self, other: Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total

    def cumulative(self) -> list[tuple[str, float]]:
        """[(le, cumulative count)] ending with +Inf, as HistogramMetricFamily takes them."""
        out, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


class RequestStats:
    """Answered requests: exact counts by (api key, version) and errors by (api key, code); latency
    histograms by (api key, version) from a sample of the requests.

    The request path pays for what it must: counting is two list indexes and an addition; timing a
    request (two clock reads, a dict lookup and a bisect) happens for the first
    `LATENCY_SAMPLE_EVERY` requests of each api and version, then one in that many, and for every
    JoinGroup and SyncGroup, whose (parked) wait is what their histograms are for. Timing every
    heartbeat cost ~10 % of the heartbeat throughput.
    """

    __slots__ = ("counts", "denials", "errors", "latency")

    def __init__(self) -> None:
        self.counts: list[list[int]] = [[0] * MAX_VERSIONS for _ in range(MAX_API_KEYS)]
        self.latency: dict[tuple[int, int], Histogram] = {}
        self.errors: dict[tuple[int, int], int] = {}
        # api key -> authorization checks denied (kcoord/broker/authz.py; issue 25)
        self.denials: dict[int, int] = {}

    def received(self, api_key: int, api_version: int) -> float:
        """Count one request; its receipt time if this one is timed, else 0.0."""
        row = self.counts[api_key]
        count = row[api_version] = row[api_version] + 1
        # The first LATENCY_SAMPLE_EVERY requests of each api and version, then one in that many:
        # rare APIs are timed every time, the hot ones (heartbeats, commits, fetches) sampled.
        if count <= LATENCY_SAMPLE_EVERY or not count % LATENCY_SAMPLE_EVERY or api_key in ALWAYS_TIMED:
            return time.perf_counter()
        return 0.0

    def answered(self, api_key: int, api_version: int, received: float, body: dict[str, Any]) -> None:
        """One response is ready (called from the connection)."""
        if received:
            histogram = self.latency.get((api_key, api_version))
            if histogram is None:
                histogram = self.latency[(api_key, api_version)] = Histogram(LATENCY_BUCKETS)
            histogram.observe(time.perf_counter() - received)
        code = body.get("error_code")
        if code:
            self.errors[(api_key, code)] = self.errors.get((api_key, code), 0) + 1

    def partition_errors(self, api_key: int, code: int, count: int) -> None:
        """Errors an API answers per partition only (OffsetCommit): counted by its server module,
        which knows them without walking the response, and only when there are any."""
        if code and count:
            self.errors[(api_key, code)] = self.errors.get((api_key, code), 0) + count

    def count(self, api_key: int) -> int:
        return sum(self.counts[api_key])

    def of_api(self, api_key: int) -> Histogram:
        """One API's (sampled) latency over all its versions."""
        merged = Histogram(LATENCY_BUCKETS)
        for (key, _), histogram in list(self.latency.items()):
            if key == api_key:
                merged.merge(histogram)
        return merged
