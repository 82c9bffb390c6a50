"""A small blocking Kafka admin client over plain sockets, built on kcoord's own codec (`protocol/`).

One `Cluster` per command: it connects (with TLS and SASL when the command's --command-config says so:
kcoord/client_cli/client_config.py) to the first reachable bootstrap server, negotiates versions
with ApiVersions on every connection (the highest version both sides speak, as Kafka's
NetworkClient does), finds group coordinators with FindCoordinator and partition leaders with
Metadata, and keeps one connection per broker. Retriable coordinator errors (loading, not available,
not coordinator) are retried with a fresh FindCoordinator until the command's timeout.

Every failure a user can cause or meet (unreachable broker, timeout, an API the broker does not
speak) is a `ToolError` carrying a one-line message.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kcoord.client_cli.client_config import PLAINTEXT, ClientSecurity
from kcoord.client_cli.error_text import error_text
from kcoord.client_cli.sasl_client import SaslError, authenticate
from kcoord.protocol.errors import DecodeError, ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from kcoord.protocol.messages import REQUEST_SCHEMAS

__all__ = [
    "GROUP",
    "TRANSACTION",
    "Broker",
    "Cluster",
    "Connection",
    "Metadata",
    "ToolError",
    "TopicPartition",
    "error_text",
    "parse_bootstrap",
]

CLIENT_ID = "kcoord-groups"
T = TypeVar("T")
TopicPartition = tuple[str, int]

API_VERSIONS, METADATA, LIST_OFFSETS, FIND_COORDINATOR = 18, 3, 2, 10
GROUP, TRANSACTION = 0, 1  # FindCoordinator key types (CoordinatorType)
_KEY_KINDS = {GROUP: "group", TRANSACTION: "transactional id"}
_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">ih")  # correlation id, then the error code every ApiVersions layout starts with
# Errors after which a coordinator request is retried against a freshly looked-up coordinator
# (Kafka's AdminClient treats them as retriable: CoordinatorLoadInProgress, CoordinatorNotAvailable,
# NotCoordinator).
COORDINATOR_RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class ToolError(Exception):
    """A failure to report to the user in one line (the command exits non-zero)."""


def parse_bootstrap(value: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` (IPv6 as `[::1]:9092`); ToolError for anything else."""
    servers = []
    for item in (part.strip() for part in value.split(",")):
        host, sep, port = item.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ToolError(f"invalid --bootstrap-server {value!r}: expected HOST:PORT[,HOST:PORT...]")
        servers.append((host, int(port)))
    return servers


def _api_name(api_key: int) -> str:
    schema = REQUEST_SCHEMAS.get(api_key)
    return schema.name.removesuffix("Request") if schema is not None else f"api {api_key}"


