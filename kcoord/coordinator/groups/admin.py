"""DescribeGroups (15) v0-6, ListGroups (16) v0-5, DeleteGroups (42) v0-2."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.model import ConsumerGroupState
from kcoord.coordinator.groups.consumer.records import ConsumerGroupEpoch, ConsumerTargetEpoch
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.group_configs import config_tombstones
from kcoord.coordinator.groups.offset_api import OffsetHandler
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.records import GroupTombstone, LogRecord
from kcoord.coordinator.groups.runtime import Runtime, Undo, Write
from kcoord.coordinator.groups.share.model import SHARE_PROTOCOL_TYPE, ShareGroupState
from kcoord.coordinator.groups.share.service import ShareGroupService
from kcoord.coordinator.groups.state import GroupState

__all__ = [
    "GROUP_TYPE_CLASSIC",
    "GROUP_TYPE_CONSUMER",
    "GROUP_TYPE_SHARE",
    "AdminHandler",
    "DeleteGroupsRespond",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
]

DeleteGroupsRespond = Callable[[list[tuple[str, ErrorCode]]], None]
"""DeleteGroups' answer: (group id, error) per requested id, in order."""

GROUP_TYPE_CLASSIC = "classic"
GROUP_TYPE_CONSUMER = "consumer"  # the consumer protocol's groups (KIP-848)
GROUP_TYPE_SHARE = "share"  # share groups (KIP-932): Kafka's Group.GroupType.SHARE


@dataclass(frozen=True, slots=True)
class GroupListing:
    """One ListGroups entry: a classic or a consumer-protocol group."""

    group_id: str
    protocol_type: str
    state: GroupState | ConsumerGroupState | ShareGroupState
    group_type: str = GROUP_TYPE_CLASSIC


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One DescribeGroups entry: `error` NONE, a phase error (then nothing else is set) or
    GROUP_ID_NOT_FOUND (state Dead)."""

    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[MemberDescription, ...]
    message: str | None = None
    """v6's error message when it is not the "Group X not found." of a missing group."""


class AdminHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer, offsets: OffsetHandler) -> None:
        self.rt = rt
        self.rb = rebalancer
        self.offsets = offsets
        self.share: ShareGroupService | None = None
        """Share groups (set by the manager, which builds the service after this handler)."""

    # -- DescribeGroups ---------------------------------------------------------------------------
    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """One description per requested id, in order ("" is a group id here: Kafka refuses only
        null). A missing group is GROUP_ID_NOT_FOUND in state Dead; the door answers it as v0-5
        expect (NONE, Dead) or v6 (KIP-1043)."""
        out = []
        for group_id in group_ids:
            error = self.rt.phase_error(group_id)
            group = self.rt.group(group_id)
            if error is not None:
                out.append(GroupDescription(group_id, error, "", "", "", ()))
            elif group is None:
                # GroupMetadataManager.describeGroups looks up a classic group: a share group's id
                # is "not a classic group" (Kafka 4.3.1, seen on the oracle)
                other = (
                    f"Group {group_id} is not a classic group." if group_id in self.rt.share_groups else None
                )
                out.append(
                    GroupDescription(
                        group_id, ErrorCode.GROUP_ID_NOT_FOUND, GroupState.DEAD.value, "", "", (), other
                    )
                )
            else:
                out.append(_describe_group(group))
        return out

    # -- ListGroups -------------------------------------------------------------------------------
    def list_groups(
        self, states: Collection[str], types: Collection[str]
    ) -> tuple[ErrorCode, list[GroupListing]]:
        """ListGroups: the live groups whose state and type are in the (lower-case) filters, an empty
        filter matching all; the version-dependent response is built at the door."""
        error = self.rt.phases.node_error  # every group this node holds: no shard of its own
        if error is ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return error, []
        listed = []
        if not types or GROUP_TYPE_CLASSIC in types:
            for group in self.rt.groups.values():
                if group.state is GroupState.DEAD or (states and group.state.value.lower() not in states):
                    continue
                listed.append(GroupListing(group.group_id, group.protocol_type or "", group.state))
        if not types or GROUP_TYPE_CONSUMER in types:
            for consumer_group in self.rt.consumer_groups.values():
                state = consumer_group.state
                if not states or state.value.lower() in states:
                    # Kafka lists a consumer group with protocol type "consumer" (ConsumerGroup.protocolType)
                    listed.append(
                        GroupListing(consumer_group.group_id, "consumer", state, GROUP_TYPE_CONSUMER)
                    )
        if not types or GROUP_TYPE_SHARE in types:
            listed.extend(self._share_listings(states))
        # While loading Kafka answers COORDINATOR_LOAD_IN_PROGRESS and still lists the loaded groups.
        return error or ErrorCode.NONE, listed

    def _share_listings(self, states: Collection[str]) -> list[GroupListing]:
        """Share groups as Kafka lists them: protocol type "share", type "share" (ShareGroup)."""
        return [
            GroupListing(g.group_id, SHARE_PROTOCOL_TYPE, g.state, GROUP_TYPE_SHARE)
            for g in self.rt.share_groups.values()
            if not states or g.state.value.lower() in states
        ]

    # -- DeleteGroups -----------------------------------------------------------------------------
    def delete_groups(self, group_ids: Sequence[str], respond: DeleteGroupsRespond) -> Write | None:
        """Delete each group (distinct ids: the server deduplicates them, as KafkaApis does); one
        (group id, error) per id, in order, once the tombstones are durable. All or nothing: if
        the write fails the runtime restores every group it deleted (Kafka's runtime reverts its
        timeline), so a retry finds them, and each gets the append error."""
        results: list[tuple[str, ErrorCode]] = []
        records: list[LogRecord] = []  # per group its offsets' tombstones, then its own
        offsets: list[LogRecord] = []  # applied once durable; the groups' now
        undo: list[Undo] = []
        shares: list[str] = []  # share groups deleted: the data side forgets them once durable
        for group_id in group_ids:
            error = self._delete_error(group_id)
            if error is None:
                tombstones: list[LogRecord] = list(self.rt.offsets.tombstones_for_group(group_id))
                tombstones += config_tombstones(self.rt.group_configs, group_id)
                offsets.extend(tombstones)
                records.extend(tombstones)
                if group_id in self.rt.consumer_groups:
                    records.extend(self._delete_consumer_group(group_id, undo))
                elif group_id in self.rt.share_groups and self.share is not None:
                    records.extend(self.share.delete_now(group_id, undo))
                    shares.append(group_id)
                else:
                    records.append(self.delete_now(group_id, undo))
            results.append((group_id, error or ErrorCode.NONE))
        if not records:
            respond(results)
            return None

        def done(error: BaseException | None) -> None:
            if error is None:
                for group_id in shares:
                    self.share.deleted(group_id)  # type: ignore[union-attr]
                respond(results)
            else:
                respond([(g, APPEND_FAILED if e is ErrorCode.NONE else e) for g, e in results])

        return Write(records, done, durable=offsets, undo=undo)

    def _delete_error(self, group_id: str) -> ErrorCode | None:
        error = self.rt.phase_error(group_id)
        if error is not None:
            return error
        if group_id in self.rt.share_groups and self.share is not None:
            return self.share.delete_error(group_id)
        consumer_group = self.rt.consumer_groups.get(group_id)
        if consumer_group is not None:  # ConsumerGroup.validateDeleteGroup: Empty only
            return None if consumer_group.state is ConsumerGroupState.EMPTY else ErrorCode.NON_EMPTY_GROUP
        group = self.rt.group(group_id)  # "" is a group id here (Kafka refuses only null)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        return None

    def delete_now(self, group_id: str, undo: list[Undo]) -> GroupTombstone:
        """The group's tombstone, applied now (Runtime.apply_live; `undo` restores the group if
        the write fails). Written for every group, generation 0 too, as Kafka's Java coordinator
        does (GroupMetadataManager.createGroupTombstoneRecords): a simple group written by an
        earlier version, or by another coordinator, stays deleted across a restart."""
        tombstone = GroupTombstone(group_id)
        self.rt.apply_live(tombstone, undo)
        return tombstone

    def _delete_consumer_group(self, group_id: str, undo: list[Undo]) -> list[LogRecord]:
        """An empty consumer group's tombstones (Kafka's ConsumerGroup.createGroupTombstoneRecords:
        the target's epoch, then the group epoch), applied now; `undo` puts the group back if the
        write fails, unless another group took the id meanwhile."""
        groups = self.rt.consumer_groups
        group = groups[group_id]
        records: list[LogRecord] = [ConsumerTargetEpoch(group_id, None), ConsumerGroupEpoch(group_id, None)]

        def restore() -> None:
            if group_id not in groups and group_id not in self.rt.groups:
                groups[group_id] = group

        undo.append(restore)
        for record in records:
            self.rt.apply(record)
        return records


def _describe_group(group: Group) -> GroupDescription:
    stable = group.state is GroupState.STABLE
    members = tuple(
        MemberDescription(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            # Metadata only once the generation is settled; the assignment as the member holds it
            # (Kafka 4's Java coordinator: ClassicGroupMember.describe, else describeNoMetadata, which
            # keeps the last one while a rebalance is prepared; a SyncGroup or a rebalance begun
            # while completing replaces or clears it, as the Java coordinator does).
            m.metadata_for(group.protocol_name) if stable else b"",
            m.assignment,
        )
        for m in group.members.values()
    )
    return GroupDescription(
        group.group_id,
        ErrorCode.NONE,
        group.state.value,
        group.protocol_type or "",
        (group.protocol_name or "") if stable else "",
        members,
    )
