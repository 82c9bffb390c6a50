"""The reference pages of the documentation site, generated from the code so they cannot drift from it:

* `reference/serve-flags.md`: every `kcoord serve` flag (kcoord/wiring/config.py's argument parser) with
  its environment variable, the Kafka setting it mirrors and its default (the `Config` dataclass);
* `reference/metrics.md`: every Prometheus metric family with its type and labels, as the collectors
  the HTTP endpoint registers yield them (kcoord/wiring/metrics.py, txn_metrics.py and, in cluster
  mode, kcoord/cluster/cluster_metrics.py);
* `reference/commands.md`: the `--help` of `kcoord` and of every subcommand.

    python docs/gen/reference.py --out DIR    # write the three pages under DIR/reference/

The site's hook (docs/gen/hooks.py) calls `pages()` at every `mkdocs build`, so nothing generated is
committed; tests/docs compares what it lists with the parser and the registry.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[2]
HELP_COLUMNS = "100"  # argparse wraps --help to $COLUMNS: fixed, so the page is the same everywhere

# The Kafka setting each flag mirrors where it is not the flag's name with dots for dashes
# (`--group-initial-rebalance-delay-ms` is `group.initial.rebalance.delay.ms`); None: kcoord's own.
KAFKA_NAMES: dict[str, str | None] = {
    "--listen": "listeners (one PLAINTEXT listener)",
    "--advertised-listener": "advertised.listeners (one PLAINTEXT listener)",
    "--data-dir": "log.dirs",
    "--node-id": "node.id",
    "--auto-create-topics": "auto.create.topics.enable",
    "--authorizer": "authorizer.class.name",
    "--transaction-version": "the transaction.version feature level",
    "--sasl-scram-bootstrap-users": "kafka-storage format --add-scram",
    "--fsync": None,  # Kafka leaves flushing to the OS (log.flush.interval.*) and relies on replicas
    "--cluster": None,
    "--lease-ttl-ms": None,
    "--ssl-handshake-timeout-ms": None,
    "--sasl-plain-users": None,
    "--sasl-plain-users-file": None,
    "--history-retention-ms": None,
    "--history-retention-bytes": None,
    "--log-level": None,
    "--log-format": None,
    "--http-listen": None,
    "--http-ssl-keystore-location": None,
    "--http-ssl-key-password": None,
    "--http-bearer-token": None,
    "--metrics-max-groups": None,
    "--enable-test-controls": None,
}

# Subcommands that have subcommands of their own with their own --help.
NESTED_COMMANDS: dict[str, tuple[str, ...]] = {"cluster": ("init", "status"), "dev": ("certs",)}


@dataclass(frozen=True, slots=True)
class Flag:
    flag: str
    env: str
    kafka: str | None
    default: str
    metavar: str | None
    help: str


@dataclass(frozen=True, slots=True)
class Metric:
    name: str  # as scraped: counters carry `_total`
    type: str
    labels: tuple[str, ...]
    help: str
    cluster_only: bool


def serve_parser() -> argparse.ArgumentParser:
    from kcoord.wiring.config import add_serve_arguments

    parser = argparse.ArgumentParser(prog="kcoord serve")
    add_serve_arguments(parser)
    return parser


def serve_flags() -> list[Flag]:
    """Every flag `kcoord serve` takes, in the parser's order."""
    from kcoord.wiring.config import ENV_PREFIX, Config

    defaults = {f.name: getattr(Config(), f.name) for f in dataclasses.fields(Config)}
    out = []
    for action in serve_parser()._actions:
        flag = next((o for o in action.option_strings if o.startswith("--")), None)
        if flag is None or flag == "--help":
            continue
        name = flag.removeprefix("--").replace("-", "_")
        help_text = (action.help or "").rsplit(" [env ", 1)[0]
        kafka = KAFKA_NAMES.get(flag, flag.removeprefix("--").replace("-", "."))
        metavar = action.metavar if isinstance(action.metavar, str) else None
        out.append(Flag(flag, ENV_PREFIX + name.upper(), kafka, _show(defaults[name]), metavar, help_text))
    return out


def _show(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value) if value else "unset"
    return str(value)


class _NoTransactions:
    """An empty transaction coordinator's two read calls: the collector yields every family anyway."""

    def transactions(self) -> list[Any]:
        return []

    def stats(self) -> Any:
        from kcoord.coordinator.transactions.coordinator import TransactionStats

        return TransactionStats(0, None, 0, 0)


