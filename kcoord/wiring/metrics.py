"""Prometheus metrics: cheap counting on the request path, everything else computed at scrape time.

The request path only bumps plain ints and lists (`RequestStats`, `GroupEvents`, `Histogram`): no
prometheus_client object, no lock, no label lookup per request. `KcoordCollector` turns those counts and
the live state (groups, offsets, partition logs, connections) into metric families when /metrics is
scraped. Groups of both kinds are counted, classic and consumer-protocol (KIP-848), from
`GroupManager.groups()`; per-group series are capped at `metrics_max_groups` groups of either kind,
largest total lag first (see docs/metrics.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from kcoord import storage
from kcoord.broker.request_stats import (
    CONSUMER_GROUP_HEARTBEAT,
    HEARTBEAT,
    JOIN_GROUP,
    LATENCY_SAMPLE_EVERY,
    OFFSET_COMMIT,
    SYNC_GROUP,
    Histogram,
    RequestStats,
)
from kcoord.coordinator.groups.admin import GROUP_TYPE_CLASSIC, GROUP_TYPE_CONSUMER
from kcoord.coordinator.groups.consumer.model import ConsumerGroupState
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.manager import GroupSummary
from kcoord.coordinator.groups.state import GroupState
from kcoord.partition_log.port import PartitionStore
from kcoord.protocol.messages import REQUEST_SCHEMAS

__all__ = [
    "API_NAMES",
    "APPEND_SAMPLE_EVERY",
    "GroupEvents",
    "KcoordCollector",
    "SampledHistogram",
    "TimedFileOps",
    "partition_lag",
    "rebalance_reason_label",
]

STORAGE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                   0.5, 1, 2.5)  # fmt: skip
REBALANCE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

# The request counters' `api` label: each served API's name from its one schema (protocol/messages), so
# an API added later is named without anyone remembering this table.
API_NAMES: dict[int, str] = {
    key: schema.name.removesuffix("Request") for key, schema in REQUEST_SCHEMAS.items()
}
APPEND_SAMPLE_EVERY = 16


class SampledHistogram(Histogram):
    """A histogram of a hot path that times only some events: the first `every`, then one in
    `every` (its `_count` is the sample size). Timing each coordinator-log append (a closure, two
    clock reads, a bisect) was ~1 % of an OffsetCommit's server CPU (bench.metrics_overhead)."""

    __slots__ = ("every", "seen")

    def __init__(self, bounds: tuple[float, ...], every: int) -> None:
        super().__init__(bounds)
        self.every = every
        self.seen = 0

    def sampled(self) -> bool:
        """Count one event; whether to time it."""
        self.seen = seen = self.seen + 1
        return seen <= self.every or not seen % self.every


# Rebalance reasons are free text with member ids in them: map them to a bounded set of labels.
# Ordered: the first pattern found in the reason wins. The texts are the group logic's own
# (kcoord/coordinator/groups/join.py, membership.py, rebalance.py, static.py, sync.py, controls.py).
_REASON_LABELS = (
    ("test control", "test_control"),
    ("adding new member", "new_member"),
    ("rejoined in", "member_rejoined"),
    ("left the group", "member_left"),
    ("session expired", "session_expired"),
    ("pending sync expiration", "sync_timeout"),
    ("static member", "static_member"),
    ("over capacity", "over_capacity"),
    ("failed to persist", "storage_failure"),
)


def rebalance_reason_label(reason: str) -> str:
    for pattern, label in _REASON_LABELS:
        if pattern in reason:
            return label
    return "other"


