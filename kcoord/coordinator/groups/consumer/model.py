"""A consumer-protocol group (KIP-848) and its members, as Kafka's group coordinator keeps them
(group-coordinator `modern/consumer/ConsumerGroup`, `ConsumerGroupMember`, `modern/MemberState`).

Everything here changes only through `ConsumerGroup.replay` (records.py): live heartbeats and
recovery apply the same records the same way. Members are immutable values, replaced whole (Kafka's
`ConsumerGroupMember.Builder`), so a heartbeat can compute its records against the current state
before anything changes.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "Assignment",
    "ClassicMemberMetadata",
    "ConsumerGroup",
    "ConsumerGroupState",
    "ConsumerMember",
    "MemberState",
    "assignment_of",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Partitions by topic id; a topic with no partition is left out (so equal assignments compare equal)."""

EMPTY_ASSIGNMENT: Assignment = {}


def assignment_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset[int]]:
    """An Assignment from (topic id, partitions) pairs, dropping topics without partitions."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


class MemberState(enum.IntEnum):
    """Kafka's modern/MemberState, with its byte values (stored in the current-assignment record)."""

    STABLE = 0
    """The member has its target assignment at the target epoch."""
    UNREVOKED_PARTITIONS = 1
    """Waiting for the member to report that it revoked partitions it must give up."""
    UNRELEASED_PARTITIONS = 2
    """Waiting for other members to release partitions this one is to get."""
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    """Kafka's ConsumerGroup.ConsumerGroupState (the names ListGroups and describes report)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    """The group epoch moved past the target assignment's: the target is to be recomputed."""
    RECONCILING = "Reconciling"
    """A member has not reached the target assignment yet."""
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol inside a consumer group (online migration)
    brought with its JoinGroup: its session timeout and its (name, metadata) protocols, in its
    order of preference (Kafka's ConsumerGroupMemberMetadataValue.ClassicMemberMetadata)."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """One member (Kafka's ConsumerGroupMember): its subscription (the member-metadata record) and
    its current assignment (the current-assignment record)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    classic: ClassicMemberMetadata | None = None
    """Set for a member that joined with JoinGroup (the classic protocol) during online migration."""
    # -- the current assignment
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def subscription(self) -> tuple[object, ...]:
        """What the member-metadata record holds (Kafka writes it when any of it changes)."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.rebalance_timeout_ms,
            self.classic,
        )

    def current_assignment(self) -> tuple[object, ...]:
        """What the current-assignment record holds."""
        return (
            self.member_epoch,
            self.previous_member_epoch,
            self.state,
            self.assigned,
            self.pending_revocation,
        )


class ConsumerGroup:
    """Kafka's ConsumerGroup: epochs, members, the target assignment and who owns each partition."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka 4.3's ModernGroup constructor starts a group at epoch 1 and its target assignment at
        # TargetAssignmentMetadata.INITIAL (epoch 1): no member is ever given epoch 0, the joining
        # sentinel. A first member with a subscription bumps it to 2; one subscribing to nothing
        # changes nothing and is at epoch 1 (a replay without epoch records agrees).
        self.group_epoch = 1
        self.metadata_hash = 0
        """A hash of the subscribed topics' ids and partition counts when the group epoch was last
        set: a change of it bumps the epoch (Kafka 4.1+'s ConsumerGroupMetadataValue.MetadataHash)."""
        self.assignment_epoch = 1
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Assignment] = {}  # member id -> target assignment
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        """Who owns each partition now, as the owner's epoch (assigned or pending revocation):
        a partition is given to a new owner only once it is absent here (Kafka's currentPartitionEpoch)."""
        self.subscribed_topics: dict[str, int] = {}  # topic name -> number of subscribed members
        self.checked_topics_version = -1
        """The topic view's version when the subscribed topics' metadata was last checked against
        `metadata_hash` (not durable: after a restart the first heartbeat checks again)."""

    def journal(self, member_ids: Iterable[str]) -> Callable[[], None]:
        """How to put back these members, their targets and the epochs as they are now: the undo
        of a write that touches only them (cheaper than `copy` for a large group, where most
        heartbeats change one member)."""
        members = {m: self.members.get(m) for m in member_ids}
        targets = {m: self.target.get(m) for m in members}
        epochs = (self.group_epoch, self.metadata_hash, self.assignment_epoch)

        def restore() -> None:
            for member_id in members:  # release every touched member's partitions first, then
                self.remove_member(member_id)  # claim the old ones: no partition is lost
            for old in members.values():
                if old is not None:
                    self.put_member(old)
            for member_id, target in targets.items():
                if target is None:
                    self.target.pop(member_id, None)
                else:
                    self.target[member_id] = target
            self.group_epoch, self.metadata_hash, self.assignment_epoch = epochs

        return restore

    def copy(self) -> ConsumerGroup:
        """A copy to restore should a write fail (members are immutable values: shallow copies)."""
        other = ConsumerGroup(self.group_id)
        other.group_epoch = self.group_epoch
        other.metadata_hash = self.metadata_hash
        other.assignment_epoch = self.assignment_epoch
        other.members = dict(self.members)
        other.static_members = dict(self.static_members)
        other.target = dict(self.target)
        other.partition_epochs = dict(self.partition_epochs)
        other.subscribed_topics = dict(self.subscribed_topics)
        other.checked_topics_version = self.checked_topics_version
        return other

    # -- reads ------------------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        """Kafka's ConsumerGroup.maybeUpdateGroupState, computed when asked."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        epoch = self.assignment_epoch
        if all(m.is_reconciled_to(epoch) for m in self.members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The owner's epoch, or -1 if the partition is free."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY_ASSIGNMENT)

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members name (Kafka's computePreferredServerAssignor), else
        `default`; ties go to the name first in alphabetical order, so replay agrees."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return default
        return min(counts, key=lambda name: (-counts[name], name))

    # -- changes (only through records.apply) -----------------------------------------------------
    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._unsubscribe(old)
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        for name in member.subscribed_topic_names:
            self.subscribed_topics[name] = self.subscribed_topics.get(name, 0) + 1
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._claim(member)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._unsubscribe(old)
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _unsubscribe(self, member: ConsumerMember) -> None:
        for name in member.subscribed_topic_names:
            left = self.subscribed_topics.get(name, 0) - 1
            if left > 0:
                self.subscribed_topics[name] = left
            else:
                self.subscribed_topics.pop(name, None)

    def _release(self, member: ConsumerMember) -> None:
        for owned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in owned.items():
                for p in partitions:
                    self.partition_epochs.pop((topic_id, p), None)

    def _claim(self, member: ConsumerMember) -> None:
        for owned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in owned.items():
                for p in partitions:
                    self.partition_epochs[(topic_id, p)] = member.member_epoch

    def __repr__(self) -> str:
        return f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch})"
