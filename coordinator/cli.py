"""The `kcoord` command line: `kcoord serve [flags]`, `kcoord storage dump|verify|compact|repair`
and `kcoord pipeline offsets|rebalances|lag|compact`.

`python -m coordinator` is the same program; without a subcommand it serves.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from coordinator.config import add_serve_arguments, config_from_args

__all__ = ["main"]

STORAGE_COMMANDS = ("dump", "verify", "compact", "repair")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kcoord", description="A standalone Kafka consumer-group coordinator."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the coordinator (flags or KCOORD_* environment variables)")
    add_serve_arguments(serve)
    sub.add_parser(
        "storage",
        add_help=False,
        help=f"inspect or repair the data directory: {'|'.join(STORAGE_COMMANDS)} --data-dir DIR",
    )
    sub.add_parser(
        "pipeline",
        add_help=False,
        help="Spark jobs over a data directory (needs kcoord[pipeline]): "
        "offsets|rebalances|lag|compact --data-dir DIR --out DIR [--master URL]",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "serve")  # `python -m coordinator --listen ...` serves
    if args_list[0] == "storage":
        return _storage(args_list[1:])
    if args_list[0] == "pipeline":
        return _pipeline(args_list[1:])
    args = _parser().parse_args(args_list)
    config = config_from_args(args)

    from coordinator.app import run  # imported late: `kcoord --help` stays fast
    from coordinator.logs import setup_logging

    setup_logging(config.log_level, config.log_format)
    return run(config)


def _storage(argv: list[str]) -> int:
    from coordinator.persistence import render
    from storage.cli import main as storage_main

    return int(storage_main(argv, render=render) or 0)


def _pipeline(argv: list[str]) -> int:
    """Imported only here, so `kcoord serve` never loads pipeline/ or pyspark."""
    try:
        from pipeline.cli import main as pipeline_main
    except ImportError as exc:
        print(f"kcoord pipeline: {exc} (install the extra: pip install 'kcoord[pipeline]')", file=sys.stderr)
        return 2
    return pipeline_main(argv)
