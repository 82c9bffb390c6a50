"""bench/share_groups.py end to end in its shortest form (a smoke run, not a measurement): every scenario
runs against a real server with librdkafka's ShareConsumer and Consumer in processes of their own and
reports a figure; and the medians over rounds that the report gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.share_groups import medians
from tests.kcoord_process import REPO


def test_medians_take_each_figure_over_the_rounds_and_complete_only_if_every_round_was() -> None:
    rounds = [
        {"s": {"records_s": 3.0, "records": 9, "complete": True}},
        {"s": {"records_s": 1.0, "records": 7, "complete": False}},
        {"s": {"records_s": 2.0, "records": 8, "complete": True}},
    ]
    assert medians(rounds) == {"s": {"records_s": 2.0, "records": 8, "complete": False}}


def run_bench(tmp_path: Path, *argv: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.share_groups", "--rounds", "1", "--dir", str(tmp_path),
         "--json", str(out), *argv],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())["median"], proc.stdout


@pytest.mark.integration
def test_a_short_run_reports_every_scenario_on_one_partition(tmp_path: Path) -> None:
    m, stdout = run_bench(
        tmp_path, "--records", "3000", "--layouts", "1", "--consumers", "1,4", "--ack-samples", "20",
        "--storm-records", "60", "--storm-holders", "3", "--storm-takers", "2", "--read-timeout", "60",
    )  # fmt: skip
    for key in ("member_p1", "share1_p1", "share4_p1"):
        assert m[key]["complete"] and m[key]["records"] == 3000, (key, m[key])
        assert m[key]["records_s"] > 0 and m[key]["redelivered"] == 0, (key, m[key])
    # the second share scenario (max.poll.records=10000): one poll may hold all 3,000, so no rate here
    mpr = m["share1_mpr_p1"]
    assert mpr["complete"] and mpr["records"] == 3000 and mpr["redelivered"] == 0, mpr
    assert "max.poll.records=10000" in stdout
    assert m["ack_latency"]["samples"] == 20 and 0 < m["ack_latency"]["p50_ms"] <= m["ack_latency"]["p99_ms"]
    # every held record came back through lock expiry (delivery count 2), none before the locks ran out
    storm = m["storm"]
    assert storm["complete"] and storm["expired"] == 60 and storm["early_polls"] == 0, storm
    assert storm["seconds"] >= 0
    assert "lock-expiry storm" in stdout and "target: a share consumer" in stdout


@pytest.mark.integration
def test_one_share_consumer_reads_six_partitions(tmp_path: Path) -> None:
    """A ShareFetch answer naming a partition with nothing acquired once carried null records, which
    librdkafka 2.16 refuses ('invalid MessageSetSize -1'): the whole answer was dropped and its records
    came back only when their locks expired."""
    m, _ = run_bench(
        tmp_path, "--records", "3000", "--layouts", "6", "--consumers", "1", "--ack-samples", "1",
        "--storm-records", "10", "--storm-holders", "1", "--storm-takers", "1", "--read-timeout", "20",
    )  # fmt: skip
    assert m["share1_p6"]["complete"] and m["share1_p6"]["redelivered"] == 0, m["share1_p6"]