class Connection:
    """One blocking socket to one broker, with the API versions negotiated on it."""

    def __init__(self, host: str, port: int, timeout: float, security: ClientSecurity = PLAINTEXT) -> None:
        self.address = f"{host}:{port}"
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._sock = self._open(host, port, security.ssl_context)
        self.versions: dict[int, tuple[int, int]] = {}
        self.versions = self._negotiate()
        if security.sasl is not None:  # after ApiVersions, as SaslClientAuthenticator does
            try:
                authenticate(self, security.sasl())
            except SaslError as exc:
                self.close()
                raise ToolError(str(exc)) from None

    def _open(self, host: str, port: int, context: ssl.SSLContext | None) -> socket.socket:
        try:
            sock = socket.create_connection((host, port), timeout=self.timeout)
        except OSError as exc:
            raise ToolError(f"cannot connect to {self.address}: {exc.strerror or exc}") from None
        sock.settimeout(self.timeout)
        if context is None:
            return sock
        try:
            return context.wrap_socket(sock, server_hostname=host)
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            raise ToolError(
                f"TLS handshake with {self.address} failed: certificate verify failed: {exc.verify_message}"
            ) from None
        except (ssl.SSLError, OSError) as exc:
            sock.close()
            raise ToolError(f"TLS handshake with {self.address} failed: {exc}") from None

    def close(self) -> None:
        self._sock.close()

    def version(self, api_key: int, newest: int | None = None) -> int:
        """The highest version of `api_key` both we (up to `newest`) and the broker speak."""
        ours = REQUEST_SCHEMAS[api_key].versions
        assert ours is not None
        high = ours[-1] if newest is None else min(ours[-1], newest)
        theirs = self.versions.get(api_key)
        if theirs is None or max(theirs[0], ours[0]) > min(theirs[1], high):
            raise ToolError(
                f"the broker at {self.address} does not support {_api_name(api_key)} "
                f"(it offers {theirs or 'none'}; this tool speaks {ours[0]}..{high})"
            )
        return min(theirs[1], high)

    def request(self, api_key: int, body: Mapping[str, Any], version: int | None = None) -> dict[str, Any]:
        """Send one request and return the decoded response body."""
        if version is None:
            version = self.version(api_key)
        payload = self._round_trip(api_key, version, body)
        try:
            correlation_id, response = decode_response(api_key, version, payload)
        except DecodeError as exc:
            raise ToolError(
                f"{self.address} sent an undecodable {_api_name(api_key)} response: {exc}"
            ) from None
        del correlation_id  # checked in _round_trip
        return response

    def _negotiate(self) -> dict[int, tuple[int, int]]:
        """ApiVersions at our newest version; a broker that does not know it answers error 35 with
        its own range in the v0 layout (KIP-511, ApiVersionsRequest.getErrorResponse), then we retry
        at the highest version it named."""
        ours = REQUEST_SCHEMAS[API_VERSIONS].versions
        assert ours is not None
        version = ours[-1]
        for _ in range(2):
            body = {"client_software_name": CLIENT_ID, "client_software_version": "1"}
            payload = self._round_trip(API_VERSIONS, version, body)
            try:
                _cid, error = _HEAD.unpack_from(payload)
                layout = 0 if error == ErrorCode.UNSUPPORTED_VERSION else version
                response = decode_response(API_VERSIONS, layout, payload)[1]
            except (DecodeError, struct.error) as exc:
                raise ToolError(
                    f"{self.address} does not answer ApiVersions like a Kafka broker: {exc}"
                ) from None
            ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
            if error == ErrorCode.NONE:
                return ranges
            if error != ErrorCode.UNSUPPORTED_VERSION or API_VERSIONS not in ranges:
                break
            version = min(version, ranges[API_VERSIONS][1])
        raise ToolError(f"{self.address} refused ApiVersions: {error_text(error)}")

    def _round_trip(self, api_key: int, version: int, body: Mapping[str, Any]) -> bytes:
        correlation_id = next(self._ids)
        frame = encode_request(api_key, version, correlation_id, body, client_id=CLIENT_ID)
        try:
            self._sock.sendall(frame)
            (size,) = _SIZE.unpack(self._recv(4))
            payload = self._recv(size)
        except TimeoutError:
            raise ToolError(
                f"no answer to {_api_name(api_key)} from {self.address} within {self.timeout:g} s"
            ) from None
        except OSError as exc:
            raise ToolError(f"lost the connection to {self.address}: {exc.strerror or exc}") from None
        (got,) = _SIZE.unpack_from(payload)
        if got != correlation_id:
            raise ToolError(f"{self.address} answered correlation id {got}, expected {correlation_id}")
        return payload

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(0, "connection closed by the broker")
            buf += chunk
        return bytes(buf)


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Metadata:
    brokers: dict[int, Broker] = field(default_factory=dict)
    # topic -> partition -> leader node id (-1 when the partition has no leader)
    topics: dict[str, dict[int, int]] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)


