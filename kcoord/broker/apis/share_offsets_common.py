"""What the three share-group offset handlers (DescribeShareGroupOffsets 90, AlterShareGroupOffsets 91,
DeleteShareGroupOffsets 92) share: the share-partition tenant, the group's refusals before the tenant is
asked (GroupCoordinatorService / GroupMetadataManager: the group id, the shard's phase, a share group with
members), and the topic lookups as Kafka's metadata cache answers them.
"""

from __future__ import annotations

import uuid

from kcoord.broker.context import ServerContext
from kcoord.coordinator.share_partitions import RecordState, SharePartitions
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = [
    "NOT_HOSTED",
    "Refusal",
    "lag",
    "refusal",
    "share_partitions_of",
    "tenant",
    "topic_of",
]

Refusal = tuple[ErrorCode, str | None]
# Kafka 4.3.1's message with UNKNOWN_TOPIC_OR_PARTITION for a topic or partition it does not know
# (Errors.UNKNOWN_TOPIC_OR_PARTITION's default message), probed on the broker.
NOT_HOSTED = "This server does not host this topic-partition."


def tenant(ctx: ServerContext) -> SharePartitions | None:
    return None if ctx.share is None else ctx.share.partitions


def refusal(ctx: ServerContext, group_id: str, *, must_exist: bool, must_be_empty: bool) -> Refusal | None:
    """The group-level error, or None to go on, as Kafka 4.3.1 answers (probed): an empty id
    (INVALID_GROUP_ID), the group's shard not serving, a classic or consumer group under the id
    (GROUP_ID_NOT_FOUND "Group g is not a share group.": GroupMetadataManager.getOrMaybeCreateShareGroup
    for Alter, shareGroup for Delete), a group that does not exist (Delete only: GROUP_ID_NOT_FOUND), a
    share group with members (NON_EMPTY_GROUP, throwIfShareGroupIsNotEmpty), all before the share
    coordinator is asked."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, "The group id is invalid."
    phase = ctx.manager.group_configs.error(group_id)
    if phase is not None:
        return phase, None
    if (other := ctx.manager.share.other_type(group_id)) is not None:
        return ErrorCode.GROUP_ID_NOT_FOUND, other
    group = ctx.manager.share.group(group_id)
    if group is None and must_exist:
        partitions = tenant(ctx)
        if partitions is None or not partitions.partitions(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if group is not None and must_be_empty and group.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return None


def topic_of(ctx: ServerContext, name: str) -> tuple[uuid.UUID, int] | None:
    """(topic id, partition count), None for a topic this broker does not know."""
    return ctx.topics.describe(name)


def share_partitions_of(ctx: ServerContext, group_id: str) -> list[tuple[uuid.UUID, int]]:
    """The group's share partitions with state, sorted: what DeleteShareGroupOffsets tombstones
    (DescribeShareGroupOffsets of the whole group lists the group side's initialized partitions)."""
    partitions = tenant(ctx)
    return [] if partitions is None else partitions.partitions(group_id)


def lag(ctx: ServerContext, name: str, partition: int, group_id: str, topic_id: uuid.UUID) -> tuple[int, int]:
    """(start offset, lag) of one share partition; (-1, -1) without state. KIP-1226's lag: the high
    watermark less the start offset less the in-flight records whose delivery is complete
    (SharePartition's deliveryCompleteCount), -1 while the log is not here."""
    partitions = tenant(ctx)
    known = partitions is not None and topic_id != ZERO_UUID
    view = partitions.describe(group_id, topic_id, partition) if known else None  # type: ignore[union-attr]
    if view is None:
        return -1, -1
    log = ctx.data.log(name, partition)
    if log is None:
        return view.start_offset, -1
    done = sum(
        r.last_offset - max(r.first_offset, view.start_offset) + 1
        for r in view.records
        if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) and r.last_offset >= view.start_offset
    )
    return view.start_offset, log.high_watermark - view.start_offset - done
