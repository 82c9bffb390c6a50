"""One phase model, per shard (coordinator/runtime/phases.py): what a key's shard answers on a single
node (one shard covering every key) and on a cluster node (every shard, moved by ownership), for the
group and transaction tenants alike."""

from __future__ import annotations

import pytest

from kcoord.coordinator.runtime import PHASE_ERRORS, Phase, ShardPhases
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode
from tests.unit.conftest import Harness
from tests.unit.transactions.harness import Txn

NONE, LOAD_IN_PROGRESS = ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
NOT_COORDINATOR, NOT_AVAILABLE = ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE
SHARDS = 4
# Keys by their shard of 4 (Java's String.hashCode, as Kafka's partitionFor).
LOADING_KEY, ACTIVE_KEY, NOT_OWNED_KEY, DRAINING_KEY = "d", "a", "b", "c"


def _cluster_phases() -> ShardPhases:
    """A cluster node's table after its coordinators loaded: shard 0 loading, 1 active, 2 not owned,
    3 draining (what `cluster.ownership.Ownership` sets as it loads and unloads shards)."""
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    phases.loaded()  # the coordinators' recovery finished; no shard was loading then
    phases.set(0, Phase.LOADING)
    phases.set(1, Phase.ACTIVE)
    phases.set(3, Phase.DRAINING)
    return phases


def _commit_errors(h: Harness, group: str) -> list[int]:
    reply = h.commit({("t", 0): 1}, group=group)
    return [p["error_code"] for t in reply["topics"] for p in t["partitions"]]


def test_the_keys_map_to_their_shards() -> None:
    assert [shard_of(k, SHARDS) for k in (LOADING_KEY, ACTIVE_KEY, NOT_OWNED_KEY, DRAINING_KEY)] == [
        0,
        1,
        2,
        3,
    ]


# -- the table ------------------------------------------------------------------------------------
def test_a_single_node_has_one_shard_that_moves_with_the_node() -> None:
    phases = ShardPhases()
    assert phases.shard("any group") == 0 and phases.shard("") == 0
    assert (
        phases.node is Phase.LOADING
        and phases.error("g") is LOAD_IN_PROGRESS
        and phases.error("") is LOAD_IN_PROGRESS
    )
    phases.loaded()
    assert phases.node is Phase.ACTIVE and phases.phase("g") is Phase.ACTIVE and phases.error("g") is None
    phases.shut_down()
    assert phases.node is Phase.SHUT_DOWN and phases.error("g") is NOT_AVAILABLE
    assert phases.node_error is NOT_AVAILABLE


def test_each_shard_answers_from_its_own_phase() -> None:
    phases = _cluster_phases()
    assert phases.error(LOADING_KEY) is LOAD_IN_PROGRESS
    assert phases.error(ACTIVE_KEY) is None
    assert phases.error(NOT_OWNED_KEY) is NOT_COORDINATOR
    assert phases.error(DRAINING_KEY) is NOT_COORDINATOR
    assert phases.held() == {0: Phase.LOADING, 1: Phase.ACTIVE, 3: Phase.DRAINING}
    assert {p: PHASE_ERRORS[p] for p in Phase} == {
        Phase.NOT_OWNED: NOT_COORDINATOR, Phase.LOADING: LOAD_IN_PROGRESS, Phase.ACTIVE: None,
        Phase.DRAINING: NOT_COORDINATOR, Phase.SHUT_DOWN: NOT_AVAILABLE,
    }  # fmt: skip


def test_what_names_no_shard_answers_from_the_node() -> None:
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    assert phases.node is Phase.LOADING and phases.error("") is LOAD_IN_PROGRESS
    phases.loaded()
    assert phases.held() == {}, "no shard is loading when the coordinators start: ownership loads them"
    assert phases.error("") is None and phases.phase("") is Phase.ACTIVE and phases.node_error is None
    assert phases.error(ACTIVE_KEY) is NOT_COORDINATOR


def test_a_shut_down_node_stays_shut_down() -> None:
    phases = _cluster_phases()
    phases.shut_down()
    phases.set(1, Phase.ACTIVE)  # a late load or unload does not bring a shard back
    assert {phases.error(k) for k in (LOADING_KEY, ACTIVE_KEY, NOT_OWNED_KEY, DRAINING_KEY, "")} == {
        NOT_AVAILABLE
    }
    assert phases.held() == {}


