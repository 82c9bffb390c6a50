"""`TransactionCoordinator`: the typed entry points the server's handlers call (Kafka's
TransactionCoordinator.scala), each answering through `done` with a result that is final for the
request's version (KafkaApis' PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH downgrades applied).

Pure: no sockets, files, asyncio or wall clock. One owner (the event loop) calls it; a request's
transition never awaits: it sets the metadata's `pending` state and appends its record, so the next
request sees the transition in flight (CONCURRENT_TRANSACTIONS) at once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from kcoord.coordinator.runtime import KeyedTimers, Phase, ShardPhases
from kcoord.coordinator.runtime.time import Clock
from kcoord.coordinator.transactions.add_partitions import AddPartitions
from kcoord.coordinator.transactions.config import TransactionConfig
from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.end_txn import EndTxn, EndTxnRequest
from kcoord.coordinator.transactions.init_producer_id import InitProducerId, InitRequest
from kcoord.coordinator.transactions.maintenance import Maintenance
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.coordinator.transactions.partitioning import offsets_partition_for, partition_for
from kcoord.coordinator.transactions.ports import MarkerWriter, ProducerIdAllocator, TransactionLog
from kcoord.coordinator.transactions.records import TransactionRecord
from kcoord.coordinator.transactions.results import (
    EndTxnResult,
    InitProducerIdResult,
    ListTransactionsResult,
    OnControl,
    OnEnd,
    OnError,
    OnInit,
    PartitionErrors,
    TransactionDescription,
    TransactionStats,
    downgrade_fenced,
)
from kcoord.coordinator.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionState
from kcoord.coordinator.transactions.views import describe_transactions, list_transactions
from kcoord.protocol.errors import ErrorCode

__all__ = ["TransactionCoordinator"]

Partition = tuple[str, int]
_OPEN = frozenset({TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT})


class TransactionCoordinator:
    def __init__(
        self,
        config: TransactionConfig,
        clock: Clock,
        timers: KeyedTimers,
        log: TransactionLog,
        producer_ids: ProducerIdAllocator,
        markers: MarkerWriter,
        *,
        phases: ShardPhases | None = None,
    ) -> None:
        """`phases`: the node's shards (default: a single node's one shard; a cluster node's table
        is shared with its group coordinator, both driven by the shards' ownership)."""
        self._core = TxnCore(config, clock, timers, log, producer_ids, markers, phases)
        self._end = EndTxn(self._core)
        self._init = InitProducerId(self._core, self._end)
        self._add = AddPartitions(self._core)
        self._maintenance = Maintenance(self._core, self._end)
        self.config = config

    # -- InitProducerId (22) ---------------------------------------------------------------------
    def init_producer_id(
        self, transactional_id: str | None, transaction_timeout_ms: int, producer_id: int,
        producer_epoch: int, version: int, done: OnInit,
    ) -> None:  # fmt: skip
        """v0-5; v3+ carry the KIP-360 producer id and epoch (-1/-1 = none)."""

        def answer(result: InitProducerIdResult) -> None:
            error = downgrade_fenced(result.error, version, 4)
            done(result if error is result.error else InitProducerIdResult(error))

        if transactional_id is None:  # an idempotent producer: a new id at epoch 0
            self._core.producer_ids.allocate(
                lambda pid, _e: answer(InitProducerIdResult(ErrorCode.NONE, pid, 0) if pid is not None
                                       else InitProducerIdResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            )  # fmt: skip
            return
        error = self._init_request_error(
            transactional_id, transaction_timeout_ms, producer_id, producer_epoch
        )
        if error is not None:
            answer(InitProducerIdResult(error))
            return
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        self._init.init(InitRequest(transactional_id, transaction_timeout_ms, expected), answer)

    def _init_request_error(self, transactional_id: str, timeout_ms: int, producer_id: int, epoch: int
                            ) -> ErrorCode | None:  # fmt: skip
        # KafkaApis: one of producer id / epoch given without the other -> INVALID_REQUEST
        if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH) or not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT
        return None

    # -- AddPartitionsToTxn (24), AddOffsetsToTxn (25), the V2 implicit add, verification -------------
    def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition],
        version: int, done: OnError,
    ) -> None:  # fmt: skip
        """AddPartitionsToTxn v0-3 (and a v4+ entry with verify_only false): one error for every
        partition of the transaction (the handler spreads it, as Kafka's errorResponseForTransaction)."""
        tv = 2 if version >= 5 else 0  # v5 comes from a broker's V2 Produce path
        self._add.add(transactional_id, producer_id, producer_epoch, partitions, tv,
                      lambda e: done(downgrade_fenced(e, version, 2)))  # fmt: skip

    def add_partitions_implicit(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition],
        done: OnError,
    ) -> None:  # fmt: skip
        """Transactions V2 (KIP-890 part 2): the Produce path (and TxnOffsetCommit v5, with the group's
        offsets partition) adds partitions itself; the transaction is marked client version 2."""
        self._add.add(transactional_id, producer_id, producer_epoch, partitions, 2, done)

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition]
    ) -> PartitionErrors:
        """AddPartitionsToTxn v4+ verify_only and Produce's KIP-890 part 1 check; no write."""
        return self._add.verify(transactional_id, producer_id, producer_epoch, partitions)

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str, version: int,
        done: OnError,
    ) -> None:  # fmt: skip
        """AddOffsetsToTxn v0-4: adds the group's `__consumer_offsets` partition (KafkaApis)."""
        partition = offsets_partition_for(group_id)
        self._add.add(transactional_id, producer_id, producer_epoch, [partition], 0,
                      lambda e: done(downgrade_fenced(e, version, 2)))  # fmt: skip

    def txn_offset_commit_check(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode | None:
        """Kafka checks nothing at the transaction coordinator for TxnOffsetCommit v0-4
        (KafkaApis.handleTxnOffsetCommitRequest goes straight to the group coordinator): always None.
        For v5 (V2) call `add_partitions_implicit` with `offsets_partition_for(group_id)` instead."""
        return None

    # -- EndTxn (26) -----------------------------------------------------------------------------
    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, version: int,
        done: OnEnd,
    ) -> None:  # fmt: skip
        """v0-5; v5 is transactions V2 (KafkaApis: version > 4 -> TV_2) and answers the next producer
        id and epoch."""

        def answer(result: EndTxnResult) -> None:
            error = downgrade_fenced(result.error, version, 2)
            done(result if error is result.error else EndTxnResult(error))

        request = EndTxnRequest(transactional_id, producer_id, producer_epoch, commit, from_client=True,
                                client_transaction_version=2 if version >= 5 else 0)  # fmt: skip
        self._end.end(request, answer)

    # -- the read side ---------------------------------------------------------------------------
    def list_transactions(
        self, state_filters: Collection[str] = (), producer_id_filters: Collection[int] = (),
        duration_filter_ms: int = -1,
    ) -> ListTransactionsResult:  # fmt: skip
        return list_transactions(self._core, state_filters, producer_id_filters, duration_filter_ms)

    def describe_transactions(self, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
        return describe_transactions(self._core, transactional_ids)

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        """The live metadata (inspector, metrics, tests); read only."""
        return self._core.txns.get(transactional_id)

    def transactions(self) -> list[TransactionMetadata]:
        return list(self._core.txns.values())

    def stats(self) -> TransactionStats:
        """Open = Ongoing or Prepare* (the LSO may wait for them)."""
        open_ = [md for md in self._core.txns.values() if md.state in _OPEN]
        oldest = min((md.start_ms for md in open_), default=None)
        done = self._core.completed
        return TransactionStats(len(open_), oldest, done[True], done[False])

    # -- controls, replay, lifecycle -------------------------------------------------------------
    def abort(self, transactional_id: str, done: OnControl) -> None:
        """Operator / test control: fence the producer and abort its Ongoing transaction."""
        self._maintenance.control(transactional_id, "abort", done)

    def expire(self, transactional_id: str, done: OnControl) -> None:
        """Test control: expire an idle transactional id now (its tombstone)."""
        self._maintenance.control(transactional_id, "expire", done)

    def apply(self, record: TransactionRecord) -> None:
        """Replay one record (recovery); the last record of an id wins, a tombstone removes it."""
        self._core.apply(record)

    def on_loaded(self) -> None:
        """Recovery done: active; timers armed; transactions found in Prepare* get their markers."""
        self._maintenance.on_loaded()

    def shutdown(self) -> None:
        self._maintenance.shutdown()

    # -- cluster mode: shards of transactional ids moving between nodes ---------------------------
    def shard_loaded(self, belongs: Callable[[str], bool]) -> None:
        """The ids `belongs` names were just replayed (a shard taken over): finish the Prepare*
        ones, as `on_loaded` does at startup (Kafka: TransactionStateManager's
        loadTransactionsForTxnTopicPartition)."""
        self._maintenance.finish_prepared(belongs)

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Forget the ids `gone` names (their shard moved: Kafka's removeTransactionsForTxnTopicPartition)."""
        txns = self._core.txns
        for transactional_id in [t for t in txns if gone(t)]:
            del txns[transactional_id]

    @property
    def phase(self) -> Phase:
        return self._core.runtime.phase

    def partition_for(self, transactional_id: str) -> int:
        """The `__transaction_state` partition of an id (FindCoordinator, the inspector)."""
        return partition_for(transactional_id, self.config.transaction_state_partitions)
