"""Fixtures of the container tests: the tools, the locally built base image and the kcoord image
(built once per run), the containers a test creates (removed at its end) and a podman API socket
for Docker Compose; and for the KcoordContainer tests (kcoord.testing.containers), testcontainers pointed at
that socket and an image with a stock Kafka client. The images are built once per run, by the first
xdist worker that needs them (tests/built_once.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import built_once
from tests.container.engine import ensure_base_image, ensure_tools, inspect, podman
from tests.container.helpers import FIGURES, Containers
from tests.kcoord_process import REPO


def _required() -> bool:
    """In CI (or when asked) a missing engine is a failure, not a skip."""
    return os.environ.get("CI") == "true" or os.environ.get("KCOORD_CONTAINER_TESTS") == "required"


@pytest.fixture(scope="session")
def container_tools() -> None:
    reason = ensure_tools()
    if reason is not None:
        message = f"container tests: {reason}"
        if _required():
            pytest.fail(f"{message} (CI=true or KCOORD_CONTAINER_TESTS=required: not skipping)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def base_image(container_tools: None) -> str:
    return ensure_base_image()


def _build(name: str, context: Path, base_image: str) -> float:
    """`podman build` of `context` tagged `name` on the local base (docker format, so HEALTHCHECK is
    kept); the seconds it took."""
    started = time.monotonic()
    podman("build", "--format", "docker", "--network", "host", "--build-arg", f"BASE={base_image}",
           "--tag", name, str(context), timeout=900)  # fmt: skip
    return time.monotonic() - started


@pytest.fixture(scope="session")
def kcoord_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The top-level Dockerfile built once per run (tests/built_once.py): the xdist workers that need it
    wait for the first one's build instead of each building the same tree again."""
    name = "localhost/kcoord-test:latest"
    built = built_once.once(
        tmp_path_factory, "kcoord-image", lambda _: {"seconds": _build(name, REPO, base_image)}
    )
    FIGURES["image build seconds (once per run)"] = built["seconds"]
    size = int(inspect("image", name)["Size"])  # type: ignore[call-overload]
    base_size = int(inspect("image", base_image)["Size"])  # type: ignore[call-overload]
    FIGURES["image MB"] = size / 1e6
    FIGURES["image MB above base"] = (size - base_size) / 1e6
    FIGURES["base MB (debootstrap bookworm minbase + python3)"] = base_size / 1e6
    return name


@pytest.fixture
def containers(kcoord_image: str) -> Iterator[Containers]:
    made = Containers(kcoord_image)
    try:
        yield made
    finally:
        made.remove()


def _accepting(sock: Path) -> bool:
    """A Unix socket that takes a connection (its file alone may be there before the listen)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(sock))
        except OSError:
            return False
    return True


@pytest.fixture
def podman_socket(container_tools: None, tmp_path: Path) -> Iterator[str]:
    """`podman system service` serving the Docker API on a socket of this test; runc, explicit ulimits and
    host networking come from its containers.conf. Stopped by its PID at the end."""
    conf = tmp_path / "containers.conf"
    conf.write_text(
        '[engine]\nruntime = "runc"\n'
        '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]\nnetns = "host"\n'
    )
    sock = tmp_path / "podman.sock"
    log = (tmp_path / "podman-service.log").open("w")
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{sock}"],
        env={**os.environ, "CONTAINERS_CONF": str(conf)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        # the socket file appears at bind(), before the service listens: wait for a connection
        while not _accepting(sock):
            assert service.poll() is None, (tmp_path / "podman-service.log").read_text()
            assert time.monotonic() < deadline, "podman system service did not create its socket"
            time.sleep(0.05)
        yield f"unix://{sock}"
    finally:
        service.send_signal(signal.SIGTERM)
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()
        log.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("container figures")
        for key, value in FIGURES.items():
            terminalreporter.write_line(f"{key}: {value:.2f}")


# -- KcoordContainer (kcoord.testing.containers) through testcontainers on podman's Docker API --------
CLIENT_IMAGE = "localhost/kcoord-test-clients:latest"


@pytest.fixture(scope="session")
def testcontainers_ready(container_tools: None) -> None:
    try:
        from testcontainers.core.config import testcontainers_config
    except ImportError as exc:
        if _required():
            pytest.fail(f"testcontainers missing ({exc}) with CI=true or KCOORD_CONTAINER_TESTS=required")
        pytest.skip(f"testcontainers missing: {exc} (pip install kcoord[testing])")
    testcontainers_config.ryuk_disabled = True


@pytest.fixture
def docker_host(testcontainers_ready: None, podman_socket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """DOCKER_HOST for this test: podman's Docker-compatible API (testcontainers reads it per container)."""
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    return podman_socket


@pytest.fixture(scope="session")
def client_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """examples/compose's client image (stock kafka-python, nothing from kcoord) on the local base, built
    once per run as kcoord_image is."""
    context = REPO / "examples" / "compose"
    built = built_once.once(
        tmp_path_factory, "client-image", lambda _: {"seconds": _build(CLIENT_IMAGE, context, base_image)}
    )
    FIGURES["client image build seconds (once per run)"] = built["seconds"]
    return CLIENT_IMAGE
