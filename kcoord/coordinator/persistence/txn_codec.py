"""The transaction coordinator's record (coordinator/transactions/records.py) <-> storage record type 6,
through Kafka's TransactionLogKey / TransactionLogValue schemas (`protocol.messages.records`).

Value version: the smallest that carries the record. v0 when its tagged fields are at their
defaults (client transaction version 0, no previous or next producer id), else v1 (flexible, the
tagged fields). Kafka picks by the finalized transaction.version instead (TransactionLog.valueToBytes,
TransactionVersion.transactionLogValueVersion); both read either. An Empty transaction stores null
partitions, as Kafka's does.
"""

from __future__ import annotations

from typing import Any

from kcoord import storage
from kcoord.coordinator.transactions.records import TransactionRecord, TransactionValue
from kcoord.coordinator.transactions.state import NO_PRODUCER_ID, TransactionState
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import decode_exact, encode_versioned

__all__ = ["TRANSACTION_TYPE", "render_transaction", "transaction_from_storage", "transaction_to_storage"]

TRANSACTION_TYPE = schemas.TRANSACTION_RECORD_TYPE


def _key(transactional_id: str) -> bytes:
    fields = {"transactional_id": transactional_id}
    return encode_versioned(schemas.TRANSACTION_LOG_KEY, schemas.TRANSACTION_LOG_KEY_VERSION, fields)


def _value(v: TransactionValue) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in v.partitions:
        by_topic.setdefault(topic, []).append(partition)
    partitions = (
        None
        if v.state is TransactionState.EMPTY
        else [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()]
    )
    tagged = (v.client_transaction_version, v.previous_producer_id, v.next_producer_id)
    version = 0 if tagged == (0, NO_PRODUCER_ID, NO_PRODUCER_ID) else 1
    fields = {
        "producer_id": v.producer_id,
        "previous_producer_id": v.previous_producer_id,
        "next_producer_id": v.next_producer_id,
        "producer_epoch": v.producer_epoch,
        "transaction_timeout_ms": v.timeout_ms,
        "transaction_status": v.state.id,
        "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": v.last_update_ms,
        "transaction_start_timestamp_ms": v.start_ms,
        "client_transaction_version": v.client_transaction_version,
    }
    return encode_versioned(schemas.TRANSACTION_LOG_VALUE, version, fields)


def transaction_to_storage(record: TransactionRecord) -> storage.Record:
    value = None if record.value is None else _value(record.value)
    return storage.Record(TRANSACTION_TYPE, _key(record.transactional_id), value)


def _decode_value(v: dict[str, Any]) -> TransactionValue:
    state = TransactionState.from_id(v["transaction_status"])
    partitions = tuple(
        sorted((p["topic"], i) for p in v["transaction_partitions"] or () for i in p["partition_ids"])
    )
    return TransactionValue(
        producer_id=v["producer_id"],
        previous_producer_id=v["previous_producer_id"],
        next_producer_id=v["next_producer_id"],
        producer_epoch=v["producer_epoch"],
        timeout_ms=v["transaction_timeout_ms"],
        state=state,
        partitions=() if state is TransactionState.EMPTY else partitions,
        last_update_ms=v["transaction_last_update_timestamp_ms"],
        start_ms=v["transaction_start_timestamp_ms"],
        client_transaction_version=v["client_transaction_version"],
    )


def transaction_from_storage(record: storage.Record) -> TransactionRecord:
    """Raises ValueError for a malformed key or value (what `render` reports as undecodable)."""
    try:
        txn_id = decode_exact(schemas.TRANSACTION_LOG_KEY, record.key)["transactional_id"]
        if record.value is None:
            return TransactionRecord(txn_id, None)
        value = decode_exact(schemas.TRANSACTION_LOG_VALUE, record.value)
    except DecodeError as exc:
        raise ValueError(f"bad transaction record: {exc}") from None
    return TransactionRecord(txn_id, _decode_value(value))


def render_transaction(record: TransactionRecord) -> str:
    """One line for `kcoord storage dump` (Kafka's TransactionLog.formatRecordKeyAndValue, as fields)."""
    head = f"transaction transactional_id={record.transactional_id}"
    v = record.value
    if v is None:
        return f"{head} tombstone"
    partitions = ",".join(f"{t}-{p}" for t, p in v.partitions)
    return (
        f"{head} producer_id={v.producer_id} producer_epoch={v.producer_epoch} state={v.state.state_name} "
        f"partitions=[{partitions}] timeout_ms={v.timeout_ms} start_timestamp={v.start_ms} "
        f"last_update_timestamp={v.last_update_ms} previous_producer_id={v.previous_producer_id} "
        f"next_producer_id={v.next_producer_id} client_transaction_version={v.client_transaction_version}"
    )
