"""What kcoord's pytest fixtures cost (issue 26): run by hand, never by `make test`.

    .venv/bin/python -m bench.fixtures [--runs 3] [--tests 200] [--topics 100] [--groups 100] [--json F]
    .venv/bin/python -m bench.fixtures --smoke      # seconds: 1 run, 5 tests, 5 topics and groups

1. start to first produce: from the fixture's request (the lazy import of the server included, in a
   fresh interpreter, kafka-python already imported) to the first acknowledged produce; and the same
   for a second server in a warm process. A JVM broker's published start-up is ~1.2 s (KIP-974), a
   Kafka container 10-60 s.
2. reset with N topics (one record each) and M groups (one committed offset each): the server's own
   `reset_ms` and the wall time of the call from the test thread.
3. a generated suite of T tests (each produces one record with kafka-python and reads it back through
   `records()`), run by pytest in a subprocess: against one session server reset before each test
   (`kcoord`), and with a new server per test (`kcoord_factory`), the way a per-test broker isolates.
Every figure is the median of `--runs` runs; the report starts with the commit.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.coordinator import git_commit

REPO = Path(__file__).resolve().parents[1]

FIRST_PRODUCE = textwrap.dedent(
    """
    import json, sys, tempfile, time
    from pathlib import Path
    from kafka import KafkaProducer
    started = time.perf_counter()
    from kcoord.testing.server import KcoordServer  # what the fixture imports when first requested
    server = KcoordServer({}, Path(tempfile.mkdtemp()) / "data").start()
    listening = time.perf_counter()
    producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers)
    producer.send("first", b"x").get(timeout=30)
    produced = time.perf_counter()
    producer.close()
    warm_start = time.perf_counter()
    second = KcoordServer({}, Path(tempfile.mkdtemp()) / "data").start()
    producer = KafkaProducer(bootstrap_servers=second.bootstrap_servers)
    producer.send("first", b"x").get(timeout=30)
    warm = time.perf_counter() - warm_start
    producer.close()
    second.close()
    server.close()
    print(json.dumps({"cold_listening_s": listening - started, "cold_first_produce_s": produced - started,
                      "warm_first_produce_s": warm}))
    """
)

SUITE = textwrap.dedent(
    """
    import pytest
    from kafka import KafkaProducer

    @pytest.mark.parametrize("i", range({tests}))
    def test_produce_and_read(i, {fixture}):
        server = {server}
        producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers)
        producer.send("t", str(i).encode()).get(timeout=30)
        producer.close()
        assert [r.value for r in server.records("t")] == [str(i).encode()]
    """
)


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }


def _plugin_args() -> list[str]:
    """-p loads the plugin where the installed kcoord predates its pytest11 entry point."""
    installed = any(
        ep.value == "kcoord.testing.plugin" for ep in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if installed else ["-p", "kcoord.testing.plugin"]


def first_produce(runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_PRODUCE],
            cwd=REPO,
            env=_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def _fill(server: Any, topics: int, groups: int) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers)
    for i in range(topics):
        server.create_topic(f"topic-{i}", 1)
        producer.send(f"topic-{i}", b"x", partition=0)
    producer.flush()
    producer.close()
    for i in range(groups):
        consumer = KafkaConsumer(bootstrap_servers=server.bootstrap_servers, group_id=f"group-{i}",
                                 enable_auto_commit=False)  # fmt: skip
        consumer.commit({TopicPartition(f"topic-{i % topics}", 0): OffsetAndMetadata(1, "", -1)})
        consumer.close()


def reset_time(runs: int, topics: int, groups: int) -> dict[str, float]:
    from kcoord.testing.server import KcoordServer

    server_ms, wall_ms = [], []
    with tempfile.TemporaryDirectory() as tmp:
        server = KcoordServer({}, Path(tmp) / "data").start()
        try:
            for _ in range(runs):
                _fill(server, topics, groups)
                started = time.perf_counter()
                server_ms.append(server.reset())
                wall_ms.append((time.perf_counter() - started) * 1000)
        finally:
            server.close()
    return {"reset_ms": statistics.median(server_ms), "reset_call_ms": statistics.median(wall_ms)}


def suite_time(runs: int, tests: int) -> dict[str, float]:
    variants = {
        "one_server_reset_per_test_s": ("kcoord", "kcoord"),
        "server_per_test_s": ("kcoord_factory", "kcoord_factory()"),
    }
    figures = {}
    for name, (fixture, server) in variants.items():
        samples = []
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "test_suite.py").write_text(SUITE.format(tests=tests, fixture=fixture, server=server))
            argv = [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *_plugin_args(),
                "test_suite.py",
            ]
            for _ in range(runs):
                started = time.perf_counter()
                subprocess.run(argv, cwd=tmp, env=_env(), check=True, capture_output=True)
                samples.append(time.perf_counter() - started)
        figures[name] = statistics.median(samples)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--smoke", action="store_true", help="1 run, 5 tests, 5 topics and groups")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.tests, args.topics, args.groups = 1, 5, 5, 5
    results: dict[str, Any] = {"commit": git_commit(), "runs": args.runs}
    results["start"] = first_produce(args.runs)
    results["reset"] = reset_time(args.runs, args.topics, args.groups)
    results["suite"] = suite_time(args.runs, args.tests)
    start, reset, suite = results["start"], results["reset"], results["suite"]
    print(f"commit {results['commit']}, median of {args.runs} runs")
    cold, listening, warm = (
        start[k] * 1000 for k in ("cold_first_produce_s", "cold_listening_s", "warm_first_produce_s")
    )
    print(
        f"fixture request -> first produce, fresh process: {cold:.0f} ms (listening after {listening:.0f} ms)"
    )
    print(f"  warm process: {warm:.0f} ms   [a JVM broker ~1200 ms (KIP-974), containers 10-60 s]")
    print(
        f"reset with {args.topics} topics and {args.groups} groups: {reset['reset_ms']:.1f} ms on the server,"
    )
    print(f"  {reset['reset_call_ms']:.1f} ms for the call")
    print(
        f"{args.tests}-test suite: {suite['one_server_reset_per_test_s']:.1f} s, one server reset per test,"
    )
    print(f"  {suite['server_per_test_s']:.1f} s with a server per test")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
