"""`--cluster`: the Spark sources and the jobs over a cluster's PostgreSQL holding what a real server
wrote to a data directory (conftest.pg_produced), compared with the same jobs over that directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.postgres import REQUIRED

if not REQUIRED:
    pytest.importorskip("asyncpg", reason="the cluster extra (asyncpg) is not installed")
    pytest.importorskip("psycopg", reason="psycopg (the pipeline extra) is not installed")

from kcoord.pipeline import compact, lag, offsets, rebalances
from kcoord.pipeline.inputs import CLUSTER_NOTE, Input
from kcoord.pipeline.reader import COLUMNS, OFFSET_COMMIT_TYPE
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.pipeline import pg_cluster
from tests.pipeline.conftest import offsets_of

SAME = [c for c in COLUMNS if c not in ("lsn", "timestamp_ms")]  # lsn and write time are the table's


def _newest(rows: list[Any]) -> dict[tuple[int, bytes], Any]:
    newest: dict[tuple[int, bytes], Any] = {}
    for r in sorted(rows, key=lambda r: r["lsn"]):
        newest[(r["record_type"], bytes(r["key"]))] = r
    return newest


def _cells(row: Any) -> tuple[Any, ...]:
    return tuple(repr(row[c]) for c in SAME)


def test_kcoord_source_reads_the_newest_record_of_each_key(spark: Any, pg_produced: dict[str, Any]) -> None:
    local = _newest(
        spark.read.format("kcoord").option("history", "false").load(str(pg_produced["dir"])).collect()
    )
    rows = spark.read.format("kcoord").option("cluster", pg_produced["dsn"]).load().collect()
    cluster = {(r["record_type"], bytes(r["key"])): r for r in rows}
    assert len(cluster) == len(rows)  # one row per key: PostgreSQL's compacted state
    live = {k: _cells(r) for k, r in local.items() if not r["tombstone"]}
    assert {k: _cells(r) for k, r in cluster.items() if not r["tombstone"]} == live
    assert all(local[k]["tombstone"] for k, r in cluster.items() if r["tombstone"])  # metadata's deletions
    commits = [r for r in rows if r["record_type"] == OFFSET_COMMIT_TYPE]
    assert len(commits) == sum(len(o) for o in pg_produced["offsets"].values())
    assert all(r["timestamp_ms"] == r["commit_timestamp"] for r in commits)
    assert {r["record_type"] for r in rows} >= {0, 1, 4}, "offset commits, group metadata and topics"


def _topic_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(repr(v) for v in r) for r in df.collect())


def test_kcoord_topic_source_reads_the_batches_the_segments_hold(
    spark: Any, pg_produced: dict[str, Any]
) -> None:
    local = _topic_rows(spark.read.format("kcoord-topic").load(str(pg_produced["dir"])))
    source = spark.read.format("kcoord-topic").option("cluster", pg_produced["dsn"])
    assert _topic_rows(source.option("offsetsPerPartition", "100").load()) == local
    assert len(local) == len(pg_produced["acked"])
    pushed = source.load().where("partition = 1 AND offset >= 100")
    assert _topic_rows(pushed) == [r for r in local if r[1] == "1" and int(r[2]) >= 100] != []


def test_jobs_over_a_cluster_agree_with_the_data_directory(
    spark: Any, pg_produced: dict[str, Any], tmp_path: Path
) -> None:
    data_dir, cluster = str(pg_produced["dir"]), Input(cluster=pg_produced["dsn"])
    summary = offsets.run(spark, cluster, str(tmp_path / "o"))
    assert CLUSTER_NOTE in summary
    local = sorted(tuple(r) for r in offsets.latest_offsets(spark, data_dir).collect())
    table = pq.read_table(tmp_path / "o" / "offsets").to_pylist()
    assert sorted(tuple(r[c] for c in offsets.OFFSET_COLUMNS) for r in table) == local != []

    summary = lag.run(spark, cluster, str(tmp_path / "l"))
    assert CLUSTER_NOTE in summary and (tmp_path / "l" / "lag.png").exists()
    expected = sorted(tuple(r) for r in lag.latest(spark, data_dir).collect())
    got = sorted(tuple(r.values()) for r in pq.read_table(tmp_path / "l" / "lag").to_pylist())
    assert got == expected and all(r[-1] is not None and r[-1] > 0 for r in got)
    history = pq.read_table(tmp_path / "l" / "lag_history").to_pylist()
    assert len(history) == len(local)  # one commit per partition: no history in a cluster

    summary = rebalances.run(spark, cluster, str(tmp_path / "r"))
    assert CLUSTER_NOTE in summary
    newest: dict[str, Any] = {}
    for r in rebalances.compute(spark, data_dir).collect():
        if r["generation"] >= newest.get(r["group"], r)["generation"]:
            newest[r["group"]] = r
    timeline = pq.read_table(tmp_path / "r" / "rebalances").to_pylist()
    assert {r["group"]: (r["generation"], r["members"]) for r in timeline} == {
        g: (r["generation"], r["members"]) for g, r in newest.items()
    }

    summary = compact.run(spark, cluster, str(tmp_path / "c"))
    restored = pg_cluster.replayed(tmp_path / "c")  # storage's own recovery accepts the segment
    assert len(summary.split("->")) == 2
    live: dict[tuple[int, bytes], bytes | None] = {}
    for record in pg_cluster.replayed(pg_produced["dir"]):
        live[(record.type, record.key)] = record.value
    assert {(r.type, r.key): r.value for r in restored} == {k: v for k, v in live.items() if v is not None}
    server = KcoordServer(tmp_path / "c", log_path=tmp_path / "serve.log")
    try:  # the exported cluster is a data directory a server starts from, with the same offsets
        server.start()
        assert {g: offsets_of(server.bootstrap, g) for g in pg_produced["offsets"]} == pg_produced["offsets"]
    finally:
        server.kill()


def test_the_command_line_runs_a_job_over_a_cluster(
    spark: Any, pg_produced: dict[str, Any], spark_env: dict[str, str], tmp_path: Path
) -> None:
    done = run_command(
        [sys.executable, "-m", "kcoord", "pipeline", "offsets", "--cluster", pg_produced["dsn"],
         "--out", str(tmp_path), "--master", "local[1]"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=spark_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert CLUSTER_NOTE in done.stdout
    local = sorted(tuple(r) for r in offsets.latest_offsets(spark, str(pg_produced["dir"])).collect())
    table = pq.read_table(tmp_path / "offsets").to_pylist()
    assert sorted(tuple(r[c] for c in offsets.OFFSET_COLUMNS) for r in table) == local
