"""What Kafka checks before appending a Produce request's records to a partition.

Kafka's order: `ProduceRequest.validateRecords` (v3+: exactly one batch, magic 2 -> INVALID_RECORD),
`UnifiedLog.analyzeAndValidateRecords` (batch size against max.message.bytes -> MESSAGE_TOO_LARGE and
against segment.bytes -> RECORD_LIST_TOO_LARGE; CRC -> CORRUPT_MESSAGE), `LogValidator.validateBatch`
(offset range and record count must agree, no control batch from a client, a producer id needs a
sequence -> INVALID_RECORD), `LogValidator.validateTimestamp`
(message.timestamp.before/after.max.ms -> INVALID_TIMESTAMP) and `ProducerAppendInfo` (sequence and
epoch checks, see `producers.py`).

Per record we check nothing beyond what the header and the CRC already guarantee: the CRC proves the
records are the ones the client wrote, and the header's count, offset range and timestamps bound
them. (Kafka additionally walks every record to check compacted-topic keys, which kcoord does not
have.) Timestamps are checked on the batch's base and max timestamps.

Then, on a topic whose `compression.type` names a codec other than the batch's, the batch is rebuilt in
it (`recompression.py`, LogValidator's `buildRecordsAndAssignOffsets`), which walks its records, and
its new size is checked again (`UnifiedLog.append`: max.message.bytes -> MESSAGE_TOO_LARGE,
segment.bytes -> RECORD_LIST_TOO_LARGE), before the producer checks, in Kafka's order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.producers import ProducerStates
from kcoord.partition_log.recompression import recompressed
from kcoord.partition_log.results import AppendResult
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import (
    BATCH_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    EndTransactionMarker,
    ProducedBatch,
    batch_crc,
    end_txn_marker_batch,
    read_header,
)

__all__ = [
    "AppendError",
    "DuplicateAppend",
    "ValidatedAppend",
    "check_append",
    "check_batch",
    "marker_append",
]


@dataclass(frozen=True, slots=True)
class ValidatedAppend:
    """One checked batch, ready for `PartitionLog.append`."""

    data: bytes
    header: BatchHeader

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional or self.header.is_control


@dataclass(frozen=True, slots=True)
class DuplicateAppend:
    """An idempotent producer's retry of a batch already in the log: answer with its offset; or, when
    the first copy is not durable yet (cluster mode), with what its append answers (`durable`), as
    Kafka's duplicate waits in the produce purgatory until the high watermark passes it."""

    base_offset: int
    durable: asyncio.Future[AppendResult] | None = None


@dataclass(frozen=True, slots=True)
class AppendError:
    error_code: ErrorCode
    message: str
    record_errors: tuple[tuple[int, str], ...] = ()


def check_batch(batch: ProducedBatch, config: PartitionConfig, now_ms: int) -> ValidatedAppend | AppendError:
    """The batch-level checks, in Kafka's order, on the header the edge read (`ProducedBatch.read`)."""
    records, header = batch.data, batch.header
    if len(records) <= MAGIC_OFFSET:
        return _invalid("Produce requests must have at least one record batch")
    magic = records[MAGIC_OFFSET]
    if magic != 2:
        return _invalid(
            "Produce requests with version 3 and above are only allowed to contain record batches "
            "with magic version 2"
        )
    if header is None:
        return _invalid("Produce requests must have at least one record batch")
    if header.batch_length < BATCH_HEADER.size - LOG_OVERHEAD or header.size > len(records):
        return _invalid("Produce requests must have at least one record batch")  # no whole batch in it
    if header.size < len(records):
        return _invalid("Produce requests are only allowed to contain exactly one record batch")
    if header.size > config.max_message_bytes:
        return AppendError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch size in the append ({header.size} bytes) exceeds the maximum configured "
            f"value of max.message.bytes ({config.max_message_bytes})",
        )
    if header.size > config.segment_bytes:
        return AppendError(ErrorCode.RECORD_LIST_TOO_LARGE, "The batch is larger than segment.bytes")
    if batch_crc(records, 0, header.size) != header.crc:
        return AppendError(ErrorCode.CORRUPT_MESSAGE, "Record batch is corrupt (CRC mismatch)")
    problem = _batch_problem(header)
    if problem is not None:
        return _invalid(problem)
    return _check_timestamps(records, header, config, now_ms)


