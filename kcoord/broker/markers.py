"""Transaction markers: COMMIT/ABORT written to every partition of a transaction.

Kafka's transaction coordinator sends WriteTxnMarkers to each partition's leader
(TransactionMarkerChannelManager) and the leader appends a control batch, or, for a `__consumer_offsets`
partition, hands the marker to the group coordinator (KafkaApis.handleWriteTxnMarkersRequest,
GroupCoordinator.completeTransaction). Here every partition is local: `TxnMarkers.write` does both
directly, and the WriteTxnMarkers API (kafka-transactions.sh's abort) uses the same path.

`CoordinatorMarkers` is the transaction coordinator's MarkerWriter: like TransactionMarkerChannelManager
it retries a partition until its marker is written (TransactionMarkerRequestCompletionHandler), skips a
partition whose topic is gone (addTxnMarkersToBrokerQueue: "the partition is likely deleted already"),
and stops retrying on a stale producer or coordinator epoch (logged: the partition already moved on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.partition_log import AppendError, AppendResult
from kcoord.protocol.errors import ErrorCode

__all__ = ["OFFSETS_TOPIC", "CoordinatorMarkers", "TxnMarkers"]

log = logging.getLogger("kcoord.transactions")

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's GROUP_METADATA_TOPIC_NAME
Partition = tuple[str, int]
Results = dict[Partition, ErrorCode]
_RETRY_S = (0.05, 0.1, 0.2, 0.5, 1.0)  # backoff between attempts, the last one repeated
_SETTLED = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
_STALE = (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED)


class TxnMarkers:
    """Writes one transaction's marker to each of its partitions; answers each partition's error."""

    def __init__(self, data: TopicData, groups: GroupManager) -> None:
        self._data = data
        self._groups = groups

    def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[Results], None],
    ) -> None:
        results: Results = {}
        waiting = set(partitions)
        if not waiting:
            done(results)
            return

        def settle(partition: Partition, error: ErrorCode) -> None:
            results[partition] = error
            waiting.discard(partition)
            if not waiting:
                done(results)

        offsets = [p for p in waiting if p[0] == OFFSETS_TOPIC]
        for partition in [p for p in waiting if p[0] != OFFSETS_TOPIC]:
            self._append(partition, producer_id, producer_epoch, commit, coordinator_epoch, settle)
        if offsets:
            # One call completes the producer's pending offsets of every group, whatever their partition.
            def completed(error: BaseException | None) -> None:
                code = ErrorCode.NONE if error is None else ErrorCode.KAFKA_STORAGE_ERROR
                for partition in offsets:
                    settle(partition, code)

            self._groups.complete_transaction(producer_id, producer_epoch, commit, completed)

    def _append(
        self,
        partition: Partition,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        settle: Callable[[Partition, ErrorCode], None],
    ) -> None:
        plog = self._data.log(*partition)
        if plog is None:
            settle(partition, self._data.missing(*partition))  # led elsewhere: retried
            return
        appended = plog.append_marker(producer_id, producer_epoch, commit, coordinator_epoch)
        if isinstance(appended, AppendError):
            settle(partition, appended.error_code)
            return

        def written(future: asyncio.Future[AppendResult]) -> None:
            failed = future.cancelled() or future.exception() is not None
            settle(partition, ErrorCode.KAFKA_STORAGE_ERROR if failed else ErrorCode.NONE)

        appended.add_done_callback(written)


class CoordinatorMarkers:
    """The transaction coordinator's MarkerWriter: done(None) once every partition has its marker."""

    def __init__(self, loop: asyncio.AbstractEventLoop, markers: TxnMarkers | None = None) -> None:
        self._markers = markers
        self._loop = loop

    def attach(self, markers: TxnMarkers) -> None:
        """The partition logs open after recovery replayed the transactions: connect them then."""
        self._markers = markers

    def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[BaseException | None], None],
    ) -> None:
        attempt = 0
        assert self._markers is not None, "markers written before the partition logs opened"
        markers = self._markers

        def send(remaining: Sequence[Partition]) -> None:
            markers.write(producer_id, producer_epoch, commit, coordinator_epoch, remaining, answered)

        def answered(results: Results) -> None:
            nonlocal attempt
            retry, why = [], set()
            for partition, error in results.items():
                if error in _STALE:
                    log.warning(
                        "marker not written producer_id=%d epoch=%d partition=%s-%d: %s (the partition "
                        "already moved past this producer epoch)",
                        producer_id,
                        producer_epoch,
                        *partition,
                        error.name,
                    )
                elif error not in _SETTLED:
                    retry.append(partition)
                    why.add(error.name)
            if not retry:
                done(None)
                return
            delay = _RETRY_S[min(attempt, len(_RETRY_S) - 1)]
            attempt += 1
            log.warning(
                "retrying markers producer_id=%d partitions=%d in %.2fs (%s)",
                producer_id, len(retry), delay, ", ".join(sorted(why)),
            )  # fmt: skip
            self._loop.call_later(delay, send, retry)

        send(partitions)
