"""What a test reads back of share groups (issue 34): one share partition's start offset, state epoch
and in-flight records with their states, delivery counts, holders and lock deadlines, as the tenant
sees them now (`SharePartitions.describe`: Kafka's SharePartition cachedState)."""

from __future__ import annotations

from typing import Any

from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.share_partitions import SharePartitions
from kcoord.wiring.controls.names import ControlError

__all__ = ["share_partition_view"]


def share_partition_view(
    shares: SharePartitions | None, topics: TopicRegistry, group: str, topic: str, partition: int
) -> dict[str, Any]:
    if shares is None:
        raise ControlError(404, "this server has no share partitions (cluster mode)")
    found = topics.describe(topic)
    if found is None:
        raise ControlError(404, f"no topic {topic}")
    topic_id, count = found
    if not 0 <= partition < count:
        raise ControlError(404, f"topic {topic} has no partition {partition}")
    view = shares.describe(group, topic_id, partition)
    if view is None:
        raise ControlError(404, f"share group {group} has no state for {topic}-{partition}")
    return {
        "group": group,
        "topic": topic,
        "topic_id": str(topic_id),
        "partition": partition,
        "start_offset": view.start_offset,
        "end_offset": view.end_offset,
        "state_epoch": view.state_epoch,
        "records": [
            {
                "first_offset": r.first_offset,
                "last_offset": r.last_offset,
                "state": r.state.name,
                "delivery_count": r.delivery_count,
                "member_id": r.member_id,
                "lock_deadline_ms": r.lock_deadline_ms,
            }
            for r in view.records
        ],
    }
