"""The restart policy docker-compose.yml gives kcoord brings it back after a fatal storage fault.

The container's data directory is a FUSE passthrough on the host (tests/faults/fusefs.py); failing
its fsync makes kcoord inside the container exit 75 for real (a stock client's commit needs an
fsync). podman, given the compose file's own `restart:` value, starts it again by itself; recovery
runs and every acknowledged commit is there. podman applies the policy without systemd: conmon's exit
command runs `podman container cleanup`, which restarts the container.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.container.engine import inspect, tool_path
from tests.container.helpers import Containers, client, free_port, logs, run_argv, state, wait_healthy
from tests.faults.conftest import FuseFs, fusefs  # noqa: F401  (the FUSE fixture, shared)
from tests.kcoord_process import REPO

pytestmark = pytest.mark.timeout(900)
FATAL_LINE = "exiting with code 75"


def _compose_restart_policy() -> str:
    binary = tool_path("docker-compose")
    assert binary is not None
    done = run_argv([binary, "config", "--format", "json"], dict(os.environ), 60)
    assert done.returncode == 0, done.stderr
    policy = json.loads(done.stdout)["services"]["kcoord"]["restart"]
    assert isinstance(policy, str)
    return policy


def _commit_fails(bootstrap: str, offset: int) -> bool:
    """A stock kafka-python commit, in its own process: True if the client reported a failure."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.container.client", "commit", bootstrap, "g", "t", f"0={offset}"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode != 0


def test_the_compose_restart_policy_brings_kcoord_back_after_exit_75(
    containers: Containers,
    fusefs: FuseFs,  # noqa: F811
) -> None:
    policy = _compose_restart_policy()
    assert policy == "unless-stopped"
    data = fusefs.path / "data"
    data.mkdir()
    os.chmod(data, 0o777)  # the image runs as uid 10001
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    name = containers.run(port, str(data), flags=("--restart", policy))
    wait_healthy(name)
    assert client("produce", bootstrap, "t", "10") == {"produced": 10}
    assert client("commit", bootstrap, "g", "t", "0=5") == {"committed": 1}

    fusefs.fail("fsync")
    assert _commit_fails(bootstrap, 7), "a commit was acknowledged while fsync fails"
    deadline = time.monotonic() + 60
    while FATAL_LINE not in logs(name):
        assert time.monotonic() < deadline, f"no exit 75:\n{logs(name)}"
        time.sleep(0.2)
    fusefs.fail("fsync", on=False)

    deadline = time.monotonic() + 120
    while int(str(inspect("container", name).get("RestartCount", 0))) < 1:
        assert time.monotonic() < deadline, f"{name} not restarted: {state(name)}\n{logs(name)}"
        time.sleep(0.2)
    wait_healthy(name, timeout=120)
    assert client("offsets", bootstrap, "g") == {"t:0": 5}
    assert logs(name).count("listening on") >= 2  # one process before the fault, one after
