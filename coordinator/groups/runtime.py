"""What every part of the group logic shares: injected ports, the groups, the offsets, the phase."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from coordinator.groups.clock import Clock
from coordinator.groups.config import GroupConfig
from coordinator.groups.errors import ErrorCode
from coordinator.groups.group import Group
from coordinator.groups.offsets import OffsetStore
from coordinator.groups.ports import OnDone, RecordLog
from coordinator.groups.records import LogRecord
from coordinator.groups.state import GroupState
from coordinator.groups.timers import KeyedTimers

__all__ = ["Phase", "Runtime", "TransitionObserver"]


class TransitionObserver(Protocol):
    """Told about every state transition after it happened (metrics); must not change any group."""

    def on_transition(self, group: Group, previous: GroupState, reason: str, now_ms: int) -> None: ...


class Phase(enum.Enum):
    LOADING = "loading"
    """Recovery is replaying the log: group APIs answer COORDINATOR_LOAD_IN_PROGRESS (Kafka §3.4)."""
    ACTIVE = "active"
    SHUT_DOWN = "shut_down"
    """After `shutdown()`: group APIs answer COORDINATOR_NOT_AVAILABLE."""


_PHASE_ERRORS: dict[Phase, ErrorCode | None] = {
    Phase.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    Phase.ACTIVE: None,
    Phase.SHUT_DOWN: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


def _no_apply(record: LogRecord) -> None:
    raise RuntimeError(f"Runtime.apply not set: cannot apply {record!r}")


def _uuid4() -> str:
    return str(uuid.uuid4())


class Runtime:
    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        timers: KeyedTimers,
        log: RecordLog,
        new_uuid: Callable[[], str] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.timers = timers
        self.log = log
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self._phase = Phase.LOADING
        self._phase_error: ErrorCode | None = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        self._new_uuid = new_uuid or _uuid4
        self.observer: TransitionObserver | None = None
        self.apply: Callable[[LogRecord], None] = _no_apply
        """The replay path (GroupManager.apply), the one recovery uses; set by the manager."""

    def write(self, records: Sequence[LogRecord], on_done: OnDone, *, apply: bool = True) -> None:
        """The one place the group logic appends to the log (no handler calls it itself).

        Once the batch is durable its records are applied through `apply`, the same path recovery
        replays, and then `on_done(None)`; if the write failed nothing is applied and
        `on_done(error)` undoes what the caller changed before writing. `apply=False` is for group
        snapshots (GroupMetadataRecord): the live group already is what the record says, as Kafka's
        runtime applies a record when it is written (CoordinatorRuntime, timeline state)."""
        if not apply:
            self.log.append(records, on_done)
            return
        replay = self.apply

        def written(error: BaseException | None) -> None:
            if error is None:
                for record in records:
                    replay(record)
            on_done(error)

        self.log.append(records, written)

    def transition(self, group: Group, new: GroupState, reason: str = "") -> None:
        """`group.transition_to(new)` at the clock's now, then tell the observer (if any)."""
        now = self.clock.now_ms()
        previous = group.state
        group.transition_to(new, now, reason)
        if self.observer is not None:
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

    @property
    def phase(self) -> Phase:
        return self._phase

    @phase.setter
    def phase(self, phase: Phase) -> None:
        self._phase = phase
        self._phase_error = _PHASE_ERRORS[phase]

    def phase_error(self) -> ErrorCode | None:
        """Kafka's common checks: loading -> COORDINATOR_LOAD_IN_PROGRESS, inactive -> NOT_AVAILABLE.
        Resolved when the phase changes: every request asks, and Enum lookups cost ~90 ns each."""
        return self._phase_error
