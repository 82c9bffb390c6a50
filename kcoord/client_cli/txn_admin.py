"""The transaction admin calls of Kafka's Admin client (KIP-664) over `kafka_client`, with typed answers.

Each function follows the Admin handler of the same name in apache/kafka
clients/src/main/java/org/apache/kafka/clients/admin/internals/: ListTransactionsHandler (every broker,
retried while its coordinator loads), DescribeTransactionsHandler (the transactional id's coordinator,
FindCoordinator key type 1), DescribeProducersHandler (each partition's leader; a coordinator epoch or
transaction start offset below 0 means none) and AbortTransactionHandler (a WriteTxnMarkers ABORT to the
partition's leader; the answer must name exactly that producer and partition).
Errors a user can meet are `ToolError`s; an unknown transactional id is `TransactionalIdNotFound`,
which `--find-hanging` treats as "the coordinator has no such transaction".
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.client_cli.kafka_client import (
    COORDINATOR_RETRIABLE,
    TRANSACTION,
    Broker,
    Cluster,
    Connection,
    Metadata,
    ToolError,
    TopicPartition,
    error_text,
)
from kcoord.protocol.errors import ErrorCode

__all__ = [
    "AbortSpec",
    "ProducerState",
    "TransactionDescription",
    "TransactionListing",
    "TransactionalIdNotFound",
    "abort_transaction",
    "describe_producers",
    "describe_transaction",
    "list_transactions",
]

WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 27, 61, 65, 66


@dataclass(frozen=True)
class TransactionListing:
    """One row of ListTransactions (Admin's TransactionListing) and the broker that answered it."""

    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """DescribeTransactions' answer (Admin's TransactionDescription); start_time_ms None: no transaction
    open."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int | None
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition (Admin's ProducerState)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None  # None: no marker written for this producer yet
    current_txn_start_offset: int | None  # None: no open transaction


@dataclass(frozen=True)
class AbortSpec:
    """Admin's AbortTransactionSpec: the producer whose open transaction on `partition` to abort."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        topic, partition = self.partition
        return (
            f"AbortTransactionSpec(topicPartition={topic}-{partition}, producerId={self.producer_id}, "
            f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})"
        )


class TransactionalIdNotFound(ToolError):
    """DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND."""


# -- ListTransactions -------------------------------------------------------------------------------------


def list_transactions(
    cluster: Cluster,
    states: Sequence[str] = (),
    producer_ids: Sequence[int] = (),
    duration_ms: int | None = None,
    unknown_states: set[str] | None = None,
) -> list[TransactionListing]:
    """ListTransactions at every broker (each lists the transactional ids it coordinates), in broker
    order; the state filters some broker did not know are added to `unknown_states`. A duration filter
    needs v1 (KIP-994): refused, not silently dropped, by an older broker."""
    listings: list[TransactionListing] = []
    for broker in cluster.brokers():
        conn = cluster.connection(broker)
        version = conn.version(LIST_TRANSACTIONS)
        body: dict[str, Any] = {"state_filters": list(states), "producer_id_filters": list(producer_ids)}
        if duration_ms is not None:
            if version < 1:
                raise ToolError(
                    f"the broker at {broker} does not support ListTransactions v1 (a duration filter)"
                )
            body["duration_filter"] = duration_ms
        response = _list_at(conn, body, version, cluster.timeout)
        if unknown_states is not None:
            unknown_states.update(response["unknown_state_filters"])
        listings += [
            TransactionListing(
                t["transactional_id"], broker.node_id, t["producer_id"], t["transaction_state"]
            )
            for t in response["transaction_states"]
        ]
    return listings


def _list_at(conn: Connection, body: dict[str, Any], version: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = conn.request(LIST_TRANSACTIONS, body, version)
        error = response["error_code"]
        if error == ErrorCode.NONE:
            return response
        if error != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() >= deadline:
            raise ToolError(f"Failed to list transactions at {conn.address}: {error_text(error)}")
        time.sleep(0.1)


# -- DescribeTransactions ---------------------------------------------------------------------------------


def describe_transaction(cluster: Cluster, transactional_id: str) -> TransactionDescription:
    """DescribeTransactions at the transactional id's coordinator, found again while it moves or loads."""

    def call(conn: Connection) -> dict[str, Any]:
        response = conn.request(DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]})
        for state in response["transaction_states"]:
            if state["transactional_id"] == transactional_id:
                return dict(state)
        raise ToolError(f"{conn.address} did not describe transactional id '{transactional_id}'")

    state = cluster.with_coordinator(
        transactional_id, call, lambda s: s["error_code"] in COORDINATOR_RETRIABLE, TRANSACTION
    )
    error = state["error_code"]
    prefix = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
    if error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        raise TransactionalIdNotFound(f"{prefix}: {error_text(error)}")
    if error != ErrorCode.NONE:
        raise ToolError(f"{prefix}: {error_text(error)}")
    coordinator = cluster.coordinator(transactional_id, key_type=TRANSACTION)
    return TransactionDescription(
        transactional_id=transactional_id,
        coordinator_id=coordinator.node_id,
        state=state["transaction_state"],
        producer_id=state["producer_id"],
        producer_epoch=state["producer_epoch"],
        timeout_ms=state["transaction_timeout_ms"],
        start_time_ms=state["transaction_start_time_ms"] if state["transaction_start_time_ms"] >= 0 else None,
        partitions=tuple(sorted((t["topic"], p) for t in state["topics"] for p in t["partitions"])),
    )


