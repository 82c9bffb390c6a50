"""AddPartitionsToTxn, AddOffsetsToTxn, the V2 implicit add and KIP-890 part 1 verification
(TransactionCoordinator.handleAddPartitionsToTransaction / handleVerifyPartitionsInTransaction).

Add, check order (Kafka): "" -> INVALID_REQUEST; loading -> COORDINATOR_LOAD_IN_PROGRESS; unknown id
or another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED; a transition
in flight or Prepare* -> CONCURRENT_TRANSACTIONS; Ongoing with every partition already in -> NONE
without a write; otherwise -> Ongoing with the partitions added, answered once durable.
Verify (no write): the same identity checks, Prepare* -> CONCURRENT_TRANSACTIONS (a transition in
flight is not checked: the append is validated again), then per partition NONE if it is in the
transaction, else TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from collections.abc import Sequence

from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.coordinator.transactions.results import OnError, PartitionErrors
from kcoord.coordinator.transactions.state import TransactionState
from kcoord.protocol.errors import ErrorCode

__all__ = ["AddPartitions"]

S = TransactionState
Partition = tuple[str, int]


class AddPartitions:
    def __init__(self, core: TxnCore) -> None:
        self.core = core

    def _identity(self, transactional_id: str, producer_id: int, producer_epoch: int
                  ) -> TransactionMetadata | ErrorCode:  # fmt: skip
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if (phase := self.core.runtime.phase_error(transactional_id)) is not None:
            return phase
        md = self.core.txns.get(transactional_id)
        # An id whose InitProducerId never became durable (epoch -1) has handed out no producer id;
        # Kafka would fail the transition with an IllegalArgumentException (UNKNOWN_SERVER_ERROR).
        if md is None or md.producer_id != producer_id or md.producer_epoch < 0:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return md

    def add(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition],
        client_transaction_version: int, done: OnError,
    ) -> None:  # fmt: skip
        md = self._identity(transactional_id, producer_id, producer_epoch)
        if isinstance(md, ErrorCode):
            done(md)
            return
        if md.pending is not None or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            done(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        if md.state is S.ONGOING and md.partitions.issuperset(partitions):
            done(ErrorCode.NONE)  # Kafka's shortcut: nothing to write
            return
        transit = md.prepare_add_partitions(partitions, self.core.now_ms(), client_transaction_version)
        self.core.append(md, transit, done)

    def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition]
    ) -> PartitionErrors:
        md = self._identity(transactional_id, producer_id, producer_epoch)
        if not isinstance(md, ErrorCode) and md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            md = ErrorCode.CONCURRENT_TRANSACTIONS
        if isinstance(md, ErrorCode):
            return {p: md for p in partitions}
        inside, abortable = ErrorCode.NONE, ErrorCode.TRANSACTION_ABORTABLE
        return {p: inside if p in md.partitions else abortable for p in partitions}