class Cluster:
    """Connections to the brokers of one cluster, found from the bootstrap servers."""

    def __init__(
        self, bootstrap: Iterable[tuple[str, int]], timeout: float, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self.timeout = timeout
        self.security = security
        self._connections: dict[tuple[str, int], Connection] = {}
        self._coordinators: dict[tuple[int, str], Broker] = {}
        failures = []
        for host, port in bootstrap:
            try:
                self.bootstrap = self._connect(host, port)
                break
            except ToolError as exc:
                failures.append(str(exc))
        else:
            raise ToolError("; ".join(failures) or "no bootstrap server given")

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self, host: str, port: int) -> Connection:
        connection = self._connections.get((host, port))
        if connection is None:
            connection = self._connections[host, port] = Connection(host, port, self.timeout, self.security)
        return connection

    def connection(self, broker: Broker) -> Connection:
        return self._connect(broker.host, broker.port)

    # -- metadata ------------------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None) -> Metadata:
        """Brokers and the leaders of `topics` (None: every topic). Never creates a topic."""
        conn = self.bootstrap
        version = conn.version(METADATA)
        names = None if topics is None else sorted(set(topics))
        if names is None:
            requested: list[dict[str, Any]] | None = [] if version == 0 else None
        else:
            requested = [{"name": name} for name in names]
            if not requested:
                return Metadata(brokers=self._brokers(conn, version))
        response = conn.request(METADATA, {"topics": requested, "allow_auto_topic_creation": False}, version)
        result = Metadata(brokers=_brokers_of(response))
        for topic in response["topics"]:
            if topic["error_code"] != ErrorCode.NONE:
                result.topic_errors[topic["name"]] = topic["error_code"]
                continue
            result.topics[topic["name"]] = {p["partition_index"]: p["leader_id"] for p in topic["partitions"]}
        return result

    def _brokers(self, conn: Connection, version: int) -> dict[int, Broker]:
        response = conn.request(METADATA, {"topics": [], "allow_auto_topic_creation": False}, version)
        return _brokers_of(response)

    def brokers(self) -> list[Broker]:
        conn = self.bootstrap
        return sorted(self._brokers(conn, conn.version(METADATA)).values(), key=lambda b: b.node_id)

    # -- coordinators ----------------------------------------------------------------------------------

    def coordinator(self, key: str, refresh: bool = False, key_type: int = GROUP) -> Broker:
        """The coordinator of a group (key type 0) or a transactional id (key type 1): FindCoordinator,
        retried while unavailable."""
        if not refresh and (key_type, key) in self._coordinators:
            return self._coordinators[key_type, key]
        conn = self.bootstrap
        version = conn.version(FIND_COORDINATOR)
        deadline = time.monotonic() + self.timeout
        while True:
            if version >= 4:  # KIP-699: batched keys
                response = conn.request(
                    FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [key]}, version
                )
                found = response["coordinators"][0]
            else:
                found = conn.request(FIND_COORDINATOR, {"key": key, "key_type": key_type}, version)
            error = found["error_code"]
            if error == ErrorCode.NONE:
                broker = Broker(found["node_id"], found["host"], found["port"])
                self._coordinators[key_type, key] = broker
                return broker
            if error not in COORDINATOR_RETRIABLE or time.monotonic() >= deadline:
                raise ToolError(
                    f"cannot find the coordinator of {_KEY_KINDS.get(key_type, 'key')} '{key}': "
                    f"{error_text(error)}"
                )
            time.sleep(0.1)

    def with_coordinator(
        self,
        key: str,
        call: Callable[[Connection], T],
        retriable: Callable[[T], bool],
        key_type: int = GROUP,
    ) -> T:
        """`call(connection to the coordinator of key)`, again with a fresh FindCoordinator while
        `retriable(result)` says the coordinator moved or is loading (bounded by the timeout)."""
        deadline = time.monotonic() + self.timeout
        refresh = False
        while True:
            result = call(self.connection(self.coordinator(key, refresh, key_type)))
            if not retriable(result) or time.monotonic() >= deadline:
                return result
            refresh = True
            time.sleep(0.1)

    # -- log offsets -----------------------------------------------------------------------------------

    def list_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int, metadata: Metadata
    ) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets at each partition's leader: tp -> (error code, offset; -1 when none).

        `timestamp` is -1 (latest), -2 (earliest) or a time in ms (the first offset whose record time is
        at or after it)."""
        by_leader: dict[int, list[TopicPartition]] = {}
        result: dict[TopicPartition, tuple[int, int]] = {}
        for tp in partitions:
            leader = metadata.topics.get(tp[0], {}).get(tp[1], -1)
            if leader < 0 or leader not in metadata.brokers:
                result[tp] = (ErrorCode.LEADER_NOT_AVAILABLE, -1)
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            result.update(self._list_offsets_at(metadata.brokers[leader], tps, timestamp))
        return result

    def _list_offsets_at(
        self, broker: Broker, tps: list[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, tuple[int, int]]:
        conn = self.connection(broker)
        version = conn.version(LIST_OFFSETS)
        topics: dict[str, list[dict[str, Any]]] = {}
        for topic, partition in tps:
            topics.setdefault(topic, []).append({"partition_index": partition, "timestamp": timestamp})
        body = {
            "replica_id": -1,
            "isolation_level": 0,  # read_uncommitted, ListOffsetsOptions' default
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        }
        response = conn.request(LIST_OFFSETS, body, version)
        result: dict[TopicPartition, tuple[int, int]] = {}
        for topic in response["topics"]:
            for p in topic["partitions"]:
                if version == 0:
                    offset = p["old_style_offsets"][0] if p["old_style_offsets"] else -1
                else:
                    offset = p["offset"]
                result[topic["name"], p["partition_index"]] = (p["error_code"], offset)
        return result


def _brokers_of(response: Mapping[str, Any]) -> dict[int, Broker]:
    return {b["node_id"]: Broker(b["node_id"], b["host"], b["port"]) for b in response["brokers"]}
