"""Named listeners as Kafka configures them: `listeners`, `advertised.listeners`,
`listener.security.protocol.map` (SocketServerConfigs; parsed like CoreUtils.listenerListToEndPoints).

`PLAINTEXT://0.0.0.0:9092,SASL_SSL://:9094` binds two sockets; a name that is not a security protocol
(`INTERNAL://:9095`) needs a map entry (`INTERNAL:SASL_SSL`). The map defaults to Kafka's: each
security protocol mapped to itself. A listener without an advertised entry advertises its bound
address, with the wildcard host replaced by 127.0.0.1 (a client cannot connect to 0.0.0.0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "SECURITY_PROTOCOLS",
    "Endpoint",
    "Listener",
    "parse_endpoints",
    "parse_protocol_map",
    "resolve_listeners",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's uriParseExp: NAME://host:port, host empty (all interfaces), a name, or [v6].
_ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One `NAME://host:port` entry; the name is upper case as Kafka's ListenerName.normalised."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Listener:
    """A socket to bind, its security protocol and what it advertises (None: derive from the bound port)."""

    name: str
    security_protocol: str
    host: str
    port: int
    advertised: tuple[str, int] | None = None

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_endpoints(text: str) -> tuple[Endpoint, ...]:
    """`NAME://host:port[,NAME://host:port...]`; ValueError on a malformed entry or a repeated name."""
    endpoints: list[Endpoint] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        match = _ENDPOINT.match(entry)
        if match is None or not 0 <= int(match.group(3)) <= 65535:
            raise ValueError(f"expected NAME://host:port, got {entry!r}")
        endpoints.append(Endpoint(match.group(1).upper(), match.group(2), int(match.group(3))))
    names = [endpoint.name for endpoint in endpoints]
    if not endpoints or len(set(names)) != len(names):
        raise ValueError(f"expected at least one listener and each name once, got {text!r}")
    return tuple(endpoints)


def parse_protocol_map(text: str) -> tuple[tuple[str, str], ...]:
    """`NAME:PROTOCOL[,NAME:PROTOCOL...]` (listener.security.protocol.map)."""
    pairs: list[tuple[str, str]] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        if not sep or not name or protocol.upper() not in SECURITY_PROTOCOLS:
            raise ValueError(f"expected NAME:{'|'.join(SECURITY_PROTOCOLS)}, got {entry!r}")
        pairs.append((name.strip().upper(), protocol.upper()))
    return tuple(pairs)


def resolve_listeners(
    listeners: tuple[Endpoint, ...],
    advertised: tuple[Endpoint, ...] | None,
    protocol_map: tuple[tuple[str, str], ...] | None,
) -> tuple[Listener, ...]:
    """Join the three settings as KafkaConfig does; ValueError says what is inconsistent."""
    mapping = dict(protocol_map) if protocol_map is not None else {p: p for p in SECURITY_PROTOCOLS}
    by_name = {endpoint.name: endpoint for endpoint in advertised or ()}
    unknown = set(by_name) - {endpoint.name for endpoint in listeners}
    if unknown:
        raise ValueError(f"advertised listeners {sorted(unknown)} are not among the listeners")
    resolved: list[Listener] = []
    for endpoint in listeners:
        protocol = mapping.get(endpoint.name)
        if protocol is None:
            raise ValueError(f"listener {endpoint.name} has no entry in the security protocol map")
        shown = by_name.get(endpoint.name)
        resolved.append(
            Listener(
                endpoint.name,
                protocol,
                endpoint.host or "0.0.0.0",
                endpoint.port,
                None if shown is None else (shown.host, shown.port),
            )
        )
    return tuple(resolved)
