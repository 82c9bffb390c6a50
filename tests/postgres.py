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
from collections.abc import Callable, Iterator
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


# A primary and a streaming standby (issue 35 item 6, tests/cluster/test_pg_failover.py): the standby is
# made by pg_basebackup from the running primary, streams its WAL under the application_name `STANDBY`,
# and is synchronous when the primary names it in `synchronous_standby_names` (with
# `synchronous_commit=on`, the default: a COMMIT returns once the standby has flushed its WAL).

STANDBY = "kcoord_standby"


@dataclass
class ReplicatedPg:
    primary: PgServer
    standby: PgServer
    synchronous: bool
    primary_killed: bool = False

    def dsn(self, database: str = "postgres") -> str:
        """Both hosts, primary first, for a client that must find the writable one after a failover
        (libpq's and asyncpg's multi-host form)."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"

    def sql(self, server: PgServer, statement: str) -> str:
        """One statement through psql on `server` (as the postgres user): its output, unaligned."""
        done = server.as_postgres(
            "psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", "-d", "postgres",
            "-XAtqc", statement,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql on port {server.port}: {done.stderr.strip()[-300:]}")
        return done.stdout.strip()

    def replication_state(self) -> tuple[str, str] | None:
        """The standby's (state, sync_state) as the primary sees it, None before it connects."""
        row = self.sql(
            self.primary,
            f"SELECT state, sync_state FROM pg_stat_replication WHERE application_name = '{STANDBY}'",
        )
        return tuple(row.split("|", 1)) if row else None  # type: ignore[return-value]

    def lag_bytes(self) -> int:
        """WAL the primary has written that the standby has not flushed yet (what an asynchronous
        standby would lose if the primary were lost now)."""
        row = self.sql(
            self.primary,
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn) FROM pg_stat_replication "
            f"WHERE application_name = '{STANDBY}'",
        )
        return int(float(row)) if row else -1

    def kill_primary(self) -> None:
        """SIGKILL the primary's postmaster and every process it started, all at once: the machine
        lost, nothing flushed or sent after this moment."""
        pid = self.primary.postmaster_pid()
        assert pid is not None, "the primary is not running"
        for victim in [pid, *_children(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        self.primary_killed = True

    def promote(self) -> None:
        """`pg_ctl promote`, waiting until the standby accepts writes."""
        done = self.standby.as_postgres("pg_ctl", "-D", str(self.standby.data), "-w", "-t", "60", "promote")
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl promote failed: {done.stdout}{done.stderr}")

    def remove(self) -> None:
        """Stop both servers and delete their directories (a killed primary is not stopped again:
        its stale postmaster.pid may name another process by now)."""
        try:
            self.standby.remove()
        finally:
            if self.primary_killed:
                shutil.rmtree(self.primary.root, ignore_errors=True)
            else:
                self.primary.remove()


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a postmaster's backends, walsender, checkpointer...)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:  # after the command's ")": state, ppid, ...
                found.append(int(Path(stat).parent.name))
    return found


def _wait_streaming(pair: ReplicatedPg, timeout_s: float = 60.0) -> None:
    import time

    want = "sync" if pair.synchronous else "async"
    deadline = time.monotonic() + timeout_s
    while (state := pair.replication_state()) != ("streaming", want):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby is not streaming ({want}) after {timeout_s} s: {state}")
        time.sleep(0.05)


def start_replicated(synchronous: bool, relay: Callable[[int], int] | None = None) -> ReplicatedPg:
    """A primary (start_postgres) and a standby cloned from it with pg_basebackup on another free
    port, streaming; synchronous when asked. `relay(primary_port)`, when given, returns the port the
    standby streams through instead (a proxy the test can cut). The caller calls `remove()`."""
    primary = start_postgres()
    root = Path(tempfile.mkdtemp(prefix="kcoord-pg-standby-"))
    os.chmod(root, 0o755)
    standby = PgServer(primary.bin_dir, root, free_port())
    pair = ReplicatedPg(primary, standby, synchronous)
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        port = primary.port if relay is None else relay(primary.port)
        conninfo = f"host=127.0.0.1 port={port} user=postgres application_name={STANDBY}"
        done = standby.as_postgres(
            "pg_basebackup", "-d", conninfo, "-D", str(standby.data), "-X", "stream", "-R", "--no-sync",
            "-c", "fast",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pg_basebackup failed: {done.stderr.strip()[-500:]}")
        standby.start()
        if synchronous:  # commits wait for the standby's flush from now on (synchronous_commit=on)
            pair.sql(primary, f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY}'")
            pair.sql(primary, "SELECT pg_reload_conf()")
        _wait_streaming(pair)
    except BaseException:
        pair.remove()
        raise
    return pair


@contextlib.contextmanager
def replicated_servers(
    synchronous: bool, relay: Callable[[int], int] | None = None
) -> Iterator[ReplicatedPg]:
    """A primary and a streaming standby of the test's own (`start_replicated`): skipped (failed
    under KCOORD_CLUSTER_TESTS=required) where PostgreSQL cannot run."""
    try:
        pair = start_replicated(synchronous, relay)
    except PostgresUnavailable as exc:
        cannot(str(exc))
    try:
        yield pair
    finally:
        pair.remove()
