"""The pipeline charts the documentation shows (docs/pipeline.md), drawn by the real pipeline from a data
directory a real `kcoord serve` wrote under a real kafka-python workload. Run by hand (it needs the
`pipeline` extra and Java 17+, and takes about a minute); the PNGs are committed under docs/img/pipeline/:

    python docs/gen/charts.py            # rewrite docs/img/pipeline/{rebalances,membership,lag}.png

The workload: a topic of 4 partitions; group `billing` with one member, then two (a rebalance), then one
again when the second leaves (another); group `audit` commits only part of what it read, so it lags; more
records arrive after the last commits, so `billing` lags a little too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "img" / "pipeline"
TOPIC, PARTITIONS = "orders", 4
CHARTS = ("rebalances.png", "membership.png", "lag.png")
LISTENING = re.compile(r"listening on (\S+):(\d+)")


def start_server(data: Path) -> tuple[subprocess.Popen[str], str]:
    argv = [
        sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data),
        "--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # bounded by the server: it logs this line or exits
        if (match := LISTENING.search(line)) is not None:
            return proc, f"{match.group(1)}:{match.group(2)}"
    raise SystemExit(f"kcoord did not start (exit {proc.wait()})")


def consumer(bootstrap: str, group: str) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )


def poll_until_assigned(members: list[Any], partitions: int, rounds: int = 300) -> None:
    """Poll every member until their assignments cover the topic (a bounded number of rounds)."""
    for _ in range(rounds):
        for member in members:
            member.poll(timeout_ms=50)
        if sum(len(m.assignment()) for m in members) == partitions and all(m.assignment() for m in members):
            return
    raise SystemExit("the group did not settle")


def produce(bootstrap: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for n in range(count):
        producer.send(TOPIC, f"order {n}".encode(), partition=n % PARTITIONS)
    producer.flush(timeout=30)
    producer.close()


def workload(bootstrap: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    produce(bootstrap, 400)
    first = consumer(bootstrap, "billing")
    poll_until_assigned([first], PARTITIONS)
    first.commit()
    second = consumer(bootstrap, "billing")
    poll_until_assigned([first, second], PARTITIONS)
    produce(bootstrap, 200)
    for member in (first, second):
        member.poll(timeout_ms=500)
        member.commit()
    second.close()  # LeaveGroup: the group rebalances back to one member
    poll_until_assigned([first], PARTITIONS)
    first.poll(timeout_ms=500)
    first.commit()
    audit = consumer(bootstrap, "audit")
    poll_until_assigned([audit], PARTITIONS)
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    # audit reads slower than orders arrive: three commits, each behind the log end, records between
    # them (the pauses spread the commits over time: the chart's x axis and the lag in seconds).
    for n, base in enumerate((20, 60, 100)):
        offsets = {p: base + 10 * p * n for p in range(PARTITIONS)}
        audit.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
        time.sleep(0.7)
        produce(bootstrap, 80)
    audit.close()
    first.poll(timeout_ms=500)
    first.commit()
    produce(bootstrap, 120)
    first.close()


def pipeline(job: str, data: Path, out: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kcoord", "pipeline", job, "--data-dir", str(data), "--out", str(out)],
        cwd=REPO,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"kcoord pipeline {job} exited {done.returncode}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kcoord-charts-") as tmp:
        data, out = Path(tmp) / "data", Path(tmp) / "out"
        proc, bootstrap = start_server(data)
        try:
            workload(bootstrap)
        finally:
            proc.terminate()
            proc.wait(30)
        for job in ("rebalances", "lag"):
            pipeline(job, data, out)
        OUT.mkdir(parents=True, exist_ok=True)
        for chart in CHARTS:
            shutil.copyfile(out / chart, OUT / chart)
            print(OUT / chart)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
