"""Transaction verification (KIP-890): the one port through which the edge asks whether a producer's
transaction has the partitions a request writes, before writing them.

Produce (transactional batches, KIP-890 part 1) and TxnOffsetCommit (the group's `__consumer_offsets`
partition) ask the transaction coordinator first, as Kafka's partition leader and group coordinator ask
theirs through `AddPartitionsToTxnManager` (AddPartitionsToTxn v4 `verify_only`; under Transactions V2,
v5, which adds the partitions). The coordinator may be this node's or, in cluster mode, the node owning
the transactional id's shard: a `TxnVerification` says which, and hands the handler the `TxnAnswers`
to use, at once when this node answers, later when an owner elsewhere answered over the wire
(kcoord/cluster/txn_verify.py). The handler then asks its questions of those answers exactly as it
would of the local `TransactionCoordinator`, which is one (`TxnAnswers` is its verification surface).

AddPartitionsToTxn itself is not a client of this port: it is the port's wire form, the coordinator's
own API that a remote verification's request is answered by, so it talks to its coordinator directly
(a broker's v4 request reaching a node that lost the shard is answered NOT_COORDINATOR there, never
sent on a second hop, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kcoord.protocol.errors import ErrorCode

__all__ = ["LOCAL", "LocalVerification", "Partition", "TxnAnswers", "TxnCheck", "TxnVerification"]

Partition = tuple[str, int]


class TxnAnswers(Protocol):
    """What a request asks of its transaction's coordinator (`TransactionCoordinator` has these)."""

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition]
    ) -> Mapping[Partition, ErrorCode]:
        """Per partition: NONE when the transaction has it (AddPartitionsToTxn v4 verify_only)."""
        ...

    def add_partitions_implicit(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[ErrorCode], None],
    ) -> None:
        """Transactions V2: add the partitions to the transaction; `done` gets the one error."""
        ...


@dataclass(frozen=True, slots=True)
class TxnCheck:
    """The transaction a request writes for and the partitions it writes: what an owner elsewhere is
    asked about, in one AddPartitionsToTxn per request (AddPartitionsToTxnManager batches so too)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[Partition, ...]
    add: bool
    """Transactions V2: the owner adds the partitions (AddPartitionsToTxn v5) instead of verifying (v4)."""


class TxnVerification(Protocol):
    def answers(
        self, local: TxnAnswers, check: TxnCheck, listener: str, ready: Callable[[TxnAnswers], None]
    ) -> None:
        """Calls `ready` with the answers for `check`'s transaction: `local` (this node's coordinator)
        when this node coordinates it, else those of the node that does (reached on `listener`)."""
        ...


class LocalVerification:
    """A single node coordinates every transaction: its own coordinator answers, at once."""

    __slots__ = ()

    def answers(
        self, local: TxnAnswers, check: TxnCheck, listener: str, ready: Callable[[TxnAnswers], None]
    ) -> None:
        ready(local)


LOCAL = LocalVerification()