def _batch_problem(header: BatchHeader) -> str | None:
    """LogValidator.validateBatch's checks of a client's batch (INVALID_RECORD)."""
    if header.records_count <= 0 or header.last_offset_delta + 1 != header.records_count:
        return (
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of records "
            f"{header.records_count}"
        )
    if header.is_control:
        return "Clients are not allowed to write control records"
    if header.producer_id >= 0 and header.base_sequence < 0:
        return f"Invalid sequence number {header.base_sequence} for producerId {header.producer_id}"
    return None


def _check_timestamps(
    records: bytes, header: BatchHeader, config: PartitionConfig, now_ms: int
) -> ValidatedAppend | AppendError:
    if config.message_timestamp_type == "CreateTime":
        earliest = now_ms - config.message_timestamp_before_max_ms
        latest = now_ms + config.message_timestamp_after_max_ms
        if header.base_timestamp < earliest or header.max_timestamp > latest:
            return AppendError(
                ErrorCode.INVALID_TIMESTAMP,
                f"Timestamp of a record is out of range [{earliest}, {latest}] (message.timestamp.*.max.ms)",
                ((0, "timestamp out of range"),),
            )
    return ValidatedAppend(records, header)


def _invalid(message: str) -> AppendError:
    return AppendError(ErrorCode.INVALID_RECORD, message)


def check_append(
    records: bytes | ProducedBatch, config: PartitionConfig, producers: ProducerStates, now_ms: int
) -> ValidatedAppend | DuplicateAppend | AppendError:
    """A Produce batch for a partition: the batch checks, then its producer's (a duplicate of one of
    its last five batches is answered with that batch's offset). `records` as the edge read them
    (Produce), or bytes whose header is read here (tests, tools)."""
    batch = records if isinstance(records, ProducedBatch) else ProducedBatch.read(records)
    checked = check_batch(batch, config, now_ms)
    if isinstance(checked, AppendError):
        return checked
    checked = _in_topic_codec(checked, config)
    if isinstance(checked, AppendError):
        return checked
    error, duplicate_of = producers.check(checked.header)
    if error is not ErrorCode.NONE:
        return AppendError(error, f"{error.name} for producer {checked.header.producer_id}")
    if duplicate_of >= 0:
        return DuplicateAppend(duplicate_of)
    return checked


def _in_topic_codec(checked: ValidatedAppend, config: PartitionConfig) -> ValidatedAppend | AppendError:
    """The batch in the topic's codec, its size checked again as `UnifiedLog.append` does when the
    validator may have changed it (`messageSizeMaybeChanged`)."""
    rebuilt = recompressed(checked.data, checked.header, config)
    if rebuilt is None:
        return checked
    if isinstance(rebuilt, str):
        return _invalid(rebuilt)
    data, header = rebuilt
    if header.size > config.max_message_bytes:
        return AppendError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"Message batch size is {header.size} bytes in append to the partition which exceeds the maximum "
            f"configured size of {config.max_message_bytes}.",
        )
    if header.size > config.segment_bytes:
        return AppendError(ErrorCode.RECORD_LIST_TOO_LARGE, "The batch is larger than segment.bytes")
    return ValidatedAppend(data, header)


def marker_append(
    producers: ProducerStates,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    now_ms: int,
) -> tuple[ValidatedAppend, EndTransactionMarker] | AppendError:
    """The COMMIT or ABORT control batch of the producer's transaction, after Kafka's checks
    (`ProducerAppendInfo.appendEndTxnMarker`); a producer without an open transaction still gets its
    marker (an empty transaction)."""
    error = producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
    if error is not ErrorCode.NONE:
        return AppendError(error, f"{error.name} for the transaction marker of producer {producer_id}")
    data = end_txn_marker_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
    return ValidatedAppend(data, read_header(data)), EndTransactionMarker(commit, coordinator_epoch)
