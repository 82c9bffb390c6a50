"""Job `lag` on a data directory real producers and consumers wrote (conftest.produced), and the CLI's
one-line errors for corrupt sealed segments of the coordinator log and of a partition log."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoord.pipeline import lag
from kcoord.storage.files import base_of, encode_segment_header, segment_name
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO


@pytest.fixture(scope="module")
def lag_out(
    spark: Any, produced: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("lag")
    summary = lag.run(spark, str(produced["dir"]), str(out))
    print(summary)
    return out, summary


def test_lag_is_log_end_minus_committed_offset(
    spark: Any, produced: dict[str, Any], lag_out: tuple[Path, str]
) -> None:
    tmp_path, summary = lag_out
    topic, ends = produced["topic"], produced["ends"]
    rows = {
        (r["group"], r["partition"]): r
        for r in spark.read.parquet(str(tmp_path / "lag")).collect()
        if r["topic"] == topic
    }
    expected = {
        (group, p): ends[p] - produced["offsets"][group][(topic, p)]
        for group in (produced["reader"], produced["slow"])
        for p in ends
    }
    assert {k: r["lag"] for k, r in rows.items()} == expected
    assert all(r["log_end"] == ends[k[1]] and r["log_start"] == 0 for k, r in rows.items())
    assert all(lag_ > 0 for lag_ in expected.values()), "the second round should leave every group behind"
    assert f"{produced['slow']}: total lag {sum(ends.values()) - 3 * len(ends)}" in summary
    assert (tmp_path / "lag.png").stat().st_size > 1000


def test_lag_over_time_is_the_log_end_at_each_commit(
    spark: Any, produced: dict[str, Any], lag_out: tuple[Path, str]
) -> None:
    tmp_path, _ = lag_out
    history = [
        r
        for r in spark.read.parquet(str(tmp_path / "lag_history")).collect()
        if r["topic"] == produced["topic"]
    ]
    first_ends = produced["first_ends"]
    reader = sorted((r for r in history if r["group"] == produced["reader"]), key=lambda r: r["ts_ms"])
    slow = [r for r in history if r["group"] == produced["slow"]]
    assert len(reader) >= len(first_ends) and len(slow) == len(first_ends)
    # a consumer commits only what it read, and it read only records produced before the commit
    assert all(r["lag_then"] >= 0 for r in reader), [tuple(r) for r in reader if r["lag_then"] < 0]
    last = {r["partition"]: r for r in reader}  # the newest commit per partition
    assert {p: (r["committed_offset"], r["log_end_then"], r["lag_then"]) for p, r in last.items()} == {
        p: (end, end, 0) for p, end in first_ends.items()
    }
    assert {r["partition"]: r["lag_then"] for r in slow} == {p: end - 3 for p, end in first_ends.items()}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "pipeline", *args, "--master", "local[1]"],
        cwd=REPO, capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def _flip_middle_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def _assert_one_line(done: subprocess.CompletedProcess[str], path: Path) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "corrupt sealed segment" in done.stderr and path.name in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "at org.apache" not in done.stderr


def test_cli_a_corrupt_sealed_coordinator_segment_is_one_line(
    produced: dict[str, Any], spark_env: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(produced["dir"], data)
    segment = sorted(data.glob("*.log"))[0]
    base = base_of(sorted(data.glob("*.log"))[-1]) + 1_000_000
    (data / segment_name(base)).write_bytes(encode_segment_header(base))
    _flip_middle_byte(segment)
    _assert_one_line(
        _cli(spark_env, "offsets", "--data-dir", str(data), "--out", str(tmp_path / "out")), segment
    )


def test_cli_a_corrupt_sealed_partition_segment_is_one_line(
    produced: dict[str, Any], spark_env: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(produced["dir"], data)
    partition = data / "topics" / f"{produced['topic']}-0"
    segment = sorted(partition.glob("*.log"))[-1]
    next_base = produced["ends"][0]
    (partition / f"{next_base:020d}.log").write_bytes(b"")  # sealed: a newer (empty) segment follows it
    _flip_middle_byte(segment)
    _assert_one_line(_cli(spark_env, "lag", "--data-dir", str(data), "--out", str(tmp_path / "out")), segment)