# -- DescribeProducers ------------------------------------------------------------------------------------


def leader_of(metadata: Metadata, tp: TopicPartition) -> Broker:
    """The broker leading `tp`, or a ToolError naming why there is none."""
    topic, partition = tp
    if topic in metadata.topic_errors:
        raise ToolError(f"topic '{topic}': {error_text(metadata.topic_errors[topic])}")
    leader = metadata.topics.get(topic, {}).get(partition)
    if leader is None:
        raise ToolError(f"partition {topic}-{partition}: {error_text(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}")
    if leader not in metadata.brokers:
        raise ToolError(f"partition {topic}-{partition}: {error_text(ErrorCode.LEADER_NOT_AVAILABLE)}")
    return metadata.brokers[leader]


def describe_producers(
    cluster: Cluster, partitions: Iterable[TopicPartition], metadata: Metadata
) -> dict[TopicPartition, list[ProducerState]]:
    """DescribeProducers at each partition's leader: partition -> its active producers."""
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in partitions:
        by_leader.setdefault(leader_of(metadata, tp).node_id, []).append(tp)
    result: dict[TopicPartition, list[ProducerState]] = {}
    for leader, tps in by_leader.items():
        topics: dict[str, list[int]] = {}
        for topic, partition in tps:
            topics.setdefault(topic, []).append(partition)
        body = {"topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
        response = cluster.connection(metadata.brokers[leader]).request(DESCRIBE_PRODUCERS, body)
        for topic in response["topics"]:
            for p in topic["partitions"]:
                tp = (topic["name"], p["partition_index"])
                if p["error_code"] != ErrorCode.NONE:
                    detail = f" ({p['error_message']})" if p["error_message"] else ""
                    raise ToolError(
                        f"Failed to describe producers for partition {tp[0]}-{tp[1]} on leader: "
                        f"{error_text(p['error_code'])}{detail}"
                    )
                result[tp] = [_producer_state(s) for s in p["active_producers"]]
    return result


def _producer_state(s: dict[str, Any]) -> ProducerState:
    return ProducerState(
        producer_id=s["producer_id"],
        producer_epoch=s["producer_epoch"],
        last_sequence=s["last_sequence"],
        last_timestamp=s["last_timestamp"],
        coordinator_epoch=s["coordinator_epoch"] if s["coordinator_epoch"] >= 0 else None,
        current_txn_start_offset=s["current_txn_start_offset"]
        if s["current_txn_start_offset"] >= 0
        else None,
    )


# -- WriteTxnMarkers (Admin.abortTransaction) -------------------------------------------------------------


def abort_transaction(cluster: Cluster, spec: AbortSpec, metadata: Metadata) -> None:
    """An ABORT marker for the producer's open transaction, written by the partition's leader."""
    topic, partition = spec.partition
    marker = {
        "producer_id": spec.producer_id,
        "producer_epoch": spec.producer_epoch,
        "transaction_result": False,  # ABORT
        "topics": [{"name": topic, "partition_indexes": [partition]}],
        "coordinator_epoch": spec.coordinator_epoch,
    }
    conn = cluster.connection(leader_of(metadata, spec.partition))
    response = conn.request(WRITE_TXN_MARKERS, {"markers": [marker]})
    error = _marker_error(response, spec)
    if error != ErrorCode.NONE:
        raise ToolError(f"Failed to abort transaction {spec}: {error_text(error)}")


def _marker_error(response: dict[str, Any], spec: AbortSpec) -> int:
    """The one partition's error code; a ToolError when the answer is about anything else."""
    markers = response["markers"]
    topics = markers[0]["topics"] if len(markers) == 1 else []
    partitions = topics[0]["partitions"] if len(topics) == 1 else []
    if (
        len(markers) != 1
        or markers[0]["producer_id"] != spec.producer_id
        or len(topics) != 1
        or topics[0]["name"] != spec.partition[0]
        or len(partitions) != 1
        or partitions[0]["partition_index"] != spec.partition[1]
    ):
        raise ToolError(f"WriteTxnMarkers answered about other markers than {spec}: {markers}")
    return int(partitions[0]["error_code"])