def collectors() -> Iterator[tuple[Any, bool]]:
    """The collectors /metrics registers (kcoord/wiring/http.py), over empty state; (collector, cluster
    mode only). prometheus_client's own process_* collector is left out."""
    from kcoord.cluster.cluster_metrics import ClusterCollector, ClusterSources
    from kcoord.wiring.metrics import KcoordCollector, MetricsSource
    from kcoord.wiring.share_metrics import ShareCollector, ShareSource
    from kcoord.wiring.txn_metrics import TransactionCollector

    yield KcoordCollector(MetricsSource(), 100), False
    yield TransactionCollector(cast(Any, _NoTransactions()), list, lambda: 0, 100), False
    yield ShareCollector(ShareSource(), lambda: 100), False
    yield ClusterCollector(ClusterSources(dict, lambda: 0, dict, dict, lambda: True)), True


def metrics() -> list[Metric]:
    out = []
    for collector, cluster_only in collectors():
        for family in collector.collect():
            name = family.name + ("_total" if family.type == "counter" else "")
            # The label names a family was declared with (prometheus_client keeps them even when the
            # family has no sample yet, as over empty state).
            labels = tuple(getattr(family, "_labelnames", ()))
            out.append(Metric(name, family.type, labels, family.documentation, cluster_only))
    return out


def subcommands() -> list[str]:
    """`kcoord`'s subcommands, from its parser."""
    from kcoord.wiring import cli

    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def help_invocations() -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for command in subcommands():
        out.append((command,))
        out.extend((command, nested) for nested in NESTED_COMMANDS.get(command, ()))
    return out


def _help(args: tuple[str, ...]) -> str:
    env = {**os.environ, "COLUMNS": HELP_COLUMNS, "PYTHONPATH": _pythonpath()}
    done = subprocess.run(
        [sys.executable, "-m", "kcoord", *args, "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return (done.stdout + done.stderr).rstrip()


def _pythonpath() -> str:
    rest = os.environ.get("PYTHONPATH")
    return str(REPO) if not rest else f"{REPO}{os.pathsep}{rest}"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def flags_page() -> str:
    flags = serve_flags()
    lines = [
        "# `kcoord serve` flags",
        "",
        "Generated from the argument parser (`kcoord/wiring/config.py`) and the `Config` defaults at every",
        "build. A flag beats its environment variable, which beats the default. Kafka's name is the broker",
        "setting the flag mirrors, with Kafka's default; *kcoord* marks a setting Kafka does not have.",
        f"{len(flags)} flags.",
        "",
    ]
    rows = (
        (
            f"`{f.flag}" + (f" {f.metavar}`" if f.metavar else "`"),
            f"`{f.env}`",
            f"`{f.kafka}`" if f.kafka and " " not in f.kafka else (f.kafka or "*kcoord*"),
            f"`{f.default}`",
            f.help,
        )
        for f in flags
    )
    lines += _table(("flag", "environment", "Kafka", "default", "what it does"), rows)
    return "\n".join(lines) + "\n"


def metrics_page() -> str:
    found = metrics()
    lines = [
        "# Metrics reference",
        "",
        "Every family `GET /metrics` serves (with `--http-listen`), generated from the collectors the HTTP",
        "endpoint registers at every build; prometheus_client's `process_*` series come beside them.",
        "[Metrics](../metrics.md) says what each one means and how the per-group series are capped.",
        f"{len(found)} families.",
        "",
    ]
    rows = (
        (
            f"`{m.name}`",
            m.type,
            ", ".join(f"`{label}`" for label in m.labels) or "",
            m.help + (" (cluster mode only)" if m.cluster_only else ""),
        )
        for m in found
    )
    lines += _table(("metric", "type", "labels", "help"), rows)
    return "\n".join(lines) + "\n"


def commands_page() -> str:
    invocations = help_invocations()
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(_help, invocations))
    lines = [
        "# `kcoord` commands",
        "",
        "The `--help` of `kcoord` and of each subcommand, captured at every build.",
        "",
    ]
    for args, text in zip(invocations, texts, strict=True):
        title = " ".join(("kcoord", *args))
        lines += [f"## `{title}`", "", "```text", f"$ {title} --help", text, "```", ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Page path under the docs directory -> its Markdown."""
    return {
        "reference/serve-flags.md": flags_page(),
        "reference/metrics.md": metrics_page(),
        "reference/commands.md": commands_page(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="write DIR/reference/*.md")
    args = parser.parse_args(argv)
    for path, text in pages().items():
        target = args.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(target)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
