"""Prometheus metrics of share groups (KIP-932), computed when /metrics is scraped from the live state:
share groups by state and their members (Kafka's GroupCoordinatorMetrics share-group-count by state),
the in-flight records of every share partition by delivery state (acquired, acknowledged, archived,
available), and each share group's lag (KIP-1226: the high watermark less the start offset less the
in-flight records whose delivery is complete, as DescribeShareGroupOffsets v1 answers it).

The counters of transitions over time (records acquired / acknowledged / released / rejected / archived,
lock expiries) need the share-partition tenant to report its transitions; they are not here yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.share_partitions import RecordState, SharePartitions, SharePartitionView

__all__ = ["ShareCollector", "ShareSource", "view_lag"]

# Kafka's ShareGroup.ShareGroupState, less Dead (a dead group is gone from the coordinator)
SHARE_GROUP_STATES = ("Empty", "Stable")
_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class ShareSource:
    """What the collector reads; the app points it at the state (again after a test-control reset)."""

    def __init__(self) -> None:
        self.manager: GroupManager | None = None
        self.shares: SharePartitions | None = None
        self.topics: TopicRegistry | None = None
        self.data: TopicData | None = None


def view_lag(view: SharePartitionView, high_watermark: int) -> int:
    """KIP-1226's lag of one share partition."""
    done = sum(
        r.last_offset - max(r.first_offset, view.start_offset) + 1
        for r in view.records
        if r.state in _DONE and r.last_offset >= view.start_offset
    )
    return max(high_watermark - view.start_offset - done, 0)


class ShareCollector(Collector):
    def __init__(self, source: ShareSource, max_groups: Callable[[], int]) -> None:
        self._source = source
        self._max_groups = max_groups

    def collect(self) -> Iterator[Any]:
        src = self._source  # before startup: every family, with no groups
        live = {} if src.manager is None else src.manager.share.rt.share_groups
        groups = sorted(live.values(), key=lambda g: g.group_id)
        by_state = GaugeMetricFamily("kcoord_share_groups", "Share groups by state", labels=["state"])
        counts = dict.fromkeys(SHARE_GROUP_STATES, 0)
        for group in groups:
            counts[group.state.value] = counts.get(group.state.value, 0) + 1
        for state, count in counts.items():
            by_state.add_metric([state], count)
        yield by_state
        yield GaugeMetricFamily(
            "kcoord_share_members", "Members of all share groups", value=sum(len(g.members) for g in groups)
        )
        yield from self._partitions([g.group_id for g in groups])

    def _partitions(self, group_ids: list[str]) -> Iterator[Any]:
        records = GaugeMetricFamily(
            "kcoord_share_inflight_records",
            "In-flight records of all share partitions by delivery state",
            labels=["state"],
        )
        lag = GaugeMetricFamily("kcoord_share_group_lag", "Records a share group has yet to deliver",
                                labels=["group"])  # fmt: skip
        by_state = {state.name.lower(): 0 for state in RecordState}
        lags: list[tuple[int, str]] = []
        for group_id in group_ids:
            total = 0
            for view, high_watermark in self._views(group_id):
                for r in view.records:
                    by_state[r.state.name.lower()] += r.last_offset - r.first_offset + 1
                total += view_lag(view, high_watermark) if high_watermark >= 0 else 0
            lags.append((total, group_id))
        for state, count in by_state.items():
            records.add_metric([state], count)
        yield records
        for total, group_id in sorted(lags, key=lambda t: (-t[0], t[1]))[: self._max_groups()]:
            lag.add_metric([group_id], total)
        yield lag

    def _views(self, group_id: str) -> Iterator[tuple[SharePartitionView, int]]:
        src = self._source
        if src.shares is None or src.topics is None or src.data is None:
            return
        for topic_id, partition in src.shares.partitions(group_id):
            view = src.shares.describe(group_id, topic_id, partition)
            name = src.topics.name_for_id(topic_id)
            log = None if name is None else src.data.log(name, partition)
            if view is not None:
                yield view, -1 if log is None else log.high_watermark
