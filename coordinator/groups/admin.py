"""DescribeGroups (15) v0-6, ListGroups (16) v0-5, DeleteGroups (42) v0-2."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.groups.errors import APPEND_FAILED, ErrorCode
from coordinator.groups.group import Group
from coordinator.groups.member import Respond
from coordinator.groups.offset_api import OffsetHandler
from coordinator.groups.rebalance import Rebalancer
from coordinator.groups.records import GroupTombstone, LogRecord
from coordinator.groups.runtime import Runtime
from coordinator.groups.state import GroupState

__all__ = ["GROUP_TYPE_CLASSIC", "AdminHandler", "DeleteGroupsRespond", "GroupListing"]

DeleteGroupsRespond = Callable[[list[tuple[str, ErrorCode]]], None]
"""DeleteGroups' answer: (group id, error) per requested id, in order."""

GROUP_TYPE_CLASSIC = "classic"
INT32_MIN = -(2**31)
# AclOperation bits a group supports (READ=3, DELETE=6, DESCRIBE=8); we have no ACLs.
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


@dataclass(frozen=True, slots=True)
class GroupListing:
    """One ListGroups entry (every group here is a classic group)."""

    group_id: str
    protocol_type: str
    state: GroupState


class AdminHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer, offsets: OffsetHandler) -> None:
        self.rt = rt
        self.rb = rebalancer
        self.offsets = offsets

    # -- DescribeGroups ---------------------------------------------------------------------------
    def describe_groups(self, req: dict[str, Any], meta: RequestMeta, respond: Respond) -> None:
        version = meta.api_version
        with_ops = bool(req.get("include_authorized_operations"))
        respond({"groups": [self._describe(str(g), version, with_ops) for g in req.get("groups") or []]})

    def _describe(self, group_id: str, version: int, with_ops: bool) -> dict[str, Any]:
        error = self.rt.phase_error()  # "" is a group id here (Kafka refuses only null)
        group = self.rt.group(group_id)
        if error is None and group is None and version >= 6:
            error = ErrorCode.GROUP_ID_NOT_FOUND  # KIP-1043; v0-5 describe a missing group as Dead
        if error is not None:
            entry = _described(version, group_id, error, "", "", "", [])
            if version >= 6:
                entry["error_message"] = (
                    f"Group {group_id} not found." if error == ErrorCode.GROUP_ID_NOT_FOUND else error.name
                )
            return entry
        if group is None:
            entry = _described(version, group_id, ErrorCode.NONE, GroupState.DEAD.value, "", "", [])
        else:
            entry = self._describe_group(group, version)
        if version >= 3:
            entry["authorized_operations"] = GROUP_AUTHORIZED_OPERATIONS if with_ops else INT32_MIN
        return entry

    def _describe_group(self, group: Group, version: int) -> dict[str, Any]:
        stable = group.state is GroupState.STABLE
        members = []
        for m in group.members.values():
            entry: dict[str, Any] = {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                # Metadata and assignment only once the generation is settled (Kafka's summary).
                "member_metadata": m.metadata_for(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            if version >= 4:
                entry["group_instance_id"] = m.group_instance_id
            members.append(entry)
        return _described(
            version,
            group.group_id,
            ErrorCode.NONE,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    # -- ListGroups -------------------------------------------------------------------------------
    def list_groups(
        self, states: Collection[str], types: Collection[str]
    ) -> tuple[ErrorCode, list[GroupListing]]:
        """ListGroups: the live groups whose state and type are in the (lower-case) filters, an empty
        filter matching all; the version-dependent response is built at the door."""
        error = self.rt.phase_error()
        if error is ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return error, []
        listed = []
        if not types or GROUP_TYPE_CLASSIC in types:
            for group in self.rt.groups.values():
                if group.state is GroupState.DEAD or (states and group.state.value.lower() not in states):
                    continue
                listed.append(GroupListing(group.group_id, group.protocol_type or "", group.state))
        # While loading Kafka answers COORDINATOR_LOAD_IN_PROGRESS and still lists the loaded groups.
        return error or ErrorCode.NONE, listed

    # -- DeleteGroups -----------------------------------------------------------------------------
    def delete_groups(self, group_ids: Sequence[str], respond: DeleteGroupsRespond) -> None:
        """Delete each group (distinct ids: the server deduplicates them, as KafkaApis does); one
        (group id, error) per id, in order, once the tombstones are durable."""
        results: list[tuple[str, ErrorCode]] = []
        records: list[LogRecord] = []
        dropped: list[tuple[Group, int | None]] = []  # and since when Empty (offset expiry counts from it)
        for group_id in group_ids:
            results.append((group_id, self._delete_one(group_id, records, dropped)))
        if not records:
            respond(results)
            return

        def on_done(error: BaseException | None) -> None:
            if error is None:
                respond(results)
                return
            # All or nothing, as Kafka's runtime reverts its timeline when the write fails: the
            # groups come back as they were (their offsets were never removed: tombstones are
            # applied only once durable), so a retry finds them.
            self.rb.restore_dropped(dropped)
            respond([(g, APPEND_FAILED if e is ErrorCode.NONE else e) for g, e in results])

        self.rt.write(records, on_done)

    def _delete_one(
        self, group_id: str, records: list[LogRecord], dropped: list[tuple[Group, int | None]]
    ) -> ErrorCode:
        error = self.rt.phase_error()
        if error is not None:
            return error
        group = self.rt.group(group_id)  # "" is a group id here (Kafka refuses only null)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        records.extend(self.delete_group_records(group))
        dropped.append((group, group.state_timestamp_ms))
        self.rb.drop_group(group)
        return ErrorCode.NONE

    def delete_group_records(self, group: Group) -> list[LogRecord]:
        """Tombstones for every offset, and always the group's own, as Kafka's Java coordinator
        writes it (GroupMetadataManager.createGroupTombstoneRecords): a simple (generation 0) group
        written by an earlier version, or by another coordinator, stays deleted across a restart."""
        records: list[LogRecord] = list(self.rt.offsets.tombstones_for_group(group.group_id))
        records.append(GroupTombstone(group.group_id))
        return records


def _described(
    version: int,
    group_id: str,
    error: ErrorCode,
    state: str,
    protocol_type: str,
    protocol_data: str,
    members: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "group_id": group_id,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol_data,
        "members": members,
    }
