"""Asking Kafka and kcoord the same thing and comparing the answers field by field.

Both sides are spoken to on raw sockets through kcoord's own codec (`kcoord.protocol.frames`), at a
version both serve. Before comparing, what legitimately differs between two brokers is normalised
away (VOLATILE: node ids, ports, cluster and topic ids, throttle times, timestamps, member ids learned
by a scenario); what remains is compared path by path, and the paths a row of the KNOWN table in
tests/oracle/known.py matches are dropped. Lists of structs are matched by their natural key (a name,
an index) so that order alone never counts as a difference, as clients key them too.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.protocol.frames import decode_response, encode_request
from tests.kcoord_process import recv_exactly
from tests.oracle.known import KNOWN, Known

__all__ = ["ABSENT", "Body", "Pair", "Side", "assert_same", "differences", "normalize", "unexplained"]

ABSENT = "<absent>"
# Fields whose value is a broker's own and never comparable: replaced by a placeholder on both sides.
# (Ids a scenario must tell apart are aliased per side instead: Side.alias; never small integers.)
VOLATILE = frozenset(
    {
        "throttle_time_ms",
        "cluster_id",
        "topic_id",
        "node_id",
        "broker_id",
        "producer_id",
        "leader_id",
        "controller_id",
        "port",
        "coordinator_id",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "log_append_time_ms",
        "current_state_timestamp",
        "finalized_features_epoch",
    }
)
# The natural key of a struct in a list, first match wins.
KEYS = ("api_key", "name", "topic", "partition_index", "partition", "index", "group_id", "member_id")


@dataclass
class Side:
    """One broker: a connection and the aliases of the ids it made up (member ids, producer ids)."""

    name: str
    sock: socket.socket
    aliases: dict[Any, str] = field(default_factory=dict)
    correlation_id: int = 0
    learned: dict[str, Any] = field(default_factory=dict)  # values a scenario keeps per side (epochs)

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.receive(api_key, version, self.send(api_key, version, body))

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> int:
        """Send without waiting (a request that parks); its correlation id."""
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, body, client_id="oracle"))
        return self.correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        size = int.from_bytes(recv_exactly(self.sock, 4), "big")
        got, response = decode_response(api_key, version, recv_exactly(self.sock, size))
        assert got == correlation_id, (self.name, got, correlation_id)
        return response

    def alias(self, value: Any, placeholder: str) -> None:
        """From now on `value` reads as `placeholder` in this side's answers (e.g. a member id)."""
        self.aliases[value] = placeholder

    def real(self, placeholder: str) -> Any:
        """This side's own value behind `placeholder` (to put in its next request)."""
        return next(value for value, name in self.aliases.items() if name == placeholder)


# A request body, or a function of the side for bodies that carry a side's own ids (member ids).
Body = Mapping[str, Any] | Callable[[Side], Mapping[str, Any]]


def _body(body: Body, side: Side) -> Mapping[str, Any]:
    return body(side) if callable(body) else body


@dataclass
class Pair:
    """The same requests to Kafka (`kafka`) and to kcoord (`kcoord`)."""

    kafka: Side
    kcoord: Side

    def ask(self, api_key: int, version: int, body: Body) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            self.kafka.call(api_key, version, _body(body, self.kafka)),
            self.kcoord.call(api_key, version, _body(body, self.kcoord)),
        )

    def compare(self, api: str, api_key: int, version: int, body: Body) -> list[str]:
        """Send `body` to both; the differences no KNOWN row explains."""
        kafka, kcoord = self.ask(api_key, version, body)
        return unexplained(api, self.diff(kafka, kcoord))

    def diff(self, kafka: Any, kcoord: Any) -> list[tuple[str, Any, Any]]:
        return differences(normalize(kafka, self.kafka.aliases), normalize(kcoord, self.kcoord.aliases))

    def close(self) -> None:
        self.kafka.sock.close()
        self.kcoord.sock.close()


def normalize(value: Any, aliases: Mapping[Any, str] | None = None, key: str = "") -> Any:
    """`value` with VOLATILE fields replaced, aliases applied and lists of structs keyed."""
    aliases = aliases or {}
    if key in VOLATILE:
        return f"<{key}>"
    if isinstance(value, Mapping):
        return {k: normalize(v, aliases, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [normalize(v, aliases, key) for v in value]
        return _keyed(items) if items and all(isinstance(v, dict) for v in items) else items
    if isinstance(value, str | int) and not isinstance(value, bool) and value in aliases:
        return aliases[value]
    return value


def _keyed(items: list[dict[str, Any]]) -> dict[str, Any] | list[Any]:
    for name in KEYS:
        values = [item.get(name) for item in items]
        if all(v is not None for v in values) and len(set(map(repr, values))) == len(values):
            return {f"{name}={v}": item for v, item in zip(values, items, strict=True)}
    return items


def differences(kafka: Any, kcoord: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, Kafka's value, kcoord's value) for every leaf that differs; ABSENT for a missing one."""
    if isinstance(kafka, dict) and isinstance(kcoord, dict):
        found: list[tuple[str, Any, Any]] = []
        for name in list(kafka) + [k for k in kcoord if k not in kafka]:
            sub = f"{path}.{name}" if path else str(name)
            found += differences(kafka.get(name, ABSENT), kcoord.get(name, ABSENT), sub)
        return found
    if isinstance(kafka, list) and isinstance(kcoord, list) and len(kafka) == len(kcoord):
        found = []
        for i, (a, b) in enumerate(zip(kafka, kcoord, strict=True)):
            found += differences(a, b, f"{path}[{i}]")
        return found
    return [] if kafka == kcoord else [(path, _short(kafka), _short(kcoord))]


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 1000 else text[:1000] + "..."


def explained_by(api: str, path: str, kafka: Any, rows: Iterable[Known] = KNOWN) -> Known | None:
    for row in rows:
        if row.api == api and re.fullmatch(row.path, path) and re.search(row.when, str(kafka)):
            return row
    return None


def unexplained(api: str, found: Iterable[tuple[str, Any, Any]]) -> list[str]:
    """The differences of `api` that no KNOWN row explains, one readable line each."""
    return [
        f"{api} {path}: kafka={a!r} kcoord={b!r}"
        for path, a, b in found
        if explained_by(api, path, a) is None
    ]


def assert_same(found: list[str]) -> None:
    """No unexplained difference; else every one of them, in full, as the failure."""
    assert not found, "differences from Kafka 4.3:\n" + "\n".join(found)
