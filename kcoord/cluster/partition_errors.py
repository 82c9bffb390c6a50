"""What an append to a partition led here raises when PostgreSQL did not store it, and which of those a
`NodeWriter` verdict (`node_writer.Outcome`) becomes: the errors of `PgPartitionLog` (partition_store.py),
kept apart so the log holds what it does with them, not how they are told apart.

* `PartitionFenced` (a `NotLeader`: NOT_LEADER_OR_FOLLOWER): another node leads the partition;
* `PartitionWriteFailed` (KAFKA_STORAGE_ERROR, retriable): refused for another reason, its SQLSTATE
  kept (OFFSET_MISMATCH_SQLSTATE: memory and table disagree);
* `PartitionWriteUnknown`: the call broke after it was sent (write_outcome.py), it may have committed.
"""

from __future__ import annotations

import asyncpg

from kcoord.cluster.migrations import OFFSET_MISMATCH_SQLSTATE
from kcoord.cluster.node_writer import Refusal
from kcoord.cluster.write_outcome import outcome_unknown
from kcoord.partition_log.results import NotLeader, OutcomeUnknown

__all__ = ["PartitionFenced", "PartitionWriteFailed", "PartitionWriteUnknown", "write_error"]


class PartitionFenced(NotLeader):
    """PostgreSQL refused the write: another node leads the partition (or this log was closed)."""


class PartitionWriteFailed(Exception):
    """A write PostgreSQL did not commit for another reason (its outcome may be unknown)."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        """PostgreSQL's refusal (OFFSET_MISMATCH_SQLSTATE: memory and table disagree), None if unknown."""


class PartitionWriteUnknown(PartitionWriteFailed, OutcomeUnknown):
    """The call broke after it was sent (write_outcome.py): its batches may be in the table. Answered as
    Kafka answers an acks=all wait that expired (REQUEST_TIMED_OUT: possibly persisted), and the
    partition is reloaded (at a new epoch) before it takes a retry, so the retry meets the batch."""


def write_error(name: str, epoch: int, outcome: Refusal | BaseException) -> BaseException:
    """What the appends of partition `name` (at lease `epoch`) in a call that did not commit them raise."""
    if isinstance(outcome, (PartitionFenced, PartitionWriteFailed)):
        return outcome
    if outcome is Refusal.FENCED:
        return PartitionFenced(f"{name}: epoch {epoch} fenced: another node leads the partition")
    if outcome is Refusal.MOVED:
        return PartitionWriteFailed(f"{name}: the stored log end moved", OFFSET_MISMATCH_SQLSTATE)
    if outcome_unknown(outcome):  # checked first: a lost connection is a PostgresError to asyncpg
        return PartitionWriteUnknown(f"{name}: the batch's outcome is unknown: {outcome!r}")
    if isinstance(outcome, asyncpg.PostgresError):
        return PartitionWriteFailed(f"{name}: PostgreSQL refused the batch: {outcome}", outcome.sqlstate)
    return PartitionWriteFailed(f"{name}: the writer stopped: {outcome!r}")
