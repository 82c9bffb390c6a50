"""The command line of `kcoord transactions` (TransactionsCommand's subparsers, as options) and the
checks Kafka's command makes on it; every problem is a one-line usage error with exit status 2."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kcoord.client_cli.command import add_connection_arguments
from kcoord.client_cli.output import ToolParser

__all__ = ["parse_args"]

# Options that only mean something to some actions (the subparser Kafka declares them in).
_ONLY_WITH = {
    "transactional_id": ("describe",),
    "duration_filter": ("list",),
    "state": ("list",),
    "producer_id_filter": ("list",),
    "topic": ("describe_producers", "find_hanging", "abort"),
    "partition": ("describe_producers", "find_hanging", "abort"),
    "max_transaction_timeout": ("find_hanging",),
    "start_offset": ("abort",),
    "producer_id": ("abort",),
    "producer_epoch": ("abort",),
    "coordinator_epoch": ("abort",),
}
_DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15  # FindHangingTransactionsCommand's default


def _short(value: str) -> int:
    """A Java short (the producer epoch's type)."""
    number = int(value)
    if not -(2**15) <= number < 2**15:
        raise argparse.ArgumentTypeError(f"{value} is not a 16-bit number")
    return number


def _parser(prog: str) -> ToolParser:
    p = ToolParser(
        prog=prog,
        description="Analyze the transactional state of producers (like kafka-transactions.sh): "
        "list and describe transactions, find and abort hanging ones, over the Kafka protocol.",
    )
    add_connection_arguments(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list transactions (every broker)")
    action.add_argument("--describe", action="store_true", help="describe --transactional-id's transaction")
    action.add_argument(
        "--describe-producers", action="store_true", help="the active producers of --topic --partition"
    )
    action.add_argument("--find-hanging", action="store_true", help="find hanging transactions")
    action.add_argument(
        "--abort", action="store_true", help="abort a hanging transaction of --topic --partition"
    )
    p.add_argument("--transactional-id", metavar="ID", help="--describe: the transactional id")
    p.add_argument(
        "--duration-filter",
        type=int,
        metavar="MS",
        help="--list: only transactions running longer than MS (ListTransactions v1)",
    )
    p.add_argument("--state", metavar="STATES", help="--list: only these states (Ongoing,PrepareCommit,...)")
    p.add_argument(
        "--producer-id-filter",
        type=int,
        action="append",
        default=[],
        metavar="ID",
        help="--list: only this producer id (repeatable)",
    )
    p.add_argument("--topic", metavar="TOPIC", help="the topic (--find-hanging: limits the search)")
    p.add_argument("--partition", type=int, metavar="N", help="the partition (--find-hanging: needs --topic)")
    p.add_argument(
        "--max-transaction-timeout",
        type=int,
        metavar="MIN",
        help=f"--find-hanging: the longest transaction timeout in minutes "
        f"(default {_DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN})",
    )
    p.add_argument(
        "--start-offset", type=int, metavar="OFFSET", help="--abort: the transaction's first offset"
    )
    p.add_argument("--producer-id", type=int, metavar="ID", help="--abort without --start-offset")
    p.add_argument("--producer-epoch", type=_short, metavar="EPOCH", help="--abort without --start-offset")
    p.add_argument("--coordinator-epoch", type=int, metavar="EPOCH", help="--abort without --start-offset")
    p.add_argument("--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--timeout",
        type=int,
        default=5000,
        metavar="MS",
        help="per request and for coordinator retries (default 5000)",
    )
    return p


def _validate(p: ToolParser, args: argparse.Namespace) -> None:
    """The checks of TransactionsCommand's subcommands (required options, AbortTransactionCommand's and
    FindHangingTransactionsCommand's messages), and options given to an action that ignores them."""
    action = next(
        name
        for name in ("list", "describe", "describe_producers", "find_hanging", "abort")
        if getattr(args, name)
    )
    for option, actions in _ONLY_WITH.items():
        if action not in actions and getattr(args, option) not in (None, []):
            flag = "--" + option.replace("_", "-")
            p.error(f"Option {flag} is not valid with --{action.replace('_', '-')}")
    if action == "describe" and args.transactional_id is None:
        p.error("Option --describe requires --transactional-id")
    if action in ("describe_producers", "abort") and (args.topic is None or args.partition is None):
        p.error(f"Option --{action.replace('_', '-')} requires --topic and --partition")
    if action == "find_hanging" and args.partition is not None and args.topic is None:
        p.error("The --partition argument requires --topic to be provided")
    if action == "abort":
        _validate_abort(p, args)
    if args.max_transaction_timeout is None:
        args.max_transaction_timeout = _DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN
    if args.timeout <= 0:
        p.error("--timeout must be positive")


def _validate_abort(p: ToolParser, args: argparse.Namespace) -> None:
    if args.start_offset is None and args.producer_id is None:
        p.error(
            "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 "
            "or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"
        )
    if args.start_offset is not None:
        if (
            args.producer_id is not None
            or args.producer_epoch is not None
            or args.coordinator_epoch is not None
        ):
            p.error("Option --start-offset excludes --producer-id, --producer-epoch and --coordinator-epoch")
        return
    if args.producer_epoch is None:
        p.error("Missing required argument --producer-epoch")
    if args.coordinator_epoch is None:
        p.error("Missing required argument --coordinator-epoch")


def parse_args(prog: str, argv: Sequence[str] | None) -> argparse.Namespace:
    p = _parser(prog)
    args = p.parse_args(argv)
    _validate(p, args)
    return args
