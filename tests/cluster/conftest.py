"""A real PostgreSQL for the cluster tests: one server per session (Debian's binaries, run as the
`postgres` user through runuser when the tests run as root: initdb refuses root), on 127.0.0.1 and a
free port, with its socket directory and data in a fresh temporary directory; a fresh database per
test (`CREATE DATABASE`); the server stopped by its PID at the session's end.

Missing binaries are installed with apt-get (`postgresql`) when root; otherwise the tests skip with
the reason, except under KCOORD_CLUSTER_TESTS=required (.ci/run), where they fail. The server runs
with its defaults (fsync on): the acknowledged-means-durable tests built on it mean what they say.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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
        "test_db_faults.py",
        "test_failover.py",
        "test_fencing_race.py",
        "test_leases.py",
        "test_node_parts.py",
        "test_pool_bounds.py",
        "test_schema.py",
        "test_shard_log.py",
    ]


def cannot(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"KCOORD_CLUSTER_TESTS=required but {reason}")
    pytest.skip(reason)


def _run(argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


def _ensure_postgresql() -> Path:
    if _bin_dir() is None and os.geteuid() == 0 and shutil.which("apt-get"):
        _run(["apt-get", "update", "-q"])
        done = _run(["apt-get", "install", "-y", "-q", "postgresql"])
        if done.returncode != 0:
            cannot(f"apt-get install postgresql failed: {done.stderr.strip()[-300:]}")
    bin_dir = _bin_dir()
    if bin_dir is None:
        cannot("no PostgreSQL binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
    assert bin_dir is not None
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        cannot("running as root without runuser: cannot start PostgreSQL as the postgres user")
    if importlib.util.find_spec("asyncpg") is None:
        cannot("asyncpg missing (pip install 'kcoord[cluster]')")
    return bin_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    bin_dir: Path
    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def as_postgres(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL program as the postgres user (runuser when root)."""
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        return _run([*prefix, str(self.bin_dir / argv[0]), *argv[1:]], timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        done = self.as_postgres(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "start", "-o", options
        )
        if done.returncode != 0:
            log = (
                (self.root / "log").read_text(errors="replace")[-1000:]
                if (self.root / "log").exists()
                else ""
            )
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}{log}")

    def stop(self, mode: str = "fast") -> None:
        done = self.as_postgres("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        if done.returncode != 0 and (pid := self.postmaster_pid()) is not None:
            os.kill(pid, signal.SIGKILL)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


@contextmanager
def started_server() -> Iterator[PgServer]:
    """A new PostgreSQL server (initdb, start), stopped and removed on exit. The session's is one;
    a test that stops or restarts its server takes its own (tests/cluster/test_db_faults.py)."""
    bin_dir = _ensure_postgresql()
    root = Path(tempfile.mkdtemp(prefix="kcoord-pg-"))
    os.chmod(root, 0o755)
    server = PgServer(bin_dir, root, free_port())
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    done = server.as_postgres("initdb", "-D", str(server.data), "-A", "trust", "-U", "postgres", "--no-sync")
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        cannot(f"initdb failed: {done.stderr.strip()[-300:]}")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with started_server() as server:
        yield server


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
