"""The PartitionLeadership port's single-node answers and the controller's replica validation
(ReplicationControlManager.validateManualPartitionAssignment), without a server."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from kcoord.broker.topics.leadership import (
    NO_ERROR,
    Done,
    ElectionType,
    Outcome,
    PartitionLeadership,
    SingleNodeLeadership,
    TopicPartition,
    validate_replicas,
)
from kcoord.protocol.errors import ErrorCode

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
PREFIX = "The manual partition assignment includes"


def _run(call: Callable[[Done], None]) -> dict[TopicPartition, Outcome]:
    got: list[dict[TopicPartition, Outcome]] = []
    call(got.append)
    (outcomes,) = got  # on_done is called exactly once
    return outcomes


def test_validate_replicas_checks_brokers_in_id_order_as_kafka() -> None:
    registered = {1, 2, 3}
    assert validate_replicas([3, 1, 2], registered) is None
    assert validate_replicas([], registered) == Outcome(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"{PREFIX} an empty replica list."
    )
    # sorted: 1 (fine), 1 again (repeated) before 9 (unregistered) is looked at
    assert validate_replicas([9, 1, 1], registered) == Outcome(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"{PREFIX} the broker 1 more than once."
    )
    assert validate_replicas([9, 4], registered) == Outcome(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"{PREFIX} broker 4, but no such broker is registered."
    )


def test_one_node_leads_everything_and_never_needs_an_election() -> None:
    leadership: PartitionLeadership = SingleNodeLeadership(7)
    assert leadership.leader("t", 3) == 7
    for election_type in ElectionType:
        outcomes = _run(partial(leadership.elect, election_type, [TP0, TP1]))
        assert {tp: o.error for tp, o in outcomes.items()} == {
            TP0: ErrorCode.ELECTION_NOT_NEEDED,
            TP1: ErrorCode.ELECTION_NOT_NEEDED,
        }
    assert _run(partial(leadership.elect, ElectionType.PREFERRED, [])) == {}


def test_one_node_accepts_only_itself_as_the_target_and_has_nothing_to_cancel_or_list() -> None:
    leadership = SingleNodeLeadership(7)
    outcomes = _run(
        lambda done: leadership.reassign({TP0: [7], TP1: None, TopicPartition("u", 0): [8]}, done)
    )
    assert outcomes == {
        TP0: NO_ERROR,
        TP1: Outcome(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
        TopicPartition("u", 0): Outcome(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"{PREFIX} broker 8, but no such broker is registered."
        ),
    }
    assert leadership.reassignments() == {}
