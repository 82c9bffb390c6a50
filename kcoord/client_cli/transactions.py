"""`kcoord transactions`: list and describe transactions, describe a partition's producers, find and
abort hanging transactions, like Kafka's `kafka-transactions.sh`, over the Kafka protocol (so it works
against kcoord and against Kafka).

Behaviour, columns and messages follow apache/kafka tools/src/main/java/org/apache/kafka/tools/
TransactionsCommand.java (ListTransactionsCommand, DescribeTransactionsCommand,
DescribeProducersCommand, FindHangingTransactionsCommand, AbortTransactionCommand). Differences
(docs/compat.md): actions are options (`--list`, not `list`) as in `kcoord groups`; `--list` also
filters by --state and --producer-id (Admin's ListTransactionsOptions); `--find-hanging` without
--topic searches every topic (Kafka asks for --topic or --broker-id; there is no --broker-id here);
`--abort` prints what it aborted; `--output json`; tables are sized to their content; every error is
one line on stderr with a non-zero exit.

A transaction is hanging (FindHangingTransactionsCommand) when a partition has an open transaction
whose producer last wrote more than --max-transaction-timeout minutes ago, and its coordinator either
does not know the producer id (ListTransactions filtered by producer id), does not know the
transactional id (TRANSACTIONAL_ID_NOT_FOUND), or no longer counts that partition in the transaction
(DescribeTransactions lists the partitions of an ongoing transaction and those still waiting for
their markers).

APIs used: ApiVersions, Metadata, FindCoordinator (key type 1), ListTransactions, DescribeTransactions,
DescribeProducers, WriteTxnMarkers.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.client_cli.command import run_command
from kcoord.client_cli.kafka_client import Cluster, ToolError, TopicPartition
from kcoord.client_cli.output import print_json, print_table
from kcoord.client_cli.transactions_args import parse_args
from kcoord.client_cli.txn_admin import (
    AbortSpec,
    ProducerState,
    TransactionalIdNotFound,
    TransactionDescription,
    TransactionListing,
    abort_transaction,
    describe_producers,
    describe_transaction,
    leader_of,
    list_transactions,
)

__all__ = [
    "OpenTransaction",
    "abort_spec_at",
    "candidate_open_transactions",
    "description_row",
    "hanging_rows",
    "hanging_transactions",
    "listing_rows",
    "main",
    "producer_rows",
]

PROG = "kcoord transactions"
NONE = "None"  # what TransactionsCommand prints for an absent start offset or time
LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCER_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
MINUTE_MS = 60_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"  # Kafka's TopicPartition.toString


# -- find-hanging and abort: the decisions, from typed answers ----------------------------------------------


@dataclass(frozen=True)
class OpenTransaction:
    partition: TopicPartition
    producer: ProducerState


def candidate_open_transactions(
    producers: dict[TopicPartition, list[ProducerState]], now_ms: int, max_timeout_ms: int
) -> list[OpenTransaction]:
    """Open transactions whose producer last wrote longer than the longest allowed transaction ago
    (collectCandidateOpenTransactions: strictly longer, measured from the last timestamp)."""
    return [
        OpenTransaction(tp, state)
        for tp, states in sorted(producers.items())
        for state in states
        if state.current_txn_start_offset is not None and now_ms - state.last_timestamp > max_timeout_ms
    ]


def hanging_transactions(
    candidates: Sequence[OpenTransaction],
    transactional_ids: dict[int, str],
    descriptions: dict[str, TransactionDescription | None],
) -> list[OpenTransaction]:
    """filterHangingTransactions: an unknown producer id or transactional id hangs; a known one hangs on
    the partitions its coordinator does not count in the transaction."""
    hanging = []
    for candidate in candidates:
        transactional_id = transactional_ids.get(candidate.producer.producer_id)
        description = descriptions.get(transactional_id) if transactional_id is not None else None
        if description is None or candidate.partition not in description.partitions:
            hanging.append(candidate)
    return hanging


def abort_spec_at(producers: list[ProducerState], tp: TopicPartition, start_offset: int) -> AbortSpec:
    """AbortTransactionCommand.buildAbortSpec: the producer whose open transaction starts at
    `start_offset`; a producer without a coordinator epoch gets 0."""
    for state in producers:
        if state.current_txn_start_offset == start_offset:
            return AbortSpec(tp, state.producer_id, state.producer_epoch, state.coordinator_epoch or 0)
    raise ToolError(
        f"Could not find any open transactions starting at offset {start_offset} on partition {_tp(tp)}"
    )


# -- rows, from typed answers -------------------------------------------------------------------------------


def listing_rows(listings: Sequence[TransactionListing]) -> list[list[Any]]:
    return [[t.transactional_id, t.coordinator_id, t.producer_id, t.state] for t in listings]


def description_row(d: TransactionDescription, now_ms: int) -> list[Any]:
    return [
        d.coordinator_id,
        d.transactional_id,
        d.producer_id,
        d.producer_epoch,
        d.state,
        d.timeout_ms,
        NONE if d.start_time_ms is None else d.start_time_ms,
        NONE if d.start_time_ms is None else now_ms - d.start_time_ms,
        ",".join(_tp(tp) for tp in d.partitions),
    ]


def producer_rows(producers: Sequence[ProducerState]) -> list[list[Any]]:
    return [
        [
            p.producer_id,
            p.producer_epoch,
            -1 if p.coordinator_epoch is None else p.coordinator_epoch,
            p.last_sequence,
            p.last_timestamp,
            NONE if p.current_txn_start_offset is None else p.current_txn_start_offset,
        ]
        for p in producers
    ]


def hanging_rows(hanging: Sequence[OpenTransaction], now_ms: int) -> list[list[Any]]:
    return [
        [
            t.partition[0],
            t.partition[1],
            t.producer.producer_id,
            t.producer.producer_epoch,
            -1 if t.producer.coordinator_epoch is None else t.producer.coordinator_epoch,
            t.producer.current_txn_start_offset,
            t.producer.last_timestamp,
            (now_ms - t.producer.last_timestamp) // MINUTE_MS,
        ]
        for t in hanging
    ]


def _rows_json(headers: Sequence[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    keys = [_json_key(h) for h in headers]
    return [{k: (None if v == NONE else v) for k, v in zip(keys, row, strict=True)} for row in rows]


def _json_key(header: str) -> str:
    """ "CurrentTransactionStartOffset" -> "current_transaction_start_offset", "Duration(min)" ->
    "duration_min"."""
    name = header.replace("(", "_").replace(")", "")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_").replace("__", "_")


def _show(args: argparse.Namespace, headers: Sequence[str], rows: list[list[Any]]) -> None:
    if args.output == "json":
        print_json(_rows_json(headers, rows))
    else:
        print_table(headers, rows)


# -- the actions --------------------------------------------------------------------------------------------


def list_command(cluster: Cluster, args: argparse.Namespace) -> int:
    states = [s.strip() for s in (args.state or "").split(",") if s.strip()]
    unknown: set[str] = set()
    listings = list_transactions(cluster, states, args.producer_id_filter, args.duration_filter, unknown)
    if unknown:  # ListTransactions' unknown_state_filters: what the coordinator cannot match
        print(f"{PROG}: unknown transaction states ignored: {', '.join(sorted(unknown))}", file=sys.stderr)
    _show(args, LIST_HEADERS, listing_rows(listings))
    return 0


def describe_command(cluster: Cluster, args: argparse.Namespace) -> int:
    description = describe_transaction(cluster, args.transactional_id)
    row = description_row(description, _now_ms())
    if args.output == "json":
        [document] = _rows_json(DESCRIBE_HEADERS, [row])
        document["topic_partitions"] = [{"topic": t, "partition": p} for t, p in description.partitions]
        print_json(document)
    else:
        print_table(DESCRIBE_HEADERS, [row])
    return 0


def describe_producers_command(cluster: Cluster, args: argparse.Namespace) -> int:
    tp = (args.topic, args.partition)
    producers = describe_producers(cluster, [tp], cluster.metadata([args.topic]))[tp]
    _show(args, PRODUCER_HEADERS, producer_rows(producers))
    return 0


def find_hanging_command(cluster: Cluster, args: argparse.Namespace) -> int:
    metadata = cluster.metadata(None if args.topic is None else [args.topic])
    if args.partition is not None:
        partitions = [(args.topic, args.partition)]
    else:
        partitions = sorted((t, p) for t, ps in metadata.topics.items() for p in ps)
        if args.topic is not None:
            leader_of(metadata, (args.topic, 0))  # a ToolError naming the topic's error, if it has one
    candidates = candidate_open_transactions(
        describe_producers(cluster, partitions, metadata), _now_ms(), args.max_transaction_timeout * MINUTE_MS
    )
    hanging: list[OpenTransaction] = []
    if candidates:
        producer_ids = sorted({c.producer.producer_id for c in candidates})
        listed = list_transactions(cluster, producer_ids=producer_ids)
        ids = {t.producer_id: t.transactional_id for t in listed if t.producer_id in producer_ids}
        descriptions: dict[str, TransactionDescription | None] = {}
        for transactional_id in sorted(set(ids.values())):
            try:
                descriptions[transactional_id] = describe_transaction(cluster, transactional_id)
            except TransactionalIdNotFound:
                descriptions[transactional_id] = None
        hanging = hanging_transactions(candidates, ids, descriptions)
    _show(args, HANGING_HEADERS, hanging_rows(hanging, _now_ms()))
    return 0


def abort_command(cluster: Cluster, args: argparse.Namespace) -> int:
    tp = (args.topic, args.partition)
    metadata = cluster.metadata([args.topic])
    if args.start_offset is not None:
        spec = abort_spec_at(describe_producers(cluster, [tp], metadata)[tp], tp, args.start_offset)
    else:
        # A producer that never had a marker shows coordinator epoch -1 in DescribeProducers: Kafka's
        # command sends 0, which no coordinator epoch can be below.
        spec = AbortSpec(tp, args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
    abort_transaction(cluster, spec, metadata)
    if args.output == "json":
        print_json(
            {
                "topic": tp[0],
                "partition": tp[1],
                "producer_id": spec.producer_id,
                "producer_epoch": spec.producer_epoch,
                "coordinator_epoch": spec.coordinator_epoch,
            }
        )
    else:
        print(f"Aborted {spec}")
    return 0


ACTIONS: dict[str, Callable[[Cluster, argparse.Namespace], int]] = {
    "list": list_command,
    "describe": describe_command,
    "describe_producers": describe_producers_command,
    "find_hanging": find_hanging_command,
    "abort": abort_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(PROG, argv)
    action = next(ACTIONS[name] for name in ACTIONS if getattr(args, name))
    return run_command(PROG, args, action)
