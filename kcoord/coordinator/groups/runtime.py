"""What every part of the group logic shares: injected ports, the groups, the offsets, the phase,
and the one write path (`Runtime.run`), the group tenant of the shared runtime
(`coordinator.runtime.CoordinatorRuntime`, Kafka's coordinator-common CoordinatorRuntime).

Kafka's group coordinator runtime (CoordinatorRuntime) has every handler return a
CoordinatorResult: the records to append and the response. The runtime appends them, replays them
into the in-memory state, answers once they are durable, and reverts the state if the append fails.
Here a handler builds a `Write` and hands it to `Runtime.run`, which does the same; what is
group-specific sits here on top of the shared runtime:

* offset records (commits, offset tombstones) are applied once durable, through `apply`, the
  replay path recovery uses: a fetch never sees an offset the log could lose (Kafka reads its
  committed offsets at the last committed log offset);
* a group tombstone is applied when it is written (`apply_live`, again through `apply`), so the
  requests after it see the group gone, as with Kafka's timeline state; if the append fails the
  runtime puts the group back exactly as it was;
* a classic group's snapshot (GroupMetadataRecord) describes the live group, which already is what
  the record says: Kafka writes it with `replayRecords` false (GroupMetadataManager, classic join
  completion and the leader's SyncGroup) and a failed append goes to the handler's own failure
  path (reset the assignment, rebalance), as Kafka's `appendFuture` callbacks do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kcoord.coordinator.groups.config import GroupConfig
from kcoord.coordinator.groups.consumer.model import ConsumerGroup
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.offsets import OffsetStore
from kcoord.coordinator.groups.records import GroupTombstone, LogRecord, OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.groups.share.model import ShareGroup
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.runtime import (
    Clock,
    CoordinatorRuntime,
    KeyedTimers,
    Phase,
    RecordLog,
    ShardPhases,
    Undo,
)
from kcoord.coordinator.runtime import Write as _Write

__all__ = ["Phase", "Runtime", "TransitionObserver", "Undo", "Write"]


class TransitionObserver(Protocol):
    """Told about every state transition after it happened (metrics); must not change any group."""

    def on_transition(self, group: Group, previous: GroupState, reason: str, now_ms: int) -> None: ...


@dataclass(slots=True)
class Write(_Write[LogRecord]):
    """A group handler's result when its answer depends on records (Kafka's CoordinatorResult);
    `coordinator.runtime.Write` plus the group-specific `commits_of`.

    `records` are appended as one batch. Once durable, `durable` (default: all of them) are
    applied through the replay path, then `done(None)`; if the append fails, `undo` (what
    `Runtime.apply_live` journalled for this write) restores the state before the request, then
    `done(error)`. `commits_of` names the group whose OffsetCommit this is: its partitions are
    in flight until the append settles (offset expiry leaves them alone). Require_stable fetches
    wait for every write of a group's offsets, commits and tombstones alike (`Runtime.run` finds
    the groups in the records). Not frozen: a commit builds one per request and a frozen
    dataclass costs ~0.5 us."""

    commits_of: str | None = None


def _uuid4() -> str:
    return str(uuid.uuid4())


class Runtime(CoordinatorRuntime[LogRecord]):
    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        timers: KeyedTimers,
        log: RecordLog[LogRecord],
        new_uuid: Callable[[], str] | None = None,
        phases: ShardPhases | None = None,
    ) -> None:
        super().__init__(log, phases)
        self.config = config
        self.clock = clock
        self.timers = timers
        self.groups: dict[str, Group] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        """Consumer-protocol groups (KIP-848); a group id names a classic or a consumer group, never both."""
        self.share_groups: dict[str, ShareGroup] = {}
        """Share groups (KIP-932); their ids are neither classic nor consumer groups'."""
        self.offsets = OffsetStore()
        self.group_configs: dict[str, dict[str, str]] = {}
        """Each group's own configs (GroupConfigRecord, group_configs.py), applied once durable."""
        self._new_uuid = new_uuid or _uuid4
        self.observer: TransitionObserver | None = None
        # self.apply (CoordinatorRuntime): GroupManager.apply, the replay path; set by the manager.

    def run(self, write: _Write[LogRecord]) -> None:
        """The one place the group logic appends to the log (no handler calls it itself); see
        the module docstring. `done` runs exactly once, after the state is applied or restored.
        A write of offsets (a commit, or tombstones) is in flight for its groups until then:
        require_stable fetches wait for it (OffsetStore.when_settled)."""
        records = write.records
        offsets = self.offsets
        if isinstance(write, Write) and write.commits_of is not None:
            self.run_commit(write)
            return
        touched = {r.group_id for r in records if type(r) is OffsetTombstone or type(r) is OffsetCommitRecord}
        write_id = offsets.begin_write(touched) if touched else -1

        def written(error: BaseException | None) -> None:
            self._settle(write, error)
            if touched:
                offsets.end_write(write_id, touched)

        self.log.append(records, written)

    def run_commit(self, write: Write) -> None:
        """`run` for an OffsetCommit (`commits_of` set), the hot path GroupManager calls directly:
        one group, every record an offset commit; its pending partitions and its tracked write
        (require_stable fetches wait for it) are set and cleared together."""
        records = write.records
        group_id = write.commits_of
        assert group_id is not None
        offsets = self.offsets
        write_id = offsets.begin_commit(group_id, records)  # type: ignore[arg-type]

        def committed(error: BaseException | None) -> None:
            offsets.end_commit(group_id, records)  # type: ignore[arg-type]
            # _settle, inlined: every call counts on the commit path
            if error is None:
                replay = self.apply
                for record in records if write.durable is None else write.durable:
                    replay(record)
            else:
                for undo in reversed(write.undo):
                    undo()
            write.done(error)
            offsets.end_commit_write(group_id, write_id)

        self.log.append(records, committed)

    def apply_live(self, record: GroupTombstone, undo: list[Undo]) -> None:
        """Apply a group tombstone when it is written, through the replay path, and journal in
        `undo` how to restore the group should the append fail (its state and since when: offset
        expiry counts from it; its offsets were never removed, tombstones are applied once
        durable). A group that took the id meanwhile is left alone."""
        group = self.groups.get(record.group_id)
        if group is not None:
            state, since_ms = group.state, group.state_timestamp_ms

            def restore() -> None:
                if record.group_id not in self.groups:
                    group.revert_to(state, since_ms)
                    self.groups[record.group_id] = group

            undo.append(restore)
        self.apply(record)

    def is_bare(self, group: Group) -> bool:
        """A simple group with nothing in it: no member, no generation, no offset, none in flight.
        Kafka keeps such a group in memory only (no record), until its cleanup pass."""
        return (
            group.generation_id == 0
            and group.state is GroupState.EMPTY
            and group.protocol_type is None
            and not group.members
            and not group.pending_members
            and not self.offsets.has_offsets(group.group_id)
        )

    def forget_if_bare(self, group: Group) -> Undo:
        """An undo for a bare group a commit made or found (a simple group): forget it if it is
        still bare once the commit failed, so a failed commit leaves no group behind, as Kafka's
        runtime reverts the group's creation with the write (OffsetMetadataManager.commitOffset
        creates it in the timeline state). Commits to it still in flight keep it."""

        def forget() -> None:
            if self.groups.get(group.group_id) is group and self.is_bare(group):
                del self.groups[group.group_id]

        return forget

    def transition(self, group: Group, new: GroupState, reason: str = "") -> None:
        """`group.transition_to(new)` at the clock's now, then tell the observer (if any)."""
        now = self.clock.now_ms()
        previous = group.state
        group.transition_to(new, now, reason)
        if self.observer is not None and self.phases.node is not Phase.LOADING:  # replay: not live
            self.observer.on_transition(group, previous, reason, now)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def new_member_id(self, prefix: str) -> str:
        """Kafka: `client_id-UUID` for dynamic members, `group_instance_id-UUID` for static ones."""
        return f"{prefix}-{self._new_uuid()}"

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def is_current(self, group: Group) -> bool:
        """False for a group object that was deleted (or replaced) since a timer captured it."""
        return self.groups.get(group.group_id) is group

    def get_or_create_group(self, group_id: str) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, self.now_ms())
        return group

    def service_error(self, group_id: str) -> ErrorCode | None:
        """What Kafka's GroupCoordinatorService refuses itself, before a request reaches its runtime,
        for the APIs that refuse "" (joinGroup, syncGroup, heartbeat, leaveGroup, deleteOffsets):
        not active -> COORDINATOR_NOT_AVAILABLE, then "" -> INVALID_GROUP_ID. Those APIs ask this
        first and `phase_error` (the runtime's loading check, CoordinatorRuntime's
        withActiveContextOrThrow) after it, so "" is INVALID_GROUP_ID even while loading."""
        if self.phases.phase(group_id) is Phase.SHUT_DOWN:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return None if group_id else ErrorCode.INVALID_GROUP_ID
