"""`kcoord share-groups`' options and their checks (Kafka 4.3.1's ShareGroupCommandOptions.checkArgs, in
its words where it has them), and the ISO-8601 durations of kcoord's --by-duration."""

from __future__ import annotations

import argparse
import re

from kcoord.client_cli.command import add_connection_arguments
from kcoord.client_cli.output import ToolParser

__all__ = ["PROG", "STATES", "parse_duration", "parser", "validate"]

PROG = "kcoord share-groups"
STATES = ("Empty", "Stable", "Dead")  # ShareGroupCommandOptions: the valid --state values


def parse_duration(value: str) -> int:
    """An ISO-8601 duration PnDTnHnMn.nS (Java's Duration.parse, as --by-duration of
    kafka-consumer-groups.sh) in milliseconds."""
    match = re.fullmatch(
        r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", value.strip().upper()
    )
    if match is None or value.strip().upper() in ("P", "PT"):
        raise argparse.ArgumentTypeError(f"expected an ISO-8601 duration like PT1H or P1DT2H, got {value!r}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def parser() -> argparse.ArgumentParser:
    p = ToolParser(prog=PROG, description="List, describe, reset and delete share groups "
                   "(like kafka-share-groups.sh), over the Kafka protocol.")  # fmt: skip
    add_connection_arguments(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list all share groups")
    action.add_argument("--describe", action="store_true", help="describe share groups (offsets by default)")
    action.add_argument("--reset-offsets", action="store_true", help="reset offsets of an empty share group")
    action.add_argument("--delete", action="store_true", help="delete share groups")
    action.add_argument(
        "--delete-offsets", action="store_true", help="delete a share group's offsets of --topic"
    )
    p.add_argument(
        "--group", action="append", default=[], metavar="GROUP", help="the share group (repeatable)"
    )
    p.add_argument("--all-groups", action="store_true", help="apply to all share groups")
    p.add_argument("--members", action="store_true", help="--describe: the members")
    p.add_argument("--offsets", action="store_true", help="--describe: offsets and lag (the default)")
    p.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="--describe: the group state; --list: a STATE column, optionally only STATES",
    )
    p.add_argument("--verbose", action="store_true", help="--describe: epochs")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P1,P2]",
                   help="--reset-offsets/--delete-offsets: a topic, or some of its partitions")  # fmt: skip
    p.add_argument("--all-topics", action="store_true", help="--reset-offsets: every partition of the group")
    scenario = p.add_mutually_exclusive_group()
    scenario.add_argument("--to-earliest", action="store_true")
    scenario.add_argument("--to-latest", action="store_true")
    scenario.add_argument("--to-datetime", metavar="YYYY-MM-DDThh:mm:ss.sss")
    scenario.add_argument("--to-offset", type=int, metavar="N", help="(kcoord) every partition to N")
    scenario.add_argument("--by-duration", type=parse_duration, metavar="PnDTnHnMnS",
                          help="(kcoord) the first offset at or after now less the duration")  # fmt: skip
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="--reset-offsets: show the new offsets only")
    mode.add_argument("--execute", action="store_true", help="--reset-offsets: set the new offsets")
    p.add_argument("--timeout", type=int, default=30_000, metavar="MS", help="default 30000, as Kafka's")
    return p


def validate(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """ShareGroupCommandOptions.checkArgs, in its words where it has them."""
    if (args.describe or args.delete) and not args.group and not args.all_groups:
        p.error("Option [describe|delete] takes one of these options: [all-groups], [group]")
    if (args.reset_offsets or args.delete_offsets) and len(args.group) != 1:
        p.error("Option [reset-offsets|delete-offsets] takes exactly one [group]")
    if args.delete_offsets and not args.topic:
        p.error("Option [delete-offsets] takes the following options: [topic], [group]")
    if (args.members or args.offsets or args.verbose) and not args.describe:
        p.error("Option [members|offsets|verbose] can be used with [describe] only")
    if args.state is not None and args.state and not args.list:
        p.error("Option [state] with a value can be used with [list] only")
    unknown = {s.strip().lower() for s in (args.state or "").split(",") if s.strip()} - {
        s.lower() for s in STATES
    }
    if unknown:
        p.error(f"Invalid state list '{args.state}'. Valid states are: {', '.join(STATES)}")
    if args.reset_offsets:
        _validate_reset(p, args)


def _validate_reset(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    scenarios = (args.to_datetime, args.to_offset, args.by_duration)
    if not (args.to_earliest or args.to_latest or any(s is not None for s in scenarios)):
        p.error(
            "Option [reset-offsets] takes one of these options: [to-datetime], [to-earliest], [to-latest]"
        )
    if not (args.dry_run or args.execute):
        p.error("Option [reset-offsets] takes the option: [execute] or [dry-run]")
    if bool(args.topic) == args.all_topics:
        p.error("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
