"""The phase of each shard on this node, the one model every coordinator answers from.

Kafka's CoordinatorRuntime keeps a CoordinatorContext per `__consumer_offsets` partition with its
state (INITIAL, LOADING, ACTIVE, CLOSED, FAILED) and refuses a request by the state of the partition
its key maps to (`withActiveContextOrThrow`: no context or not active -> NOT_COORDINATOR, loading ->
COORDINATOR_LOAD_IN_PROGRESS); its GroupCoordinatorService refuses everything once shut down
(`isActive` false -> COORDINATOR_NOT_AVAILABLE). Here a shard is what a partition is there, keyed by
the same function (`runtime.shards.shard_of`), and `ShardPhases` holds one `Phase` per shard:

* a single node has one shard covering every key: its phase moves with the node (LOADING while the
  log replays, ACTIVE once loaded, SHUT_DOWN after shutdown), and asking it costs no hashing; one
  shard rather than all of them because nothing on a single node loads or moves a shard alone;
* a cluster node has every shard of the cluster, NOT_OWNED until `cluster.ownership.Ownership` loads
  it (LOADING -> ACTIVE) and again after it drained it (DRAINING -> NOT_OWNED). The groups and
  transaction tenants of a node share that one table, as they share the shard's lease and log.

Besides the shards the table keeps the node's own phase (Kafka's service state: LOADING until the
tenant's recovery finished, ACTIVE, SHUT_DOWN), which answers for what names no shard: ListGroups,
ListTransactions, a transaction marker, and "" (no coordinator can be found for it: each node
answers it from what it holds, as the cluster edge leaves it unrouted).

Every request asks, so answers are resolved when a phase changes: `error(key)` is one list lookup.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable

from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode

__all__ = ["PHASE_ERRORS", "Phase", "ShardPhases"]


class Phase(enum.Enum):
    """One shard's phase on this node (Kafka's CoordinatorRuntime.CoordinatorState)."""

    NOT_OWNED = "not_owned"
    """Another node's shard, or nobody's yet (Kafka: no context, INITIAL or FAILED): NOT_COORDINATOR."""
    LOADING = "loading"
    """The shard's records are replaying: COORDINATOR_LOAD_IN_PROGRESS."""
    ACTIVE = "active"
    DRAINING = "draining"
    """Unloading, its appends in flight settling (Kafka: CLOSED on resignation): NOT_COORDINATOR."""
    SHUT_DOWN = "shut_down"
    """The coordinator stopped (GroupCoordinatorService not active): COORDINATOR_NOT_AVAILABLE."""


PHASE_ERRORS: dict[Phase, ErrorCode | None] = {
    Phase.NOT_OWNED: ErrorCode.NOT_COORDINATOR,
    Phase.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    Phase.ACTIVE: None,
    Phase.DRAINING: ErrorCode.NOT_COORDINATOR,
    Phase.SHUT_DOWN: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

_HELD = frozenset({Phase.LOADING, Phase.ACTIVE, Phase.DRAINING})

# A cluster node hashes a key per request (Java's String.hashCode, a Python loop); groups are few.
_shard_of = functools.lru_cache(maxsize=1 << 14)(shard_of)


class ShardPhases:
    """The phase of every shard on this node, and of the node itself."""

    __slots__ = ("_phases", "_single", "errors", "node", "node_error", "num_shards")

    def __init__(self, num_shards: int = 1, phase: Phase = Phase.LOADING) -> None:
        """`num_shards` shards, each in `phase`: a single node's one shard LOADING (the default),
        a cluster node's shards NOT_OWNED. The node itself starts LOADING."""
        if num_shards <= 0:
            raise ValueError(f"num_shards must be positive, not {num_shards}")
        self.num_shards = num_shards
        self._single = num_shards == 1
        self._phases = [phase] * num_shards
        self.errors = [PHASE_ERRORS[phase]] * num_shards
        """Each shard's answer (`PHASE_ERRORS` of its phase), updated in place: a runtime may hold it."""
        self.node = Phase.LOADING
        """The node's own phase: LOADING, ACTIVE or SHUT_DOWN."""
        self.node_error: ErrorCode | None = PHASE_ERRORS[Phase.LOADING]

    # -- what the tenants ask (every request) ------------------------------------------------------
    def shard(self, key: str) -> int:
        """The shard `key` maps to (0 on a single node, without hashing)."""
        return 0 if self._single else _shard_of(key, self.num_shards)

    def error(self, key: str) -> ErrorCode | None:
        """The answer for a request about `key`: None when its shard is ACTIVE, else the refusal."""
        if self._single:  # a single node: one shard covers every key
            return self.errors[0]
        if not key:
            return self.node_error
        return self.errors[_shard_of(key, self.num_shards)]

    def phase(self, key: str) -> Phase:
        """The phase of the shard `key` maps to ("" on a cluster node: the node's phase)."""
        if self._single:
            return self._phases[0]
        if not key:
            return self.node
        return self._phases[_shard_of(key, self.num_shards)]

    def of(self, shard: int) -> Phase:
        return self._phases[shard]

    def held(self) -> dict[int, Phase]:
        """The shards this node loads, serves or drains, with their phases."""
        return {shard: phase for shard, phase in enumerate(self._phases) if phase in _HELD}

    # -- what changes them -------------------------------------------------------------------------
    def set(self, shard: int, phase: Phase) -> None:
        """Move one shard (cluster mode's ownership); once the node shut down it stays so."""
        if self.node is Phase.SHUT_DOWN:
            return
        self._phases[shard] = phase
        self.errors[shard] = PHASE_ERRORS[phase]

    def loaded(self) -> None:
        """The tenant's recovery finished: the node goes ACTIVE, with every shard LOADING then (a
        single node's one shard; a cluster node has none: ownership loads them later, and moves
        them itself). Only the first call counts: a cluster node's tenants share the table."""
        if self.node is not Phase.LOADING:
            return
        self._set_node(Phase.ACTIVE)
        self._move(Phase.ACTIVE, (s for s, p in enumerate(self._phases) if p is Phase.LOADING))

    def shut_down(self) -> None:
        """The coordinator stopped: the node and every shard answer COORDINATOR_NOT_AVAILABLE."""
        self._set_node(Phase.SHUT_DOWN)
        self._move(Phase.SHUT_DOWN, range(self.num_shards))

    def _set_node(self, phase: Phase) -> None:
        self.node = phase
        self.node_error = PHASE_ERRORS[phase]

    def _move(self, phase: Phase, shards: Iterable[int]) -> None:
        error = PHASE_ERRORS[phase]
        for shard in list(shards):
            self._phases[shard] = phase
            self.errors[shard] = error

    def __repr__(self) -> str:
        return f"ShardPhases(node={self.node.value}, held={ {s: p.value for s, p in self.held().items()} })"
