"""Fixtures of the KcoordContainer tests: tests/container's engine fixtures (podman, the locally built
base and kcoord images, a `podman system service` socket serving the Docker API), imported rather than
copied, plus testcontainers pointed at that socket and an image with a stock Kafka client.

They skip like the other container tests when podman (or testcontainers) is missing, unless CI=true or
KCOORD_CONTAINER_TESTS=required. Ryuk (testcontainers' reaper, a registry image) is off: registry images
cannot be pulled here, and every test removes its containers itself.
"""

from __future__ import annotations

import time

import pytest

from tests.container.conftest import _required, base_image, container_tools, kcoord_image, podman_socket
from tests.container.engine import podman
from tests.container.helpers import FIGURES
from tests.kcoord_process import REPO

__all__ = ["base_image", "client_image", "container_tools", "docker_host", "kcoord_image", "podman_socket"]

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
def client_image(base_image: str) -> str:
    """examples/compose's client image (stock kafka-python, nothing from kcoord) on the local base."""
    started = time.monotonic()
    podman(
        "build",
        "--format",
        "docker",
        "--network",
        "host",
        "--build-arg",
        f"BASE={base_image}",
        "--tag",
        CLIENT_IMAGE,
        str(REPO / "examples" / "compose"),
        timeout=900,
    )
    FIGURES["client image build seconds"] = time.monotonic() - started
    return CLIENT_IMAGE