def test_the_shard_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ShardPhases(0)


# -- the group tenant -----------------------------------------------------------------------------
def test_a_loading_shard_answers_load_in_progress_while_another_shards_groups_are_served() -> None:
    h = Harness(phases=_cluster_phases())
    assert _commit_errors(h, LOADING_KEY) == [LOAD_IN_PROGRESS]
    assert _commit_errors(h, ACTIVE_KEY) == [NONE]
    assert h.join(group=LOADING_KEY).error == LOAD_IN_PROGRESS
    member, joined = h.join_new(group=ACTIVE_KEY)
    h.settle(joined)  # the initial rebalance delay
    assert joined.error == NONE
    # Heartbeat answers NONE while its group loads (GroupCoordinatorService.heartbeat), as on one node.
    assert h.heartbeat("m", 1, group=LOADING_KEY).error == NONE
    assert h.heartbeat(member, 1, group=ACTIVE_KEY).error == NONE
    assert h.heartbeat("m", 1, group=ACTIVE_KEY).error == ErrorCode.UNKNOWN_MEMBER_ID  # served: checked


def test_a_shard_not_owned_or_draining_answers_not_coordinator() -> None:
    h = Harness(phases=_cluster_phases())
    for group in (NOT_OWNED_KEY, DRAINING_KEY):
        assert _commit_errors(h, group) == [NOT_COORDINATOR]
        assert h.join(group=group).error == NOT_COORDINATOR
        assert h.heartbeat("m", 1, group=group).error == NOT_COORDINATOR
        assert h.fetch({"t": [0]}, group=group).error == NOT_COORDINATOR


def test_a_shut_down_group_coordinator_answers_not_available_for_every_shard() -> None:
    h = Harness(phases=_cluster_phases())
    h.mgr.shutdown()
    for group in (LOADING_KEY, ACTIVE_KEY, NOT_OWNED_KEY):
        assert _commit_errors(h, group) == [NOT_AVAILABLE]
        assert h.heartbeat("m", 1, group=group).error == NOT_AVAILABLE


def test_a_single_node_group_coordinator_loads_then_shuts_down() -> None:
    h = Harness(loaded=False)
    assert _commit_errors(h, ACTIVE_KEY) == [LOAD_IN_PROGRESS] == _commit_errors(h, NOT_OWNED_KEY)
    h.mgr.on_loaded()
    assert _commit_errors(h, ACTIVE_KEY) == [NONE] == _commit_errors(h, NOT_OWNED_KEY)
    h.mgr.shutdown()
    assert _commit_errors(h, ACTIVE_KEY) == [NOT_AVAILABLE]


# -- the transaction tenant ------------------------------------------------------------------------
def test_the_transaction_tenant_asks_the_shard_of_its_transactional_id() -> None:
    phases = _cluster_phases()
    txn = Txn(phases=phases)
    assert txn.init(LOADING_KEY).value.error is LOAD_IN_PROGRESS
    assert txn.init(NOT_OWNED_KEY).value.error is NOT_COORDINATOR
    assert txn.init(DRAINING_KEY).value.error is NOT_COORDINATOR
    assert txn.init(ACTIVE_KEY).value.error is ErrorCode.NONE
    assert txn.end(0, 0, tid=LOADING_KEY).value.error is LOAD_IN_PROGRESS
    txn.tc.shutdown()
    assert txn.init(ACTIVE_KEY).value.error is NOT_AVAILABLE


def test_both_tenants_of_a_cluster_node_share_one_table() -> None:
    phases = _cluster_phases()
    groups, txn = Harness(phases=phases), Txn(phases=phases)
    phases.set(0, Phase.ACTIVE)  # the loading shard finished loading: both serve its keys
    assert _commit_errors(groups, LOADING_KEY) == [NONE]
    assert txn.init(LOADING_KEY).value.error is ErrorCode.NONE
    phases.set(1, Phase.DRAINING)
    assert _commit_errors(groups, ACTIVE_KEY) == [NOT_COORDINATOR]
    assert txn.init(ACTIVE_KEY).value.error is NOT_COORDINATOR
