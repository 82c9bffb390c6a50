"""Under compose (podman), kcoord comes back by itself after a fatal storage fault.

docker-compose.yml's kcoord service runs through Docker Compose v2 against podman's API, with one
change made by an override file: its data directory is a FUSE passthrough on the host
(tests/faults/fusefs.py) instead of the named volume. Failing that file system's fsync makes kcoord
exit 75 for real (a stock kafka-python commit needs an fsync); the service's own restart policy
(`restart: unless-stopped`) starts it again, recovery runs, and the acknowledged offset is there.
podman applies the policy without systemd: conmon's exit command runs `podman container cleanup`,
which restarts the container.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.container.engine import inspect
from tests.container.helpers import (
    COMPOSE_FILES,
    client,
    compose,
    compose_containers,
    free_port,
    logs,
    state,
    wait_healthy,
)
from tests.faults.conftest import FuseFs, fusefs  # noqa: F401  (the FUSE fixture, shared)
from tests.kcoord_process import REPO

pytestmark = pytest.mark.timeout(900)
FATAL_LINE = "exiting with code 75"


def _commit_fails(bootstrap: str, offset: int) -> bool:
    """A stock kafka-python commit in its own process: True if the client reported a failure."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.container.client", "commit", bootstrap, "g", "t", f"0={offset}"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode != 0


def test_compose_restarts_kcoord_after_a_fatal_fsync_fault(
    podman_socket: str,
    base_image: str,
    fusefs: FuseFs,  # noqa: F811
    tmp_path: Path,
) -> None:
    data = fusefs.path / "data"
    data.mkdir()
    os.chmod(data, 0o777)  # the image runs as uid 10001
    override = tmp_path / "fuse-data.yml"
    override.write_text(
        json.dumps({"services": {"kcoord": {"volumes": [f"{data}:/var/lib/kcoord"]}}})  # YAML is JSON
    )
    project = f"kcoordrestart{uuid.uuid4().hex[:8]}"
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    env = {
        "DOCKER_HOST": podman_socket,
        "DOCKER_BUILDKIT": "0",
        "COMPOSE_BAKE": "false",
        "BASE_IMAGE": base_image,
        "KCOORD_PORT": str(port),
        "KCOORD_HTTP_PORT": str(free_port()),
    }
    args = ("-p", project, *COMPOSE_FILES, "-f", str(override))
    resolved = json.loads(compose(*args, "config", "--format", "json", env=env))["services"]["kcoord"]
    assert resolved["restart"] == "unless-stopped"
    assert [v["source"] for v in resolved["volumes"]] == [str(data)]
    try:
        compose(*args, "up", "--build", "--detach", "kcoord", env=env, timeout=900)
        [container] = compose_containers(project)
        name = str(container["Id"])
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
            assert time.monotonic() < deadline, f"not restarted: {state(name)}\n{logs(name)}"
            time.sleep(0.2)
        wait_healthy(name, timeout=120)
        assert client("offsets", bootstrap, "g") == {"t:0": 5}
        assert logs(name).count("listening on") >= 2  # one process before the fault, one after
    finally:
        compose(*args, "down", "--volumes", "--timeout", "10", env=env, timeout=120)
    assert compose_containers(project) == []
