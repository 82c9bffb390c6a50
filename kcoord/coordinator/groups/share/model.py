"""A share group (KIP-932) and its members, as Kafka's group coordinator keeps them
(group-coordinator `modern/share/ShareGroup`, `ShareGroupMember`).

Everything here changes only through `records.apply`: live heartbeats and recovery apply the same
records the same way. Members are immutable values replaced whole (Kafka's
ShareGroupMember.Builder). Unlike a consumer group, partitions are shared: nobody owns one, so
there is no revocation and no partition epoch; a member takes its target assignment at once.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kcoord.coordinator.groups.consumer.model import Assignment

__all__ = [
    "SHARE_PROTOCOL_TYPE",
    "ShareGroup",
    "ShareGroupState",
    "ShareMember",
    "TopicPartitionsInfo",
    "merged",
    "without",
]

SHARE_PROTOCOL_TYPE = "share"  # ShareGroup.PROTOCOL_TYPE: ListGroups' protocol type of a share group
LEAVE_GROUP_MEMBER_EPOCH = -1


class ShareGroupState(enum.Enum):
    """Kafka's ShareGroup.ShareGroupState (the names ListGroups and ShareGroupDescribe report)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareMember:
    """One member (Kafka's ShareGroupMember): its subscription (the member-metadata record) and its
    current assignment (the current-assignment record; its state is always 0, STABLE)."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)

    def subscription(self) -> tuple[object, ...]:
        """What the member-metadata record holds (Kafka writes it when any of it changes)."""
        return (self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names)

    def current_assignment(self) -> tuple[object, ...]:
        """What the current-assignment record holds."""
        return (self.member_epoch, self.previous_member_epoch, self.assigned)


@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    """One topic of ShareGroupStatePartitionMetadataValue: its id, name and partitions."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: frozenset[int]


def merged(
    base: Mapping[uuid.UUID, TopicPartitionsInfo], more: Mapping[uuid.UUID, TopicPartitionsInfo]
) -> dict[uuid.UUID, TopicPartitionsInfo]:
    """Kafka's mergeShareGroupInitMaps: the union of the partitions, topic by topic."""
    out = dict(base)
    for topic_id, info in more.items():
        old = out.get(topic_id)
        out[topic_id] = (
            info
            if old is None
            else TopicPartitionsInfo(topic_id, info.topic_name, old.partitions | info.partitions)
        )
    return out


def without(
    base: Mapping[uuid.UUID, TopicPartitionsInfo], gone: Mapping[uuid.UUID, TopicPartitionsInfo]
) -> dict[uuid.UUID, TopicPartitionsInfo]:
    """`base` less the partitions of `gone` (topics left with none are dropped)."""
    out = {}
    for topic_id, info in base.items():
        left = info.partitions - (gone[topic_id].partitions if topic_id in gone else frozenset())
        if left:
            out[topic_id] = TopicPartitionsInfo(topic_id, info.topic_name, left)
    return out


class ShareGroup:
    """Kafka's ShareGroup: epochs, members, their subscriptions and the target assignment."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka 4.3.1: `new ShareGroup(registry, id)` has groupEpoch 1 and assignmentEpoch 1 (probed
        # on the jar), as ModernGroup starts every modern group.
        self.group_epoch = 1
        self.metadata_hash = 0
        self.assignment_epoch = 1
        self.assignment_timestamp_ms = 0
        """When the target was last computed (ShareGroupTargetAssignmentMetadataValue.AssignmentTimestamp):
        Kafka 4.3 recomputes it at most every share.assignment.interval.ms."""
        self.initialized_since_epoch = False
        """Share partitions were initialized since the group epoch was last set: the next heartbeat
        bumps it, so that they are assigned (derived on replay, not a record of its own)."""
        self.members: dict[str, ShareMember] = {}
        self.target: dict[str, Assignment] = {}  # member id -> target assignment
        self.subscribed_topics: dict[str, int] = {}  # topic name -> number of subscribed members
        # ShareGroupStatePartitionMetadata: the share partitions whose state is initialized (only those
        # are assigned), being initialized, and topics being deleted, by topic id.
        self.initialized: dict[uuid.UUID, TopicPartitionsInfo] = {}
        self.initializing: dict[uuid.UUID, TopicPartitionsInfo] = {}
        self.deleting: tuple[tuple[uuid.UUID, str], ...] = ()
        self.checked_topics_version = -1
        """The topic view's version when the metadata hash was last checked (not durable)."""

    @property
    def state(self) -> ShareGroupState:
        """Kafka's ShareGroup.maybeUpdateGroupState: Empty without members, else Stable."""
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, {})

    def initialized_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        """The partitions the assignor may give out (Kafka: initialized share partitions only)."""
        return {t: info.partitions for t, info in self.initialized.items()}

    def copy(self) -> ShareGroup:
        """A copy to restore should a write fail (members are immutable: shallow copies suffice)."""
        other = ShareGroup(self.group_id)
        other.group_epoch, other.metadata_hash = self.group_epoch, self.metadata_hash
        other.assignment_epoch = self.assignment_epoch
        other.assignment_timestamp_ms = self.assignment_timestamp_ms
        other.initialized_since_epoch = self.initialized_since_epoch
        other.members = dict(self.members)
        other.target = dict(self.target)
        other.subscribed_topics = dict(self.subscribed_topics)
        other.initialized, other.initializing = dict(self.initialized), dict(self.initializing)
        other.deleting = self.deleting
        other.checked_topics_version = self.checked_topics_version
        return other

    # -- changes (only through records.apply) -----------------------------------------------------
    def put_member(self, member: ShareMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._count(old.subscribed_topic_names, -1)
        self.members[member.member_id] = member
        self._count(member.subscribed_topic_names, 1)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._count(old.subscribed_topic_names, -1)

    def _count(self, names: Iterable[str], delta: int) -> None:
        for name in names:
            left = self.subscribed_topics.get(name, 0) + delta
            if left > 0:
                self.subscribed_topics[name] = left
            else:
                self.subscribed_topics.pop(name, None)

    def __repr__(self) -> str:
        return f"ShareGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch})"
