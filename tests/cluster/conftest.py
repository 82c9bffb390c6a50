"""The cluster tests' databases: a fresh one per test (`CREATE DATABASE`) on the session's real
PostgreSQL, the `pg_server` fixture of tests/conftest.py (tests/postgres.py: Debian's binaries on
127.0.0.1 and a free port, installed with apt-get when missing; skipped with the reason, or failed
under KCOORD_CLUSTER_TESTS=required). The pipeline's cluster tests share that one server.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.locks import machine_lock
from tests.postgres import REQUIRED, PgServer, cannot, free_port

__all__ = ["PgServer", "free_port"]  # tests/cluster/test_cli.py imports them from here

# asyncpg is in the test extra; a venv without it gets it here (as tests/faults installs mfusepy).
# Where it cannot be installed, the modules that import it are not collected, except when required.
with machine_lock("install"):  # every xdist worker collects this at once
    if importlib.util.find_spec("asyncpg") is None:
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "asyncpg"]
        subprocess.run(pip, check=False, timeout=300)
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
        "test_ownership_phases.py",
        "test_pool_bounds.py",
        "test_schema.py",
        "test_shard_log.py",
        "test_topic_race.py",
    ]


@pytest.fixture
async def cluster_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    """A fresh, empty database on the session's server; dropped after the test."""
    if importlib.util.find_spec("asyncpg") is None:
        cannot("asyncpg missing (pip install 'kcoord[cluster]')")
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
