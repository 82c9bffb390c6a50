"""The top-level Dockerfile for real: built with podman from a locally built base, run with host
networking on free ports, health-checked over the Kafka protocol, stopped with SIGTERM, restarted on
the same volume; and the bad configurations a container user meets."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.container.engine import PODMAN_RUN_FLAGS, inspect, podman
from tests.container.helpers import (
    FIGURES,
    Containers,
    client,
    free_port,
    logs,
    state,
    wait_exited,
    wait_healthy,
)

# The first test of a session on a fresh machine also installs podman (apt), debootstrap's the base
# (~1.5 min) and builds the image: more than the suite's default 300 s budget per test.
pytestmark = pytest.mark.timeout(1500)

DATA = "/var/lib/kcoord"


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " ERROR " in line or line.startswith("kcoord:")]


def test_image_runs_as_non_root_with_volume_port_and_healthcheck(kcoord_image: str) -> None:
    image = inspect("image", kcoord_image)
    config = image["Config"]
    assert isinstance(config, dict)
    assert config["User"] == "10001:10001"
    assert DATA in config["Volumes"]
    assert "9092/tcp" in config["ExposedPorts"] and "8080/tcp" in config["ExposedPorts"]
    assert "KCOORD_HTTP_LISTEN=0.0.0.0:8080" in config["Env"]
    healthcheck = image.get("Healthcheck")  # podman's inspect puts it beside Config
    assert isinstance(healthcheck, dict), "no HEALTHCHECK: built without --format docker?"
    assert healthcheck["Test"] == ["CMD", "kcoord", "health"]
    assert config["StopSignal"] in ("SIGTERM", "15")
    assert f"KCOORD_DATA_DIR={DATA}" in config["Env"]
    assert config["Entrypoint"] == ["kcoord"]
    # uvloop is what the server runs on, asyncpg is there for --cluster (the `cluster` extra), and the
    # installer is not shipped.
    probe = podman(
        "run", "--rm", *PODMAN_RUN_FLAGS, "--entrypoint", "python3", kcoord_image,
        "-c",
        "import kcoord.wiring.app as a, importlib.util as u, asyncpg; "
        "print(a._loop_factory().__module__, asyncpg.__name__, u.find_spec('pip'))",
    )  # fmt: skip
    assert probe.stdout.split() == ["uvloop", "asyncpg", "None"], probe.stdout


def test_offsets_survive_sigterm_and_restart_on_the_same_volume(containers: Containers) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    volume = containers.volume()
    started = time.monotonic()
    first = containers.run(port, volume)
    wait_healthy(first)
    FIGURES["cold start to healthy, empty volume, s (before podman run -> first passing check)"] = (
        time.monotonic() - started
    )

    assert client("produce", bootstrap, "orders", "60") == {"produced": 60}
    ends = client("ends", bootstrap, "orders")
    assert isinstance(ends, dict) and sum(ends.values()) == 60
    commits = {partition: max(end - 1, 0) for partition, end in ends.items()}
    client("commit", bootstrap, "billing", "orders", *(f"{p}={o}" for p, o in commits.items()))
    expected = {f"orders:{p}": o for p, o in commits.items()}
    assert client("offsets", bootstrap, "billing") == expected

    stop_started = time.monotonic()
    podman("stop", first, timeout=60)  # SIGTERM, SIGKILL after 10 s
    stopped = wait_exited(first)
    stop_seconds = time.monotonic() - stop_started
    FIGURES["podman stop to exit, s"] = stop_seconds
    text = logs(first)
    assert stopped["ExitCode"] == 0, f"exit {stopped['ExitCode']} (137: killed after 10 s)\n{text}"
    assert stop_seconds < 10, stop_seconds
    assert "received SIGTERM" in text and "snapshot written" in text, text
    assert not _error_lines(text) and "Traceback" not in text, text

    second = containers.run(port, volume)
    wait_healthy(second)
    assert client("offsets", bootstrap, "billing") == expected
    assert client("consume", bootstrap, "orders") == {"consumed": 60}
    assert re.search(r"groups loaded: groups=1 offsets=\d+", logs(second)), logs(second)


def test_unwritable_data_volume_is_one_clear_line_and_nonzero_exit(
    containers: Containers, tmp_path: Path
) -> None:
    data = tmp_path / "root-owned"
    data.mkdir(mode=0o755)  # owned by root; the image runs as uid 10001
    name = containers.run(free_port(), str(data))
    stopped = wait_exited(name)
    text = logs(name)
    assert stopped["ExitCode"] != 0, text
    errors = _error_lines(text)
    assert len(errors) == 1 and "Permission denied" in errors[0] and DATA in errors[0], text
    assert "Traceback" not in text, text


def test_data_dir_locked_by_another_container(containers: Containers) -> None:
    volume = containers.volume()
    holder = containers.run(free_port(), volume)
    wait_healthy(holder)
    intruder = containers.run(free_port(), volume)
    stopped = wait_exited(intruder)
    text = logs(intruder)
    assert stopped["ExitCode"] != 0, text
    errors = _error_lines(text)
    assert len(errors) == 1 and "lock" in errors[0].lower(), text
    assert "Traceback" not in text, text
    assert state(holder)["Status"] == "running"
    wait_healthy(holder)  # the owner is untouched


def test_bad_kcoord_setting_is_one_clear_line_and_nonzero_exit(containers: Containers) -> None:
    name = containers.run(free_port(), containers.volume(), env={"KCOORD_FSYNC": "sometimes"})
    stopped = wait_exited(name)
    text = logs(name).strip()
    assert stopped["ExitCode"] != 0, text
    assert text.splitlines() == [
        "kcoord: bad KCOORD_FSYNC='sometimes': expected always, interval[:<ms>] or never, got 'sometimes'"
    ], text


def test_health_fails_until_the_listener_answers(containers: Containers) -> None:
    """`kcoord health` against a port where nothing listens: exit 1 with one line, no traceback."""
    name = containers.run(free_port(), containers.volume())
    wait_healthy(name)
    dead = free_port()
    probe = podman("exec", name, "kcoord", "health", "--bootstrap", f"127.0.0.1:{dead}", check=False)
    assert probe.returncode == 1
    assert probe.stderr.strip().splitlines() == [
        f"kcoord health: 127.0.0.1:{dead} not answering: [Errno 111] Connection refused"
    ]
