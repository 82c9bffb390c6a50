"""kcoord in a container for tests: `KcoordContainer`, a testcontainers-python `DockerContainer`.

    from kcoord.testing.containers import KcoordContainer

    with KcoordContainer("kcoord:latest") as kcoord:
        producer = KafkaProducer(bootstrap_servers=kcoord.get_bootstrap_server())
        ...
        kcoord.reset()                                   # empty again, connections kept
        kcoord.fail("OffsetCommit", "NOT_COORDINATOR")   # the next commit is refused
        kcoord.advance(30)                               # session timeouts expire now
        kcoord.records("orders")                         # what was produced

`start()` returns once the server answers ApiVersions on the Kafka port (the listener binds only after
recovery) and its HTTP endpoint answers /readyz: no log line is awaited. The test controls
(`--enable-test-controls`) are on; the calls above are `kcoord.testing.http_controls.HttpControls`,
the same names and results as the pytest plugin's server object. Test-friendly settings are the
defaults (no initial rebalance delay, 1 s minimum session timeout, no fsync); `settings=` or
`with_settings(...)` take any `kcoord serve` flag as a keyword (`fsync="always"`).

Advertised addresses, without a start script: the server has two PLAINTEXT listeners and Kafka's
per-listener `advertised.listeners`, so each client is told the address it can reach:

- EXTERNAL, for clients on the host: container port 9092 published on a host port chosen free before
  start (a fixed mapping, so the advertised address is known when the container is created) and
  advertised as the engine's host (testcontainers' `get_container_host_ip()` logic, TC_HOST honoured)
  and that port. `get_bootstrap_server()` returns it.
- INTERNAL, for other containers on the same user-defined network: port 9093 advertised as the
  container's network alias (the first of `with_network_aliases(...)`, else a generated one).
  `get_internal_bootstrap_server()` returns it:

      with Network() as network, KcoordContainer().with_network(network).with_network_aliases("kafka"):
          app = DockerContainer("my-app").with_network(network).with_env("BOOTSTRAP", "kafka:9093")

  Containers on Docker's default bridge cannot resolve aliases: create a network, as above.

With host networking (`with_host_network()`, for engines or machines where the bridge may not be used;
podman's `netns = "host"`) nothing is published: both listeners and the HTTP endpoint bind free loopback
ports chosen before start, and host clients and other host-network containers use those. The engine
must then run on this machine (a remote DOCKER_HOST has its own loopback).

When the tests themselves run in a container next to the engine (testcontainers' "bridge_ip" connection
mode) the client would need the container's IP, which is unknown before start: set
TESTCONTAINERS_CONNECTION_MODE=gateway_ip (or TC_HOST), or use host networking.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from typing import Any, Self

from testcontainers.core.config import ConnectionMode
from testcontainers.core.container import DockerContainer
from testcontainers.core.exceptions import ContainerStartException

from kcoord.protocol.frames import decode_response, encode_request
from kcoord.testing.http_controls import HttpControls
from kcoord.testing.views import Fault, Group, Record, RequestEntry
from kcoord.wiring.config import Config

__all__ = ["KcoordContainer"]

KAFKA_PORT = 9092  # EXTERNAL listener in the container (bridge networks), published on a fixed host port
INTERNAL_PORT = 9093  # INTERNAL listener, advertised as the network alias to other containers
HTTP_PORT = 8080  # HTTP endpoint with the test controls
# What the plugin's session server uses too: tests should not wait for rebalances, sessions or disks.
TEST_SETTINGS: dict[str, object] = {
    "group_initial_rebalance_delay_ms": 0,
    "group_min_session_timeout_ms": 1000,
    "fsync": "never",
}
_SETTINGS = frozenset(f.name for f in dataclasses.fields(Config))
# Set by the container itself (listeners, the controls), or not spoken by HttpControls (TLS on HTTP).
_OWNED_SETTINGS = frozenset(
    {
        "listen",
        "advertised_listener",
        "listeners",
        "advertised_listeners",
        "listener_security_protocol_map",
        "http_listen",
        "enable_test_controls",
        "http_ssl_keystore_location",
    }
)
_API_VERSIONS = 18
_POLL_S = 0.05


class KcoordContainer(DockerContainer):
    """The project's image running `kcoord serve` with the HTTP test controls on (module docstring)."""

    def __init__(
        self,
        image: str = "kcoord:latest",
        *,
        settings: Mapping[str, object] | None = None,
        startup_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.startup_timeout = startup_timeout
        self.settings: dict[str, object] = dict(TEST_SETTINGS)
        self.with_settings(**(settings or {}))
        self._host_network = False
        self._external: tuple[str, int] | None = None  # advertised to host clients
        self._internal: tuple[str, int] | None = None  # advertised to other containers
        self._http_address: tuple[str, int] | None = None
        self._host_ports = (0, 0, 0)  # host networking: the EXTERNAL, INTERNAL and HTTP ports
        self._controls: HttpControls | None = None

    # -- configuration (before start) -------------------------------------------------------------------

    def with_settings(self, **settings: object) -> Self:
        """`kcoord serve` flags as keywords (`fsync="always"`, `num_partitions=3`, `True` a bare flag)."""
        unknown = sorted(set(settings) - _SETTINGS)
        if unknown:
            raise ValueError(
                f"KcoordContainer: unknown kcoord setting(s) {unknown}; see `kcoord serve --help`"
            )
        owned = sorted(set(settings) & _OWNED_SETTINGS)
        if owned:
            raise ValueError(f"KcoordContainer: {owned} are set by the container itself (module docstring)")
        self.settings.update(settings)
        return self

    def with_host_network(self) -> Self:
        """Share the host's network: listeners on free loopback ports, nothing published."""
        self._host_network = True
        return self

    def _configure(self) -> None:
        """Called by `start()` before the container is created: listeners, ports and environment."""
        self._http_address, self._controls = None, None  # a second start() picks new ports
        if self._host_network:
            if self._network is not None:
                raise ContainerStartException(
                    "KcoordContainer: host networking and with_network() exclude each other"
                )
            self._configure_host_network()
        else:
            self._configure_bridge()
        external, internal = self._external, self._internal
        assert external is not None and internal is not None
        env = {f"KCOORD_{name.upper()}": _env_value(value) for name, value in self.settings.items()}
        env.update(
            KCOORD_LISTEN="",  # the image's default; --listeners replaces it
            KCOORD_LISTENERS=f"EXTERNAL://{self._bind_host()}:{self._bind_ports()[0]},"
            f"INTERNAL://{self._bind_host()}:{self._bind_ports()[1]}",
            KCOORD_ADVERTISED_LISTENERS=f"EXTERNAL://{external[0]}:{external[1]},"
            f"INTERNAL://{internal[0]}:{internal[1]}",
            KCOORD_LISTENER_SECURITY_PROTOCOL_MAP="EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT",
            KCOORD_HTTP_LISTEN=f"{self._bind_host()}:{self._bind_ports()[2]}",
            KCOORD_ENABLE_TEST_CONTROLS="true",
        )
        self.env.update(env)

    def _configure_bridge(self) -> None:
        client = self.get_docker_client()
        if client.get_connection_mode() is ConnectionMode.bridge_ip:
            raise ContainerStartException(
                "KcoordContainer: the advertised address must be known before start, the container IP "
                "is not: set TESTCONTAINERS_CONNECTION_MODE=gateway_ip or TC_HOST, or use with_host_network()"
            )
        host_port = _free_ports("0.0.0.0")[0]
        self.with_bind_ports(KAFKA_PORT, host_port)
        self.with_exposed_ports(INTERNAL_PORT, HTTP_PORT)
        self._external = (client.host(), host_port)
        self._internal = (self._alias(), INTERNAL_PORT)

    def _configure_host_network(self) -> None:
        self.ports.clear()  # nothing is published on the host's own network
        self._kwargs["network_mode"] = "host"
        self._host_ports = _free_ports("127.0.0.1")
        self._external = ("127.0.0.1", self._host_ports[0])
        self._internal = ("127.0.0.1", self._host_ports[1])
        self._http_address = ("127.0.0.1", self._host_ports[2])
        # The image's HEALTHCHECK probes 127.0.0.1:9092 unless told the port.
        probe = ["CMD", "kcoord", "health", "--bootstrap", f"127.0.0.1:{self._host_ports[0]}"]
        self._kwargs["healthcheck"] = {"test": probe}

    def _bind_host(self) -> str:
        return "127.0.0.1" if self._host_network else "0.0.0.0"

    def _bind_ports(self) -> tuple[int, int, int]:
        return self._host_ports if self._host_network else (KAFKA_PORT, INTERNAL_PORT, HTTP_PORT)

    def _alias(self) -> str:
        """The network alias other containers use: the first given, else one generated and added."""
        if not self._network_aliases:
            self._network_aliases = [f"kcoord-{uuid.uuid4().hex[:8]}"]
        return self._network_aliases[0]

    # -- start: ready when ApiVersions answers -----------------------------------------------------------

    def start(self) -> Self:
        super().start()
        self._wait_ready()  # on failure, `with` (or the caller's stop()) removes the container
        return self

    def _wait_ready(self) -> None:
        """ApiVersions answered on the EXTERNAL listener, then /readyz (the HTTP endpoint opens just after
        the Kafka listeners); fails at once with the logs if the container exits."""
        deadline = time.monotonic() + self.startup_timeout
        host, port = self._kafka_address()
        while not _api_versions_answers(host, port):
            self._check_running(deadline, f"ApiVersions on {host}:{port}")
            time.sleep(_POLL_S)
        while not _http_ready(self.get_http_url()):
            self._check_running(deadline, f"{self.get_http_url()}/readyz")
            time.sleep(_POLL_S)

    def _check_running(self, deadline: float, waiting_for: str) -> None:
        container = self.get_wrapped_container()
        container.reload()
        if container.status not in ("created", "running"):
            raise ContainerStartException(f"kcoord exited ({container.status}):\n{_logs(self)}")
        if time.monotonic() > deadline:
            raise ContainerStartException(
                f"no answer to {waiting_for} after {self.startup_timeout} s:\n{_logs(self)}"
            )

    def _kafka_address(self) -> tuple[str, int]:
        """Where this process reaches the EXTERNAL listener (what it is advertised as)."""
        if self._external is None:
            raise ContainerStartException("KcoordContainer is not started")
        return self._external

    # -- addresses ----------------------------------------------------------------------------------------

    def get_bootstrap_server(self) -> str:
        """host:port for clients on the host (the EXTERNAL listener, as it advertises itself)."""
        host, port = self._kafka_address()
        return f"{host}:{port}"

    @property
    def bootstrap_servers(self) -> str:
        """The plugin's name for `get_bootstrap_server()`."""
        return self.get_bootstrap_server()

    def get_internal_bootstrap_server(self) -> str:
        """host:port for other containers on the same network (the INTERNAL listener)."""
        if self._internal is None:
            raise ContainerStartException("KcoordContainer is not started")
        return f"{self._internal[0]}:{self._internal[1]}"

    def get_http_url(self) -> str:
        """The HTTP endpoint (/metrics, /v1/groups, the test controls) as this process reaches it."""
        if self._http_address is None:
            self._http_address = (self.get_container_host_ip(), self.get_exposed_port(HTTP_PORT))
        return f"http://{self._http_address[0]}:{self._http_address[1]}"

    @property
    def controls(self) -> HttpControls:
        if self._controls is None:
            token = self.settings.get("http_bearer_token")
            self._controls = HttpControls(
                self.get_http_url(), bearer_token=None if token is None else str(token)
            )
        return self._controls

    # -- the plugin's server calls, over HTTP -------------------------------------------------------------

    def reset(self) -> float:
        return self.controls.reset()

    def advance(self, seconds: float) -> dict[str, int]:
        return self.controls.advance(seconds)

    def configure(self, **changes: object) -> dict[str, Any]:
        return self.controls.configure(**changes)

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        self.controls.create_topic(name, partitions, config)

    def records(self, topic: str) -> list[Record]:
        return self.controls.records(topic)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        return self.controls.committed(group)

    def group(self, group_id: str) -> Group | None:
        return self.controls.group(group_id)

    def wait_stable(self, group_id: str, timeout: float = 10.0) -> Group:
        return self.controls.wait_stable(group_id, timeout)

    def fail(
        self,
        api: str | int,
        error: str | int,
        count: int = 1,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
    ) -> Fault:
        return self.controls.fail(api, error, count, topic, partition, group)

    def delay(self, api: str | int, ms: int, count: int = 1) -> Fault:
        return self.controls.delay(api, ms, count)

    def disconnect(self, api: str | int, count: int = 1) -> Fault:
        return self.controls.disconnect(api, count)

    def fired(self) -> list[Fault]:
        return self.controls.fired()

    def faults(self) -> list[Fault]:
        return self.controls.faults()

    def clear_faults(self) -> None:
        self.controls.clear_faults()

    def requests(self, since: int = 0) -> list[RequestEntry]:
        return self.controls.requests(since)


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _free_ports(host: str) -> tuple[int, int, int]:
    """Three different ports free on `host` now (held together while picked, so never the same one);
    the engine or the server binds them a moment later, a race as with any port-0 pick."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(3):
            sock = stack.enter_context(socket.socket())
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
    return ports[0], ports[1], ports[2]


def _api_versions_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """One ApiVersions v0 round trip answered without error (a published port accepts connections before
    the server listens behind it, so only an answer counts)."""
    correlation_id = 1
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(
                encode_request(_API_VERSIONS, 0, correlation_id, {}, client_id="kcoord-testcontainers")
            )
            (size,) = struct.unpack(">i", _recv(sock, 4))
            got, body = decode_response(_API_VERSIONS, 0, _recv(sock, size))
    except Exception:  # refused, reset, timed out, closed early, undecodable: all mean "not yet"
        return False
    return got == correlation_id and body["error_code"] == 0


def _recv(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _http_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=1.0) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _logs(container: DockerContainer) -> str:
    try:
        out, err = container.get_logs()
    except Exception as exc:  # the logs are only a help for the error message
        return f"(no logs: {exc})"
    return (out + err).decode(errors="replace")[-4000:]
