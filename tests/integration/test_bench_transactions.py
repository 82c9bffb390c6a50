"""bench/transactions.py end to end in its shortest form (a smoke run, not a measurement): every phase
runs against a real server and reports a figure; and the median over rounds that the report gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.transactions import medians
from tests.kcoord_process import REPO


def test_medians_take_each_number_over_the_rounds_and_a_flag_only_if_every_round_had_it() -> None:
    rounds = [
        {"commit": "a", "x": 3.0, "sub": {"n": 10, "ok": True}},
        {"commit": "b", "x": 1.0, "sub": {"n": 30, "ok": False}},
        {"commit": "c", "x": 2.0, "sub": {"n": 20, "ok": True}},
    ]
    assert medians(rounds) == {"commit": "a", "x": 2.0, "sub": {"n": 20, "ok": False}}


@pytest.mark.integration
def test_a_short_run_reports_every_phase(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["--seconds", "0.5", "--rounds", "1", "--partitions", "2", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.transactions", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads(out.read_text())["median"]
    assert m["idempotent"]["mib_s"] > 0 and m["transactional"]["mib_s"] > 0
    assert m["transactional"]["transactions"] >= 1 and m["transactional"]["commit_p50_ms"] > 0
    assert m["raw_end_txn"]["transactions"] >= 1 and m["raw_end_txn"]["end_txn_p50_ms"] > 0
    # every record the transactional producer committed is read under both isolation levels
    assert m["read_uncommitted"]["complete"] and m["read_committed"]["complete"]
    assert m["ctp"]["transactions"] >= 2 and m["ctp"]["records_s"] > 0
    assert "consume-transform-produce" in proc.stdout
