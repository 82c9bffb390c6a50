"""Online migration between the classic and the consumer protocol (KIP-848), as Kafka's
GroupMetadataManager does it: `group.consumer.migration.policy` (bidirectional by default) allows

* the upgrade of a non-empty classic group of the consumer protocol type when a consumer-protocol
  member joins it (validateOnlineUpgrade, convertToConsumerGroup, ConsumerGroup.fromClassicGroup):
  every member keeps its partitions at the classic generation, now the group and member epoch;
* the downgrade of a consumer group to a classic one when its last consumer-protocol member leaves
  and classic members remain (validateOnlineDowngradeWithFencedMember, convertToClassicGroup,
  ClassicGroup.fromConsumerGroup): the classic group starts Stable at the group epoch with the
  members' target assignments, then rebalances.

Both are pure: they return the records to write and the group to put in place.
"""

from __future__ import annotations

import enum

from kcoord.coordinator.groups.consumer.classic_members import (
    CONSUMER_PROTOCOL_TYPE,
    decode_member_assignment,
    encode_member_assignment,
)
from kcoord.coordinator.groups.consumer.model import ClassicMemberMetadata, ConsumerGroup, ConsumerMember
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerRecord,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.coordinator.groups.consumer.topics import TopicView, metadata_hash
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.member import Member
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.subscriptions import topics_of

__all__ = ["MigrationPolicy", "downgrade", "group_tombstones", "upgrade_records"]


class MigrationPolicy(enum.Enum):
    """Kafka's group.consumer.migration.policy."""

    BIDIRECTIONAL = "bidirectional"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    DISABLED = "disabled"

    @property
    def upgrades(self) -> bool:
        return self in (MigrationPolicy.BIDIRECTIONAL, MigrationPolicy.UPGRADE)

    @property
    def downgrades(self) -> bool:
        return self in (MigrationPolicy.BIDIRECTIONAL, MigrationPolicy.DOWNGRADE)


def can_upgrade(classic: Group, max_size: int | None) -> bool:
    """Kafka's validateOnlineUpgrade (the policy is the caller's): a group of the consumer protocol
    type with a chosen protocol, no bigger than a consumer group may be."""
    return (
        classic.protocol_type == CONSUMER_PROTOCOL_TYPE
        and classic.protocol_name is not None
        and (max_size is None or len(classic.members) <= max_size)
    )


def upgrade_records(classic: Group, topics: TopicView) -> list[ConsumerRecord]:
    """The records of the consumer group a classic group becomes (ConsumerGroup.fromClassicGroup
    and createConsumerGroupRecords): subscriptions, the group epoch, targets, the target's epoch,
    current assignments. Every member is Stable at the classic generation with the partitions its
    classic assignment gave it, which is also its target."""
    group_id, epoch = classic.group_id, classic.generation_id
    members = []
    for m in classic.members.values():
        metadata = m.metadata_for(classic.protocol_name)
        assigned = decode_member_assignment(m.assignment, topics)
        members.append(
            ConsumerMember(
                m.member_id,
                instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=tuple(sorted(topics_of(metadata) or ())),
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)),
                member_epoch=epoch,
                previous_member_epoch=epoch,
                assigned=assigned,
            )
        )
    names = {name for member in members for name in member.subscribed_topic_names}
    records: list[ConsumerRecord] = [ConsumerMemberSubscription(group_id, m.member_id, m) for m in members]
    records.append(ConsumerGroupEpoch(group_id, epoch, metadata_hash(names, topics)))
    records += [ConsumerTargetMember(group_id, m.member_id, dict(m.assigned)) for m in members]
    records.append(ConsumerTargetEpoch(group_id, epoch))
    records += [ConsumerMemberAssignment(group_id, m.member_id, m) for m in members]
    return records


def can_downgrade(group: ConsumerGroup, leaving: str, max_size: int | None) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember (the policy is the caller's): everyone but
    the leaving member speaks the classic protocol, someone remains, and they fit a classic group."""
    others = [m for m in group.members.values() if m.member_id != leaving]
    leaving_member = group.members.get(leaving)
    return (
        leaving_member is not None
        and leaving_member.classic is None
        and bool(others)
        and all(m.classic is not None for m in others)
        and (max_size is None or len(others) <= max_size)
    )


def group_tombstones(group: ConsumerGroup) -> list[ConsumerRecord]:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords: every member's current assignment, then
    target, the target's epoch, every subscription, the group epoch."""
    group_id, ids = group.group_id, list(group.members)
    records: list[ConsumerRecord] = [ConsumerMemberAssignment(group_id, m, None) for m in ids]
    records += [ConsumerTargetMember(group_id, m, None) for m in ids]
    records.append(ConsumerTargetEpoch(group_id, None))
    records += [ConsumerMemberSubscription(group_id, m, None) for m in ids]
    records.append(ConsumerGroupEpoch(group_id, None))
    return records


def downgrade(
    group: ConsumerGroup, leaving: str, topics: TopicView, now_ms: int
) -> tuple[list[ConsumerRecord], Group]:
    """The consumer group's tombstones and the classic group that takes its place
    (ClassicGroup.fromConsumerGroup): Stable at the group epoch, each remaining member with its
    classic protocols and its target assignment; the caller writes its record and rebalances it."""
    classic = Group(group.group_id, now_ms, GroupState.STABLE)
    classic.generation_id = group.group_epoch
    for m in group.members.values():
        if m.member_id == leaving or m.classic is None:
            continue
        member = Member(
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            session_timeout_ms=m.classic.session_timeout_ms,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=m.classic.supported_protocols,
            assignment=encode_member_assignment(m, topics, group.target_of(m.member_id)),
        )
        classic.add_member(member, None)
    classic.protocol_name = classic.select_protocol()
    classic.recompute_subscriptions()
    return group_tombstones(group), classic
