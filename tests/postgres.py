"""A real PostgreSQL server as a subprocess, without pytest: the `pg_server` session fixture of
tests/conftest.py (one server per session, for tests/cluster and tests/pipeline) and bench/cluster.py
both start theirs through `start_postgres`.

Debian's binaries, run as the `postgres` user through runuser when the caller is root (initdb refuses
root), on 127.0.0.1 and a free port (tests/ports.py: outside the ephemeral range, so a restarted server
finds it free while other xdist workers connect), with its socket directory and data in a fresh
temporary directory; missing binaries are installed with apt-get (`postgresql`) when root, one
installer at a time on the machine (tests/locks.py). The server runs with its defaults (fsync on), so
what is acknowledged on it is durable.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.locks import APT_WAIT, machine_lock
from tests.ports import free_port

# .ci/run sets it: a machine where PostgreSQL cannot run fails the tests instead of skipping them.
REQUIRED = os.environ.get("KCOORD_CLUSTER_TESTS") == "required"


def cannot(reason: str) -> None:
    """Skip the test, or fail it under KCOORD_CLUSTER_TESTS=required."""
    import pytest

    if REQUIRED:
        pytest.fail(f"KCOORD_CLUSTER_TESTS=required but {reason}")
    pytest.skip(reason)


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be run here (the reason is the message)."""


def _run(argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


def ensure_postgresql() -> Path:
    """The directory of PostgreSQL's programs (installed first when root and missing)."""
    with machine_lock("install"):  # every xdist worker starts its server at once on a fresh machine
        if _bin_dir() is None and os.geteuid() == 0 and shutil.which("apt-get"):
            _run(["apt-get", "update", "-q"])
            done = _run(["apt-get", "install", "-y", "-q", *APT_WAIT, "postgresql"])
            if done.returncode != 0:
                raise PostgresUnavailable(f"apt-get install postgresql failed: {done.stderr.strip()[-300:]}")
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(
            "no PostgreSQL binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
        )
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise PostgresUnavailable(
            "running as root without runuser: cannot start PostgreSQL as the postgres user"
        )
    if importlib.util.find_spec("asyncpg") is None:
        raise PostgresUnavailable("asyncpg missing (pip install 'kcoord[cluster]')")
    return bin_dir


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

    def remove(self) -> None:
        """Stop the server and delete its directory."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> PgServer:
    """initdb in a fresh temporary directory and start the server; the caller calls `remove()`.
    PostgresUnavailable when it cannot run here."""
    bin_dir = ensure_postgresql()
    root = Path(tempfile.mkdtemp(prefix="kcoord-pg-"))
    os.chmod(root, 0o755)
    server = PgServer(bin_dir, root, free_port())
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    done = server.as_postgres("initdb", "-D", str(server.data), "-A", "trust", "-U", "postgres", "--no-sync")
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"initdb failed: {done.stderr.strip()[-300:]}")
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server


@contextlib.contextmanager
def started_server() -> Iterator[PgServer]:
    """A server of its own for a test that stops or restarts it (the session's `pg_server` is shared):
    skipped, or failed under KCOORD_CLUSTER_TESTS=required, where PostgreSQL cannot run."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        cannot(str(exc))
    try:
        yield server
    finally:
        server.remove()
