"""`kcoord pipeline <job> (--data-dir DIR | --cluster DSN) --out DIR [--master URL]`.

`--cluster` reads a cluster's PostgreSQL instead of a data directory (kcoord/pipeline/inputs.py).
Failures the user can fix (no Java, wrong directory, corrupt sealed segment, a database that cannot
be reached or is not a kcoord cluster, unreachable master)
end as one line on stderr and exit status 2, never a Java stack trace: the JVM's stderr (Spark's log,
failed tasks' traces) goes to a temporary file, named in that line when Spark failed and removed
after a successful run; Spark's progress bar still reaches the terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kcoord.pipeline.inputs import Input
from kcoord.pipeline.reader import PipelineError

Job = Callable[..., str]
# The jobs that look back in time take `since_ms` (--since); compact writes the live state only.
HISTORY_JOBS = ("offsets", "rebalances", "lag")


def _jobs() -> dict[str, Job]:
    from kcoord.pipeline import compact, lag, offsets, rebalances

    return {"offsets": offsets.run, "rebalances": rebalances.run, "lag": lag.run, "compact": compact.run}


JOB_NAMES = ("offsets", "rebalances", "lag", "compact")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kcoord pipeline", description="Spark jobs over a kcoord data directory or cluster"
    )
    p.add_argument("job", choices=JOB_NAMES)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data-dir", help="a kcoord data directory (read, never written)")
    source.add_argument(
        "--cluster",
        metavar="DSN",
        help="a kcoord cluster's PostgreSQL, postgresql://... (read only; it keeps the newest state, "
        "no history)",
    )
    p.add_argument("--out", required=True, help="output directory (Parquet, charts, compacted log)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument(
        "--since",
        type=parse_since,
        default=None,
        metavar="WHEN",
        help="only history from WHEN: a duration back from now (7d, 12h, 30m) or a UTC time "
        "(2026-11-25T10:00); default everything kept. Charts note when the history is shorter",
    )
    return p


def parse_since(text: str, now_ms: int | None = None) -> int:
    """WHEN of --since as ms since the epoch."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
    if text[-1:] in units and text[:-1].isdigit():
        return now - int(text[:-1]) * units[text[-1]]
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 7d, 12h, 30m, 90s or a UTC time, not {text!r}") from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    fd, spark_log = tempfile.mkstemp(prefix=f"kcoord-pipeline-{args.job}-", suffix=".spark.log")
    os.close(fd)
    source = Input(data_dir=args.data_dir, cluster=args.cluster)
    try:
        source.check()  # a wrong directory or an unreachable cluster fails before Spark starts
        from kcoord.pipeline import session

        spark = session.start(args.master, f"kcoord-{args.job}", log_path=spark_log)
        try:
            job = _jobs()[args.job]
            if args.job in HISTORY_JOBS:
                print(job(spark, source, args.out, since_ms=args.since))
            else:
                print(job(spark, source, args.out))
        finally:
            spark.stop()
    except PipelineError as exc:
        print(f"kcoord pipeline: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"kcoord pipeline: {one_line(exc)} (Spark's log: {spark_log})", file=sys.stderr)
        return 2
    os.unlink(spark_log)
    return 0


def one_line(exc: BaseException) -> str:
    """The PipelineError message inside a Spark failure if there is one, else the first line."""
    text = str(exc)
    marker = "PipelineError: "
    if marker in text:
        return text[text.index(marker) + len(marker) :].splitlines()[0]
    return f"{type(exc).__name__}: {text.strip().splitlines()[0] if text.strip() else ''}"
