"""The jobs against a data directory a real server wrote (conftest.recorded), on one local Spark."""

from __future__ import annotations

import itertools
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoord.pipeline import compact, offsets, reader, rebalances
from kcoord.protocol import consumer_protocol
from kcoord.protocol.messages import records as schemas
from kcoord.storage.files import base_of, encode_segment_header, segment_name
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.pipeline.conftest import offsets_of


def test_offsets_equal_what_a_restarted_server_fetches(
    spark: Any, recorded: dict[str, Any], tmp_path: Path
) -> None:
    summary = offsets.run(spark, str(recorded["dir"]), str(tmp_path))
    rows = spark.read.parquet(str(tmp_path / "offsets")).collect()
    got: dict[str, dict[tuple[str, int], int]] = {}
    for r in rows:
        got.setdefault(r["group"], {})[(r["topic"], r["partition"])] = r["offset"]
    assert {g: got.get(g, {}) for g in recorded["groups"]} == recorded["offsets"]
    assert all(recorded["offsets"].values()), "the recorded groups committed nothing"
    assert "offsets:" in summary


def test_a_server_started_on_compacts_output_restores_the_same_offsets(
    spark: Any, recorded: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "compacted"
    print(compact.run(spark, str(recorded["dir"]), str(out)))
    assert len(list(out.glob("*.log"))) == 1
    server = KcoordServer(out, log_path=tmp_path / "server.log")
    try:
        server.start()
        restored = {group: offsets_of(server.bootstrap, group) for group in recorded["groups"]}
    finally:
        server.kill()
    assert restored == recorded["offsets"]
    # groups: the live group-metadata records are the same bytes as in the original's keydir
    live = _reference_live(recorded["dir"])
    after = _reference_live(out)
    assert after == live


def _reference_live(data_dir: Path) -> dict[tuple[int, bytes], bytes]:
    """Newest value per (type, key), tombstones removed: plain Python over the reader's records."""
    newest: dict[tuple[int, bytes], tuple[int, bytes | None]] = {}
    for part in reader.plan(str(data_dir)):
        for raw in reader.raw_records(part):
            key = (raw.type, raw.key)
            if key not in newest or newest[key][0] < raw.lsn:
                newest[key] = (raw.lsn, raw.value)
    return {k: v for k, (_, v) in newest.items() if v is not None}


def _reference_timeline(data_dir: Path) -> list[tuple[Any, ...]]:
    """Generation timeline computed without the job's code: decode, group, diff."""
    per_group: dict[str, dict[int, list[Any]]] = {}
    raws = sorted((r for p in reader.plan(str(data_dir)) for r in reader.raw_records(p)), key=lambda r: r.lsn)
    for raw in raws:
        if raw.type != reader.GROUP_METADATA_TYPE or raw.value is None:
            continue
        _, key = schemas.decode_key(raw.key)
        _, value = schemas.decode_value(schemas.GROUP_METADATA_VALUE, raw.value)
        gens = per_group.setdefault(key["group"], {})
        first = gens[value["generation"]][0] if value["generation"] in gens else raw.timestamp_ms
        gens[value["generation"]] = [first, value["members"]]
    out = []
    for group, gens in per_group.items():
        prev_members: set[str] = set()
        prev_owner: dict[tuple[str, int], str] = {}
        for gen in sorted(gens):
            ts, members = gens[gen]
            ids = {m["member_id"] for m in members}
            owner = {}
            for m in members:
                if m["assignment"]:
                    for a in consumer_protocol.decode_assignment(m["assignment"])[1]["assigned_partitions"]:
                        owner.update({(a["topic"], p): m["member_id"] for p in a["partitions"]})
            moved = len(
                {tp for tp in owner.keys() | prev_owner.keys() if owner.get(tp) != prev_owner.get(tp)}
            )
            out.append((group, gen, ts, len(ids), len(ids - prev_members), len(prev_members - ids), moved))
            prev_members, prev_owner = ids, owner
    return sorted(out)


def test_rebalances_match_a_plain_python_reference(
    spark: Any, recorded: dict[str, Any], tmp_path: Path
) -> None:
    print(rebalances.run(spark, str(recorded["history"]), str(tmp_path)))
    rows = spark.read.parquet(str(tmp_path / "rebalances")).collect()
    got = sorted(tuple(r)[:7] for r in rows)  # the 8th column, reason: tests/pipeline/test_history.py
    expected = _reference_timeline(recorded["history"])
    assert got == expected
    assert all(r["reason"] for r in rows)
    mine = [r for r in expected if r[0] in recorded["groups"]]
    assert max(r[3] for r in mine) == 2, f"the two-member generation is missing: {mine}"
    assert any(r[5] for r in mine), f"the crashed member's leave is missing: {mine}"
    assert (tmp_path / "rebalances.png").stat().st_size > 1000
    assert (tmp_path / "membership.png").stat().st_size > 1000
    gaps = [(b[2] - a[2]) / 1000 for a, b in itertools.pairwise(mine) if a[0] == b[0]]
    assert gaps and statistics.median(gaps) >= 0


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "pipeline", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_an_empty_directory_is_one_line(tmp_path: Path) -> None:
    done = _cli("offsets", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no kcoord log" in done.stderr


def test_a_corrupt_sealed_segment_is_one_line(recorded: dict[str, Any], tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(recorded["dir"], data)
    segments = sorted(data.glob("*.log"))
    if len(segments) == 1:  # seal the server's only segment the way the log rolls: a newer, empty one
        base = base_of(segments[0]) + 1_000_000
        (data / segment_name(base)).write_bytes(encode_segment_header(base))
    raw = bytearray(segments[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    segments[0].write_bytes(bytes(raw))
    with pytest.raises(reader.PipelineError, match="corrupt sealed segment"):
        for part in reader.plan(str(data)):
            reader.raw_records(part)


def test_missing_java_and_unreachable_master_are_one_line(recorded: dict[str, Any], tmp_path: Path) -> None:
    import os
    import socket

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    done = _cli("offsets", "--data-dir", str(recorded["dir"]), "--out", str(tmp_path), env=env)
    assert done.returncode == 2 and "no Java" in done.stderr and done.stderr.count("\n") == 1
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    done = _cli(
        "offsets",
        "--data-dir",
        str(recorded["dir"]),
        "--out",
        str(tmp_path),
        "--master",
        f"spark://127.0.0.1:{port}",
    )
    assert done.returncode == 2 and "unreachable" in done.stderr and done.stderr.count("\n") == 1
