"""`kcoord cluster init --cluster DSN [--num-shards N]` as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.cluster.conftest import PgServer, free_port
from tests.kcoord_fork import run_command

ROOT = Path(__file__).resolve().parents[2]


def kcoord(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_init_is_idempotent_and_prints_the_cluster(cluster_dsn: str) -> None:
    first = kcoord("cluster", "init", "--cluster", cluster_dsn)
    assert first.returncode == 0, first.stderr
    assert "num_shards=50" in first.stdout and "(created)" in first.stdout
    cluster_id = first.stdout.split("cluster_id=")[1].split()[0]
    again = kcoord("cluster", "init", "--cluster", cluster_dsn, "--num-shards", "50")
    assert again.returncode == 0, again.stderr
    assert f"cluster_id={cluster_id} " in again.stdout and "(already initialized)" in again.stdout
    conn = await asyncpg.connect(cluster_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM kcoord_shard_lease") == 50
        assert await conn.fetchval("SELECT cluster_id FROM kcoord_cluster") == cluster_id
    finally:
        await conn.close()


async def test_init_refuses_a_second_cluster_id_and_another_shard_count(cluster_dsn: str) -> None:
    assert kcoord("cluster", "init", "--cluster", cluster_dsn, "--num-shards", "8").returncode == 0
    other_id = kcoord(
        "cluster", "init", "--cluster", cluster_dsn, "--num-shards", "8", "--cluster-id", "other"
    )
    assert other_id.returncode == 1
    assert "not other" in other_id.stderr and len(other_id.stderr.strip().splitlines()) == 1
    other_count = kcoord("cluster", "init", "--cluster", cluster_dsn)
    assert other_count.returncode == 1 and "cannot change" in other_count.stderr


def test_a_bad_dsn_is_one_line_and_a_failure() -> None:
    done = kcoord("cluster", "init", "--cluster", "mysql://nowhere")
    assert done.returncode == 1
    assert done.stderr.startswith("kcoord cluster init: cannot connect to mysql://nowhere")
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unreachable_database_is_one_line_without_the_password() -> None:
    dsn = f"postgresql://kcoord:s3cret@127.0.0.1:{free_port()}/kcoord"
    done = kcoord("cluster", "init", "--cluster", dsn)
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "s3cret" not in done.stderr and "ConnectionRefusedError" in done.stderr


def test_a_missing_database_is_one_line(pg_server: PgServer) -> None:
    done = kcoord("cluster", "init", "--cluster", pg_server.dsn("no_such_database"))
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "no_such_database" in done.stderr


def test_usage_errors_exit_2() -> None:
    assert kcoord("cluster", "init").returncode == 2
    assert kcoord("cluster", "init", "--cluster", "postgresql://x/y", "--num-shards", "0").returncode == 2
    assert kcoord("cluster").returncode == 2


def test_redact_hides_passwords_wherever_the_dsn_puts_them() -> None:
    from kcoord.cluster.pg import redact

    assert redact("postgresql://u:p@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert (
        redact("postgresql://u@h/d?password=p&sslmode=require")
        == "postgresql://u@h/d?password=***&sslmode=require"
    )
    assert redact("postgresql://h/d") == "postgresql://h/d"
