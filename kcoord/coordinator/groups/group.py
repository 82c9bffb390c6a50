"""Group: one classic group's membership, generation, leader and assignments (Kafka's ClassicGroup).

Only `transition_to` assigns `state`. Membership bookkeeping (protocol vote counts, the number of
parked JoinGroups, the static-member map) is kept incremental so that large groups stay O(1) per
request.
"""

from __future__ import annotations

import logging
from collections import Counter

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.member import Member, Parked, Protocols
from kcoord.coordinator.groups.records import GroupMetadataRecord, MemberRecord
from kcoord.coordinator.groups.responses import JoinAnswer, JoinMember
from kcoord.coordinator.groups.state import VALID_PREVIOUS, GroupState, IllegalStateTransition
from kcoord.coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE, subscribed_topics

__all__ = ["Group"]

log = logging.getLogger("coordinator.groups")


class Group:
    """State of one group. The rebalance logic drives it; it never schedules timers or writes logs."""

    def __init__(self, group_id: str, now_ms: int | None, initial: GroupState = GroupState.EMPTY) -> None:
        """A new group starts Empty; recovery (`from_record`) may start it Stable."""
        self.group_id = group_id
        self.state = initial
        self.previous_state = initial
        self.state_timestamp_ms: int | None = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: frozenset[str] | None = None
        # KIP-134 initial delayed join: extended while new members keep arriving.
        self.new_member_added = False
        self.initial_delay_remaining_ms = 0
        self._protocol_counts: Counter[str] = Counter()
        self._num_awaiting_join = 0

    def __repr__(self) -> str:
        return f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id})"

    # -- state ------------------------------------------------------------------------------------
    def transition_to(self, new: GroupState, now_ms: int, reason: str = "") -> None:
        """The only place `state` changes; logs one INFO line per transition."""
        if self.state not in VALID_PREVIOUS[new]:
            raise IllegalStateTransition(self.group_id, self.state, new)
        self.previous_state, self.state = self.state, new
        self.state_timestamp_ms = now_ms
        log.info(
            "group_id=%s generation=%d state=%s previous_state=%s members=%d%s",
            self.group_id,
            self.generation_id,
            new.value,
            self.previous_state.value,
            len(self.members),
            f" reason={reason!r}" if reason else "",
        )

    def revert_to(self, state: GroupState, state_timestamp_ms: int | None) -> None:
        """Undo a transition whose write failed (Kafka's runtime reverts its timeline snapshot):
        not a transition, so no table check and no log line; state and timestamp as before it."""
        self.state, self.state_timestamp_ms = state, state_timestamp_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # -- membership -------------------------------------------------------------------------------
    def add_member(self, member: Member, parked: Parked | None) -> None:
        """Kafka's `ClassicGroup.add`: first member sets the protocol type and becomes leader."""
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self._protocol_counts.update(member.protocol_names())
        self.pending_members.discard(member.member_id)
        self.park_join(member, parked)

    def remove_member(self, member_id: str) -> Member | None:
        """Drop a member (its parked responses are the caller's to answer). Re-picks the leader."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._protocol_counts.subtract(member.protocol_names())
        if member.awaiting_join is not None:
            self._num_awaiting_join -= 1
        iid = member.group_instance_id
        if iid is not None and self.static_members.get(iid) == member_id:
            del self.static_members[iid]
        self.pending_sync_members.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(
        self, member: Member, protocols: Protocols, session_timeout_ms: int, rebalance_timeout_ms: int
    ) -> None:
        self._protocol_counts.subtract(member.protocol_names())
        member.protocols = protocols
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        self._protocol_counts.update(member.protocol_names())

    def replace_static_member(self, old_id: str, new_id: str) -> Member:
        """KIP-345: re-key a static member; it keeps its assignment and leadership."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    def park_join(self, member: Member, parked: Parked | None) -> None:
        if member.awaiting_join is None and parked is not None:
            self._num_awaiting_join += 1
        elif member.awaiting_join is not None and parked is None:
            self._num_awaiting_join -= 1
        member.awaiting_join = parked

    def take_join(self, member: Member) -> Parked | None:
        parked = member.awaiting_join
        self.park_join(member, None)
        return parked

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateMember: unknown instance id -> UNKNOWN_MEMBER_ID, instance id
        mapped to another member -> FENCED_INSTANCE_ID, unknown member id -> UNKNOWN_MEMBER_ID."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._num_awaiting_join and not self.pending_members

    @property
    def num_awaiting_join(self) -> int:
        return self._num_awaiting_join

    def rebalance_timeout_ms(self) -> int:
        """Kafka: the max of the members' rebalance timeouts (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did (maybeElectNewJoinedLeader)."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is not None and leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols --------------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        """Kafka's ClassicGroup.supportsProtocols: Empty needs a type and protocols; any other state
        the group's type and a protocol every current member supports (with no members left, as in a
        PreparingRebalance whose members all left, any protocol, but still the group's type)."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocol_names)
        size = len(self.members)
        return protocol_type == self.protocol_type and any(
            self._protocol_counts[name] == size for name in protocol_names
        )

    def select_protocol(self) -> str:
        """Protocol vote: each member votes for its first protocol that all support; most votes win.

        Kafka breaks ties arbitrarily; we take the candidate voted for first (deterministic)."""
        size = len(self.members)
        candidates = {name for name, count in self._protocol_counts.items() if count == size}
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def recompute_subscriptions(self) -> None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            self.subscribed_topics = None
            return
        if not self.members or self.protocol_name is None:
            self.subscribed_topics = frozenset()
            return
        name = self.protocol_name
        self.subscribed_topics = subscribed_topics(m.metadata_for(name) for m in self.members.values())

    def is_subscribed_to(self, topic: str) -> bool:
        """Kafka's ClassicGroup.isSubscribedToTopic: when the subscriptions are unknown (unparsable,
        or no protocol yet) a consumer group counts as subscribed to everything, others to nothing."""
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    # -- JoinGroup answers ---------------------------------------------------------------------
    def join_members(self) -> list[JoinMember]:
        """Every member with its metadata for the selected protocol, as the leader's answer lists them."""
        name = self.protocol_name
        return [
            JoinMember(m.member_id, m.group_instance_id, m.metadata_for(name)) for m in self.members.values()
        ]

    def join_response(
        self,
        member_id: str,
        *,
        with_members: bool,
        leader: str | None = None,
        skip_assignment: bool = False,
    ) -> JoinAnswer:
        """A successful JoinGroup answer for `member_id` in the current generation.

        `leader` overrides the current leader id (static replacement answers the previous one).
        """
        return JoinAnswer(
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=(self.leader_id if leader is None else leader) or "",
            member_id=member_id,
            members=self.join_members() if with_members else (),
            skip_assignment=skip_assignment,
        )

    # -- persistence ------------------------------------------------------------------------------
    def to_record(self, assignments: dict[str, bytes] | None = None) -> GroupMetadataRecord:
        """GroupMetadataValue for the current generation (`assignments` overrides members' ones)."""
        members = tuple(
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata_for(self.protocol_name),
                assignment=m.assignment if assignments is None else assignments.get(m.member_id, b""),
            )
            for m in self.members.values()
        )
        return GroupMetadataRecord(
            group_id=self.group_id,
            protocol_type=self.protocol_type or "",
            generation_id=self.generation_id,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            current_state_timestamp_ms=-1 if self.state_timestamp_ms is None else self.state_timestamp_ms,
            members=members,
        )

    @classmethod
    def from_record(cls, record: GroupMetadataRecord) -> Group:
        """Rebuild a group from a replayed GroupMetadata record (Kafka's loadGroup): Stable with
        members, Empty without; no member has a parked request."""
        ts = record.current_state_timestamp_ms
        initial = GroupState.STABLE if record.members else GroupState.EMPTY
        group = cls(record.group_id, None if ts < 0 else ts, initial)
        group.protocol_type = record.protocol_type or None
        group.generation_id = record.generation_id
        group.protocol_name = record.protocol_name
        for m in record.members:
            group.add_member(_member_from_record(m, record.protocol_type, record.protocol_name), None)
        group.leader_id = record.leader_id if record.members else None
        group.recompute_subscriptions()
        return group


def _member_from_record(m: MemberRecord, protocol_type: str, protocol_name: str | None) -> Member:
    return Member(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        session_timeout_ms=m.session_timeout_ms,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        protocol_type=protocol_type,
        protocols=((protocol_name or "", m.subscription),),
        assignment=m.assignment,
    )
