"""`kcoord transactions` without a server: its argument checks, its find-hanging and abort decisions
(FindHangingTransactionsCommand, AbortTransactionCommand.buildAbortSpec) and what it prints, from
typed answers."""

from __future__ import annotations

import pytest

from kcoord.client_cli.kafka_client import ToolError
from kcoord.client_cli.output import print_table
from kcoord.client_cli.transactions import (
    HANGING_HEADERS,
    OpenTransaction,
    _json_key,
    abort_spec_at,
    candidate_open_transactions,
    description_row,
    hanging_rows,
    hanging_transactions,
    listing_rows,
    producer_rows,
)
from kcoord.client_cli.transactions_args import parse_args
from kcoord.client_cli.txn_admin import (
    AbortSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)

NOW = 1_700_000_000_000
MIN = 60_000
B = "--bootstrap-server h:1"
ABORT_T0 = f"{B} --abort --topic t --partition 0"


def producer(
    producer_id: int, last_timestamp: int, start: int | None, coordinator_epoch: int | None = None
) -> ProducerState:
    return ProducerState(producer_id, 3, 9, last_timestamp, coordinator_epoch, start)


def description(
    partitions: tuple[tuple[str, int], ...], start: int | None = NOW - MIN
) -> TransactionDescription:
    return TransactionDescription("tx", 1, "Ongoing", 7, 3, 60_000, start, partitions)


# -- find-hanging ----------------------------------------------------------------------------------------


def test_candidates_are_open_transactions_idle_strictly_longer_than_the_max_timeout() -> None:
    states = {
        ("t", 1): [producer(1, NOW - 15 * MIN - 1, 40), producer(2, NOW - 15 * MIN, 41)],
        ("t", 0): [producer(3, NOW - 60 * MIN, None), producer(4, NOW - 60 * MIN, 0)],
    }
    found = candidate_open_transactions(states, NOW, 15 * MIN)
    assert [(c.partition, c.producer.producer_id) for c in found] == [(("t", 0), 4), (("t", 1), 1)]


def test_hanging_unless_the_coordinator_counts_the_partition_in_the_transaction() -> None:
    unknown_pid = OpenTransaction(("t", 0), producer(1, 0, 5))
    unknown_id = OpenTransaction(("t", 0), producer(2, 0, 5))
    in_txn = OpenTransaction(("t", 0), producer(7, 0, 5))
    other_partition = OpenTransaction(("t", 1), producer(7, 0, 6))
    hanging = hanging_transactions(
        [unknown_pid, unknown_id, in_txn, other_partition],
        {2: "gone", 7: "tx"},
        {"gone": None, "tx": description((("t", 0),))},
    )
    assert hanging == [unknown_pid, unknown_id, other_partition]


def test_hanging_rows_show_minutes_since_the_last_write_and_minus_one_for_no_coordinator_epoch() -> None:
    rows = hanging_rows([OpenTransaction(("t", 2), producer(5, NOW - 20 * MIN - 1, 17))], NOW)
    assert rows == [["t", 2, 5, 3, -1, 17, NOW - 20 * MIN - 1, 20]]
    assert [_json_key(h) for h in HANGING_HEADERS] == [
        "topic",
        "partition",
        "producer_id",
        "producer_epoch",
        "coordinator_epoch",
        "start_offset",
        "last_timestamp",
        "duration_min",
    ]


# -- abort -------------------------------------------------------------------------------------------------


def test_abort_spec_is_the_producer_whose_transaction_starts_at_the_offset() -> None:
    states = [producer(1, 0, 10, coordinator_epoch=4), producer(2, 0, 12)]
    assert abort_spec_at(states, ("t", 0), 10) == AbortSpec(("t", 0), 1, 3, 4)
    assert abort_spec_at(states, ("t", 0), 12) == AbortSpec(("t", 0), 2, 3, 0)  # no marker yet: 0
    with pytest.raises(
        ToolError, match="Could not find any open transactions starting at offset 11 on partition t-0"
    ):
        abort_spec_at(states, ("t", 0), 11)
    assert str(AbortSpec(("t", 0), 2, 3, 0)) == (
        "AbortTransactionSpec(topicPartition=t-0, producerId=2, producerEpoch=3, coordinatorEpoch=0)"
    )


# -- rows and tables ----------------------------------------------------------------------------------------


def test_describe_row_prints_none_without_an_open_transaction() -> None:
    ongoing = description((("a", 1), ("b", 0)), start=NOW - 2500)
    assert description_row(ongoing, NOW) == [1, "tx", 7, 3, "Ongoing", 60_000, NOW - 2500, 2500, "a-1,b-0"]
    empty = description((), start=None)
    assert description_row(empty, NOW)[6:] == ["None", "None", ""]


def test_producer_rows_and_listing_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert producer_rows([producer(5, 99, None, 2), producer(6, 98, 40)]) == [
        [5, 3, 2, 9, 99, "None"],
        [6, 3, -1, 9, 98, 40],
    ]
    listings = [
        TransactionListing("long-transactional-id", 1, 4000, "Ongoing"),
        TransactionListing("b", 1, 7, "Empty"),
    ]
    print_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], listing_rows(listings))
    assert capsys.readouterr().out.splitlines() == [
        "TransactionalId       Coordinator ProducerId TransactionState",
        "long-transactional-id 1           4000       Ongoing",
        "b                     1           7          Empty",
    ]


# -- arguments -----------------------------------------------------------------------------------------------


def test_defaults_and_the_old_broker_abort_form() -> None:
    args = parse_args("kcoord transactions", ["--bootstrap-server", "h:1", "--find-hanging", "--topic", "t"])
    assert (args.max_transaction_timeout, args.partition, args.output, args.timeout) == (
        15,
        None,
        "table",
        5000,
    )
    abort = parse_args(
        "kcoord transactions",
        f"{ABORT_T0} --producer-id 5 --producer-epoch 2 --coordinator-epoch -1".split(),
    )
    assert (abort.producer_id, abort.producer_epoch, abort.coordinator_epoch) == (5, 2, -1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--list", "the following arguments are required: --bootstrap-server"),
        (B, "one of the arguments --list --describe"),
        (f"{B} --list --abort", "not allowed with argument"),
        (f"{B} --describe", "Option --describe requires --transactional-id"),
        (f"{B} --describe-producers --topic t", "requires --topic and --partition"),
        (f"{B} --find-hanging --partition 1", "requires --topic to be provided"),
        (ABORT_T0, "must be identified either"),
        (f"{ABORT_T0} --producer-id 1", "Missing required argument --producer-epoch"),
        (f"{ABORT_T0} --producer-id 1 --producer-epoch 0", "Missing required argument --coordinator-epoch"),
        (f"{ABORT_T0} --start-offset 3 --producer-id 1", "Option --start-offset excludes --producer-id"),
        (f"{B} --abort --producer-epoch 40000", "40000 is not a 16-bit number"),
        (f"{B} --list --topic t", "Option --topic is not valid with --list"),
        (f"{B} --describe-producers --duration-filter 1", "not valid with"),
        (f"{B} --list --timeout 0", "--timeout must be positive"),
    ],
)
def test_usage_errors_are_one_line_with_status_2(
    args: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args("kcoord transactions", args.split())
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("kcoord transactions: ")
    assert message in captured.err
