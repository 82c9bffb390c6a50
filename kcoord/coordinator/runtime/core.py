"""`Write`, the runtime's phases and the run/settle logic: what a coordinator tenant's handlers share.

Kafka's CoordinatorRuntime has every handler return a CoordinatorResult (the records to append and
the response); the runtime appends them, replays them into the in-memory state, answers once they
are durable and reverts the state if the append fails. Here a handler builds a `Write` and hands
it to `CoordinatorRuntime.run`, which does the same. A tenant subclasses `CoordinatorRuntime` to
add its own bookkeeping around `run` (the group runtime tracks offset writes in flight) and sets
`apply` to its replay path, the one recovery uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kcoord.coordinator.runtime.phases import Phase, ShardPhases
from kcoord.coordinator.runtime.ports import OnDone, RecordLog
from kcoord.protocol.errors import ErrorCode

__all__ = ["CoordinatorRuntime", "Undo", "Write"]

R = TypeVar("R")

Undo = Callable[[], None]


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
    """The write path and the shards' phases of one coordinator (one tenant of the shared log)."""

    def __init__(self, log: RecordLog[R], phases: ShardPhases | None = None) -> None:
        self.log = log
        self.phases = ShardPhases() if phases is None else phases
        """A single node's one shard unless given (a cluster node's table, shared by its tenants)."""
        self._single = self.phases.num_shards == 1
        self._errors = self.phases.errors  # resolved by the table when a phase changes
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

    def phase_error(self, key: str) -> ErrorCode | None:
        """Kafka's common checks for a request about `key`, by the phase of its shard: loading ->
        COORDINATOR_LOAD_IN_PROGRESS, not owned or draining -> NOT_COORDINATOR, shut down ->
        COORDINATOR_NOT_AVAILABLE, active -> None. Every request asks: a single node reads its one
        shard's answer here, without a call into the table (`ShardPhases.error`)."""
        if self._single:
            return self._errors[0]
        return self.phases.error(key)

    @property
    def phase(self) -> Phase:
        """The node's phase (LOADING, ACTIVE or SHUT_DOWN), for what names no key."""
        return self.phases.node
