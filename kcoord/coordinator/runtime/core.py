"""`Write`, the runtime's phase and the run/settle logic: what a coordinator tenant's handlers share.

Kafka's CoordinatorRuntime has every handler return a CoordinatorResult (the records to append and
the response); the runtime appends them, replays them into the in-memory state, answers once they
are durable and reverts the state if the append fails. Here a handler builds a `Write` and hands
it to `CoordinatorRuntime.run`, which does the same. A tenant subclasses `CoordinatorRuntime` to
add its own bookkeeping around `run` (the group runtime tracks offset writes in flight) and sets
`apply` to its replay path, the one recovery uses.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kcoord.coordinator.runtime.ports import OnDone, RecordLog
from kcoord.protocol.errors import ErrorCode

__all__ = ["PHASE_ERRORS", "CoordinatorRuntime", "Phase", "Undo", "Write"]

R = TypeVar("R")

Undo = Callable[[], None]


class Phase(enum.Enum):
    LOADING = "loading"
    """Recovery is replaying the log: the coordinator's APIs answer COORDINATOR_LOAD_IN_PROGRESS."""
    ACTIVE = "active"
    SHUT_DOWN = "shut_down"
    """After shutdown: the coordinator's APIs answer COORDINATOR_NOT_AVAILABLE."""


PHASE_ERRORS: dict[Phase, ErrorCode | None] = {
    Phase.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    Phase.ACTIVE: None,
    Phase.SHUT_DOWN: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


@dataclass(slots=True)
class Write(Generic[R]):
    """A handler's result when its answer depends on records (Kafka's CoordinatorResult).

    `records` are appended as one batch. Once durable, `durable` (default: all of them) are
    applied through the replay path, then `done(None)`; if the append fails, `undo` (journalled
    by the handler while it changed live state) restores the state before the request, then
    `done(error)`. Not frozen: the group commit path builds one per request and a frozen
    dataclass costs ~0.5 us."""

    records: Sequence[R]
    done: OnDone
    durable: Sequence[R] | None = None
    undo: Sequence[Undo] = ()


def _no_apply(record: object) -> None:
    raise RuntimeError(f"CoordinatorRuntime.apply not set: cannot apply {record!r}")


class CoordinatorRuntime(Generic[R]):
    """The write path and the phase of one coordinator (one tenant of the shared log)."""

    def __init__(self, log: RecordLog[R]) -> None:
        self.log = log
        self._phase = Phase.LOADING
        self._phase_error: ErrorCode | None = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        self.apply: Callable[[R], None] = _no_apply
        """The tenant's replay path, the one recovery uses; set by the tenant."""

    def run(self, write: Write[R]) -> None:
        """Append `write.records` as one batch; once the append settles, `_settle` applies or
        undoes and answers. `done` runs exactly once, after the state is applied or restored."""
        self.log.append(write.records, lambda error: self._settle(write, error))

    def _settle(self, write: Write[R], error: BaseException | None) -> None:
        """A write's append finished: apply what it applies once durable, or undo what it changed;
        then answer it, exactly once."""
        if error is None:
            replay = self.apply
            for record in write.records if write.durable is None else write.durable:
                replay(record)
        else:
            for undo in reversed(write.undo):
                undo()
        write.done(error)

    @property
    def phase(self) -> Phase:
        return self._phase

    @phase.setter
    def phase(self, phase: Phase) -> None:
        self._phase = phase
        self._phase_error = PHASE_ERRORS[phase]

    def phase_error(self) -> ErrorCode | None:
        """Kafka's common checks: loading -> COORDINATOR_LOAD_IN_PROGRESS, inactive -> NOT_AVAILABLE.
        Resolved when the phase changes: every request asks, and Enum lookups cost ~90 ns each."""
        return self._phase_error
