"""The suite's fork server (tests/kcoord_fork.py) gives each test a kcoord process of its own: its own
PID, environment, working directory, standard streams, random sequence and exit status, as a fresh
`python -m kcoord` would have."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from tests.kcoord_fork import ForkedProcess, run_command
from tests.kcoord_process import KcoordServer

KCOORD = [sys.executable, "-m", "kcoord"]


def test_a_command_gets_its_arguments_stdin_env_cwd_and_exit_status(tmp_path: Path) -> None:
    bad = run_command([*KCOORD, "serve", "--fsync", "sometimes"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "sometimes" in bad.stderr and bad.stdout == ""
    shown = run_command([*KCOORD, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--data-dir" in shown.stdout
    # KCOORD_* settings come from the environment given, as for a fresh interpreter
    env = {**os.environ, "KCOORD_FSYNC": "sometimes"}
    from_env = run_command(
        [*KCOORD, "serve"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert from_env.returncode != 0 and "sometimes" in from_env.stderr, from_env.stderr


def _state_becomes(pid: int, state: str) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == state:
            return True
        time.sleep(0.01)
    return False


def test_servers_are_separate_processes_with_their_own_exit_codes(tmp_path: Path) -> None:
    servers = [KcoordServer(tmp_path / f"d{i}") for i in range(3)]
    try:
        for server in servers:
            server.start()
        assert all(isinstance(s.proc, ForkedProcess) for s in servers)
        pids = {s.pid for s in servers}
        assert len(pids) == 3 and os.getpid() not in pids
        os.kill(servers[1].pid, signal.SIGSTOP)  # signals reach the process itself
        assert _state_becomes(servers[1].pid, "T")
        os.kill(servers[1].pid, signal.SIGCONT)
        assert servers[0].stop(signal.SIGKILL) == -signal.SIGKILL
        assert servers[1].stop() == 0
        assert not Path(f"/proc/{servers[0].pid}").exists(), "reaped, not left a zombie"
    finally:
        for server in servers:
            server.kill()