class GroupEvents:
    """The group manager's transition observer: rebalances by reason, PreparingRebalance -> Stable time."""

    def __init__(self) -> None:
        self.rebalances: dict[str, int] = {}
        self.rebalance_seconds = Histogram(REBALANCE_BUCKETS)
        self._started_ms: dict[str, int] = {}

    def on_transition(self, group: Group, previous: GroupState, reason: str, now_ms: int) -> None:
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            label = rebalance_reason_label(reason)
            self.rebalances[label] = self.rebalances.get(label, 0) + 1
            # A rebalance restarted from CompletingRebalance keeps its start: one rebalance, one duration.
            self._started_ms.setdefault(group.group_id, now_ms)
        elif state is GroupState.STABLE:
            started = self._started_ms.pop(group.group_id, None)
            if started is not None:
                self.rebalance_seconds.observe(max(now_ms - started, 0) / 1000)
        elif state in (GroupState.EMPTY, GroupState.DEAD):
            self._started_ms.pop(group.group_id, None)


class TimedFileOps(storage.FileOps):
    """The coordinator log's file operations, timing each fsync (it runs on the writer's thread)."""

    def __init__(self, fsync_seconds: Histogram) -> None:
        super().__init__()
        self._fsync_seconds = fsync_seconds

    def fsync(self, fd: int) -> None:
        started = time.perf_counter()
        super().fsync(fd)
        self._fsync_seconds.observe(time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class Lag:
    log_end_offset: int
    offsets: int
    seconds: float


def partition_lag(log: PartitionStore | None, committed: int, now_ms: int) -> Lag | None:
    """Lag of a committed offset behind the partition's high watermark (what a consumer can read).

    Seconds: now minus the timestamp of the batch holding the first record not yet consumed (its max
    timestamp: batch granularity, CreateTime unless the topic uses LogAppendTime); 0 when caught up.
    """
    if log is None:
        return None
    end = log.high_watermark
    position = max(committed, log.log_start_offset)
    if position >= end:
        return Lag(end, max(end - committed, 0), 0.0)
    timestamp = log.batch_max_timestamp(position)
    seconds = max(now_ms - timestamp, 0) / 1000 if timestamp >= 0 else 0.0
    return Lag(end, end - committed, seconds)


GroupLags = dict[tuple[str, int], tuple[int, Lag | None]]
LagSource = Callable[[str], GroupLags]
"""A group id -> (topic, partition) -> (committed offset, lag or None)."""

# Every state of each kind of group has a `kcoord_groups` series, 0 when no group is in it (Dead
# groups are gone from memory): a dashboard sees the series before the first group arrives.
GROUP_STATES: dict[str, tuple[str, ...]] = {
    GROUP_TYPE_CLASSIC: tuple(s.value for s in GroupState if s is not GroupState.DEAD),
    GROUP_TYPE_CONSUMER: tuple(s.value for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD),
}


class KcoordCollector(Collector):
    """Reads the server's state when /metrics is scraped."""

    def __init__(self, source: MetricsSource, max_groups: int) -> None:
        self._source = source
        self._max_groups = max_groups

    def collect(self) -> Iterator[Any]:
        src = self._source
        yield from self._group_metrics(src.groups(), src.lags)
        yield from self._request_metrics(src.requests)
        yield from self._rebalance_metrics(src.events)
        yield from self._server_metrics(src)

    def _group_metrics(self, groups: list[GroupSummary], lags: LagSource) -> Iterator[Any]:
        # Kafka's group coordinator metrics count groups by state per protocol (classic-group-count,
        # consumer-group-count); here one family with a `type` label.
        by_state = GaugeMetricFamily(
            "kcoord_groups", "Groups by type (classic, consumer) and state", labels=["type", "state"]
        )
        counts = {(kind, state): 0 for kind, states in GROUP_STATES.items() for state in states}
        for group in groups:
            key = (group.group_type, group.state)
            counts[key] = counts.get(key, 0) + 1
        for (kind, state), count in counts.items():
            by_state.add_metric([kind, state], count)
        yield by_state
        yield GaugeMetricFamily(
            "kcoord_members", "Members of all groups", value=sum(g.members for g in groups)
        )
        ranked = sorted(
            ((g, lags(g.group_id)) for g in groups), key=lambda gl: (-_total_lag(gl[1]), gl[0].group_id)
        )
        shown, omitted = ranked[: self._max_groups], len(ranked) - min(len(ranked), self._max_groups)
        yield from _per_group(shown)
        yield GaugeMetricFamily(
            "kcoord_metrics_groups_omitted",
            "Groups left out of the per-group series (--metrics-max-groups)",
            value=omitted,
        )

    def _request_metrics(self, stats: RequestStats) -> Iterator[Any]:
        total = CounterMetricFamily("kcoord_requests", "Requests received", labels=["api", "version"])
        for api_key, versions in enumerate(stats.counts):
            for version, count in enumerate(versions):
                if count:
                    total.add_metric([API_NAMES.get(api_key, str(api_key)), str(version)], count)
        latency = HistogramMetricFamily(
            "kcoord_request_latency_seconds",
            f"Receipt to response ready, sampled: 1 request in {LATENCY_SAMPLE_EVERY} "
            "(JoinGroup, SyncGroup: all)",
            labels=["api", "version"],
        )
        for (api_key, version), histogram in sorted(list(stats.latency.items())):
            labels = [API_NAMES.get(api_key, str(api_key)), str(version)]
            latency.add_metric(labels, histogram.cumulative(), histogram.total)
        yield total
        yield latency
        denials = CounterMetricFamily(
            "kcoord_authorization_denials", "Authorization checks denied, by API", labels=["api"]
        )
        for api_key, count in sorted(list(stats.denials.items())):
            denials.add_metric([API_NAMES.get(api_key, str(api_key))], count)
        yield denials
        errors = CounterMetricFamily("kcoord_errors", "Error codes answered", labels=["api", "error"])
        for (api_key, code), count in sorted(list(stats.errors.items())):
            errors.add_metric([API_NAMES.get(api_key, str(api_key)), _error_name(code)], count)
        yield errors
        yield CounterMetricFamily(
            "kcoord_heartbeats",
            "Heartbeat and ConsumerGroupHeartbeat requests received",
            value=stats.count(HEARTBEAT) + stats.count(CONSUMER_GROUP_HEARTBEAT),
        )
        yield CounterMetricFamily(
            "kcoord_offset_commits",
            "OffsetCommit requests received",
            value=stats.count(OFFSET_COMMIT),
        )
        for name, api_key, what in (("join", JOIN_GROUP, "JoinGroup"), ("sync", SYNC_GROUP, "SyncGroup")):
            merged = stats.of_api(api_key)
            family = HistogramMetricFamily(
                f"kcoord_{name}_wait_seconds", f"{what} receipt to answer (parked time)"
            )
            family.add_metric([], merged.cumulative(), merged.total)
            yield family

    def _rebalance_metrics(self, events: GroupEvents) -> Iterator[Any]:
        rebalances = CounterMetricFamily("kcoord_rebalances", "Rebalances started", labels=["reason"])
        for reason, count in sorted(list(events.rebalances.items())):
            rebalances.add_metric([reason], count)
        yield rebalances
        duration = HistogramMetricFamily("kcoord_rebalance_duration_seconds", "PreparingRebalance to Stable")
        duration.add_metric([], events.rebalance_seconds.cumulative(), events.rebalance_seconds.total)
        yield duration

    def _server_metrics(self, src: MetricsSource) -> Iterator[Any]:
        yield GaugeMetricFamily("kcoord_open_connections", "Open Kafka connections", value=src.connections())
        for name, help_text, histogram in (
            (
                "kcoord_storage_append_latency_seconds",
                f"Coordinator log append to durable, sampled: the first {APPEND_SAMPLE_EVERY} appends, "
                f"then 1 in {APPEND_SAMPLE_EVERY}",
                src.append_seconds,
            ),
            ("kcoord_storage_fsync_latency_seconds", "Coordinator log fsync", src.fsync_seconds),
        ):
            family = HistogramMetricFamily(name, help_text)
            family.add_metric([], histogram.cumulative(), histogram.total)
            yield family
        log_bytes = GaugeMetricFamily("kcoord_log_bytes", "Bytes on disk", labels=["log"])
        coordinator_bytes, partition_bytes = src.log_bytes()
        log_bytes.add_metric(["coordinator"], coordinator_bytes)
        log_bytes.add_metric(["partitions"], partition_bytes)
        yield log_bytes
        yield CounterMetricFamily(
            "kcoord_compaction_runs", "Coordinator log compaction passes", value=src.compactions()
        )
        authentications = CounterMetricFamily(
            "kcoord_authentications",
            "SASL authentications and re-authentications by mechanism and result",
            labels=["mechanism", "result"],
        )
        for (mechanism, result), count in sorted(src.authentications().items()):
            authentications.add_metric([mechanism, result], count)
        yield authentications


class MetricsSource:
    """What the collector reads; the app fills in the callables once it has started."""

    def __init__(self) -> None:
        self.requests = RequestStats()
        self.events = GroupEvents()
        self.append_seconds = SampledHistogram(STORAGE_BUCKETS, APPEND_SAMPLE_EVERY)
        self.fsync_seconds = Histogram(STORAGE_BUCKETS)
        self.groups: Callable[[], list[GroupSummary]] = list
        self.lags: LagSource = lambda group_id: {}
        self.connections: Callable[[], int] = lambda: 0
        self.log_bytes: Callable[[], tuple[int, int]] = lambda: (0, 0)
        self.compactions: Callable[[], int] = lambda: 0
        # (mechanism, result) -> count (kcoord/broker/listener.py's Security.authentications)
        self.authentications: Callable[[], Mapping[tuple[str, str], int]] = dict
        # More collectors scraped with these (cluster mode adds kcoord/cluster/cluster_metrics.py's).
        self.extra: list[Collector] = []


def _total_lag(lags: GroupLags) -> int:
    return sum(lag.offsets for _, lag in lags.values() if lag is not None)


def _per_group(shown: Iterable[tuple[GroupSummary, GroupLags]]) -> Iterator[Any]:
    members = GaugeMetricFamily("kcoord_group_members", "Members of a group", labels=["group"])
    generation = GaugeMetricFamily(
        "kcoord_group_generation", "Generation of a classic group", labels=["group"]
    )
    epoch = GaugeMetricFamily(
        "kcoord_group_epoch", "Group epoch of a consumer-protocol group (KIP-848)", labels=["group"]
    )
    assignment_epoch = GaugeMetricFamily(
        "kcoord_group_assignment_epoch",
        "Target assignment epoch of a consumer-protocol group (KIP-848)",
        labels=["group"],
    )
    state = GaugeMetricFamily(
        "kcoord_group_state", "1 for the group's current state", labels=["group", "state"]
    )
    committed = GaugeMetricFamily(
        "kcoord_group_committed_offset", "Committed offset", labels=["group", "topic", "partition"]
    )
    lag_offsets = GaugeMetricFamily(
        "kcoord_group_lag_offsets",
        "High watermark minus committed offset",
        labels=["group", "topic", "partition"],
    )
    lag_seconds = GaugeMetricFamily(
        "kcoord_group_lag_seconds",
        "Age of the oldest unconsumed batch",
        labels=["group", "topic", "partition"],
    )
    for group, lags in shown:
        gid = group.group_id
        members.add_metric([gid], group.members)
        if group.assignment_epoch is None:
            generation.add_metric([gid], group.generation_id)
        else:  # a consumer group's generation_id is its group epoch
            epoch.add_metric([gid], group.generation_id)
            assignment_epoch.add_metric([gid], group.assignment_epoch)
        state.add_metric([gid, group.state], 1)
        for (topic, partition), (offset, lag) in sorted(lags.items()):
            labels = [gid, topic, str(partition)]
            committed.add_metric(labels, offset)
            if lag is not None:
                lag_offsets.add_metric(labels, lag.offsets)
                lag_seconds.add_metric(labels, lag.seconds)
    yield from (members, generation, epoch, assignment_epoch, state, committed, lag_offsets, lag_seconds)


def _error_name(code: int) -> str:
    from kcoord.protocol.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
