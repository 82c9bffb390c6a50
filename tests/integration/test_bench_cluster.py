"""bench/cluster.py end to end in its shortest form (a smoke run, not a measurement): its own
PostgreSQL, three nodes and one single server; every phase reports a figure, the failovers end in a
commit and a produce on a survivor, and every process it started is gone at the end."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kcoord_process import REPO
from tests.postgres import PostgresUnavailable, ensure_postgresql

# bench.cluster needs asyncpg (the test extra has it); without it these skip, as tests/cluster does,
# unless KCOORD_CLUSTER_TESTS=required
REQUIRED = os.environ.get("KCOORD_CLUSTER_TESTS") == "required"
if importlib.util.find_spec("asyncpg") is None and not REQUIRED:
    pytest.skip("asyncpg missing (pip install 'kcoord[cluster]')", allow_module_level=True)

from bench.cluster_loads import spread  # noqa: E402  (imports asyncpg)
from tests.cluster.nodes import until  # noqa: E402


def test_spread_deals_every_frame_round_robin_and_leaves_no_connection_empty() -> None:
    frames = [bytes([i]) for i in range(7)]
    dealt = spread(frames, 3)
    assert dealt == [[b"\x00", b"\x03", b"\x06"], [b"\x01", b"\x04"], [b"\x02", b"\x05"]]
    assert spread(frames[:2], 5) == [[b"\x00"], [b"\x01"]]


def _running(pid: int) -> bool:
    """Not exited (a zombie waiting for init to reap it has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.integration
def test_a_short_run_reports_every_phase(tmp_path: Path) -> None:
    try:
        ensure_postgresql()
    except PostgresUnavailable as exc:
        if REQUIRED:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    out = tmp_path / "bench.json"
    argv = ["--seconds", "0.3", "--rounds", "1", "--groups", "2", "--window", "4", "--partitions", "2",
            "--lease-ttl-ms", "1500", "--json", str(out)]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "bench.cluster", *argv], cwd=REPO, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert len(results["pids"]) == 5  # the single server, three nodes, the postmaster: all gone
    until(lambda: not [pid for pid in results["pids"] if _running(pid)] or None, 10, "every process gone")
    m = results["median"]
    for phase in ("commits", "heartbeats"):
        for side in ("single", "cluster"):
            row = m[phase][side]
            assert row["requests_per_s"] > 0 and row["server_cpu_us_per_request"] > 0, (phase, side, row)
    assert m["commits"]["cluster"]["db_cpu_us_per_request"] > 0  # durable in PostgreSQL
    assert m["produce"]["single"]["mib_s"] > 0 and m["produce"]["cluster"]["mib_s"] > 0
    assert m["limit"]["commit_rows"]["rows_per_s"] > 0 and m["limit"]["batch_rows"]["mib_s"] > 0
    assert m["limit"]["batch_rows"]["db_cpu_ms_per_mib"] > 0
    # the database's CPU per produced MiB by process adds up to its total; the WAL and the statements
    three = m["produce"]["cluster"]
    roles = three["db_cpu_ms_per_mib_by_role"]
    assert roles["backend"] > 0 and sum(roles.values()) == pytest.approx(three["db_cpu_ms_per_mib"])
    assert three["wal_mib_per_mib"] > 0.5  # incompressible batches go to the WAL whole
    assert any("kcoord_flush" in row["query"] for row in three["statements"])
    # the limit inserts rows as large as the ones the cluster wrote (not the fallback sizes)
    assert m["limit"]["commit_rows"]["row_bytes"] != 64 and m["limit"]["batch_rows"]["row_bytes"] != 16 * 1024
    for kind in ("kill_9", "sigterm"):
        for what in ("commit_s", "produce_s"):
            assert math.isfinite(m["failover"][kind][what]) and m["failover"][kind][what] > 0, (kind, what)
    assert "failover, SIGTERM to the first commit on a survivor" in proc.stdout
    assert "python -m bench.cluster --seconds 0.3" in proc.stdout


@pytest.mark.integration
def test_the_flush_bench_stores_batches_and_reports_the_database_cost(tmp_path: Path) -> None:
    try:
        ensure_postgresql()
    except PostgresUnavailable as exc:
        if REQUIRED:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    out = tmp_path / "flush.json"
    argv = [
        "--seconds",
        "0.5",
        "--writers",
        "2",
        "--partitions",
        "1",
        "--batch-kib",
        "64",
        "--json",
        str(out),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.cluster_flush", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["mib_s"] > 0 and result["db_cpu_ms_per_mib_by_role"]["backend"] > 0
    # a batch of 64 KiB is stored out of line in ~2 KB TOAST chunks: a heap and an index record each
    assert result["wal_mib_per_mib"] > 0.9 and result["wal_records_per_mib"] > 500
