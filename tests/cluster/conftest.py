"""A real PostgreSQL for the cluster tests: one server per session (Debian's binaries, run as the
`postgres` user through runuser when the tests run as root: initdb refuses root), on 127.0.0.1 and a
free port, with its socket directory and data in a fresh temporary directory; a fresh database per
test (`CREATE DATABASE`); the server stopped by its PID at the session's end.

Missing binaries are installed with apt-get (`postgresql`) when root; otherwise the tests skip with
the reason, except under KCOORD_CLUSTER_TESTS=required (.ci/run), where they fail. The server runs
with its defaults (fsync on): the acknowledged-means-durable tests built on it mean what they say.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.cluster.postgres import PgServer, PostgresUnavailable, start_postgres

__all__ = ["PgServer"]  # test_failover.py imports it from here

REQUIRED = os.environ.get("KCOORD_CLUSTER_TESTS") == "required"

# asyncpg is in the test extra; a venv without it gets it here (as tests/faults installs mfusepy).
# Where it cannot be installed, the modules that import it are not collected, except when required.
if importlib.util.find_spec("asyncpg") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "asyncpg"], check=False, timeout=300)
    importlib.invalidate_caches()
if importlib.util.find_spec("asyncpg") is None and not REQUIRED:
    collect_ignore = [
        "commit_worker.py",
        "nodes.py",
        "test_cli.py",
        "test_clients.py",
        "test_failover.py",
        "test_fencing_race.py",
        "test_leases.py",
        "test_node_parts.py",
        "test_schema.py",
        "test_shard_log.py",
    ]


def cannot(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"KCOORD_CLUSTER_TESTS=required but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        cannot(str(exc))
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
async def cluster_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    """A fresh, empty database on the session's server; dropped after the test."""
    import asyncpg

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server.dsn())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield pg_server.dsn(name)
    finally:
        await admin.close()
    # A fresh connection: a test may have restarted the server (tests/cluster/test_failover.py).
    admin = await asyncpg.connect(pg_server.dsn())
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def conn(cluster_dsn: str) -> AsyncIterator[Any]:
    """One connection to the test's database."""
    import asyncpg

    connection = await asyncpg.connect(cluster_dsn)
    try:
        yield connection
    finally:
        await connection.close()
