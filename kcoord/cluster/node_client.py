"""How a node calls another (transaction markers, partition verification): on the inter-broker listener,
with this node's own credentials (issue 35 item 4).

Kafka's brokers talk to each other on `inter.broker.listener.name` (KafkaConfig; by default the listener
of `security.inter.broker.protocol`), as a client of that listener: TLS with the broker's own keystore
and truststore (`listener.name.<name>.ssl.*`, the same files as its server side), SASL with
`sasl.mechanism.inter.broker.protocol` and the listener's client login
(`listener.name.<name>.<mechanism>.sasl.jaas.config`). The peer authenticates the node like any client
and authorizes it per request: WriteTxnMarkers and the broker form of AddPartitionsToTxn (v4+) need
CLUSTER_ACTION on the cluster (`KafkaApis.handleWriteTxnMarkersRequest`,
`handleAddPartitionsToTxnRequest`), the only ACL a node's principal needs here.

Here: `--inter-broker-listener-name` (default the first listener, unauthenticated as before when that is
PLAINTEXT), `--sasl-mechanism-inter-broker-protocol` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with
`--inter-broker-sasl-username` / `--inter-broker-sasl-password`, and on an SSL or SASL_SSL listener the
node's `--ssl-keystore-location` as its client certificate (mTLS) and `--ssl-truststore-location` for the
peers' (host names checked, Kafka's default `ssl.endpoint.identification.algorithm=https`). A setting
that cannot work is refused before the node starts (`check`: one line, exit 1).

Each call is one fresh connection (SaslHandshake v1 + SaslAuthenticate, then the request), as before;
SCRAM's salted password is cached per salt and iteration count, so the PBKDF2 runs once per peer.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import ssl
import struct
from collections.abc import Callable
from typing import Any

from kcoord.broker.security.listeners import Listener
from kcoord.client_cli.sasl_client import (
    PlainClient,
    SaslError,
    SaslMechanismClient,
    ScramClient,
    salted_password,
)
from kcoord.protocol.frames import decode_response, encode_request
from kcoord.wiring.config import Config

__all__ = ["NodeAuthFailed", "NodeClient", "check", "node_client"]

TIMEOUT_S = 10.0
CLIENT_ID = "kcoord-node"
_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36
_SIZE = struct.Struct(">i")
_ids = itertools.count(1)
_salted = functools.lru_cache(maxsize=64)(salted_password)

SaslLogin = Callable[[], SaslMechanismClient]


class NodeAuthFailed(ConnectionError):
    """The peer refused this node's credentials (a ConnectionError: the callers' retriable path)."""


class NodeClient:
    """Calls to other nodes on `listener`: TLS with `tls`, SASL with a fresh `sasl()` stepper per call."""

    def __init__(
        self, listener: str, tls: ssl.SSLContext | None = None, sasl: SaslLogin | None = None
    ) -> None:
        self.listener = listener
        self._tls = tls
        self._sasl = sasl

    async def call(
        self, host: str, port: int, api_key: int, version: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        """One request on a fresh connection to another node; its response body."""
        opened = asyncio.open_connection(
            host, port, ssl=self._tls, server_hostname=host if self._tls else None
        )
        reader, writer = await asyncio.wait_for(opened, TIMEOUT_S)
        try:
            if self._sasl is not None:
                await _login(reader, writer, self._sasl(), f"{host}:{port}")
            return await _round_trip(reader, writer, api_key, version, body)
        finally:
            writer.close()


async def _round_trip(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    api_key: int,
    version: int,
    body: dict[str, Any],
) -> dict[str, Any]:
    correlation_id = next(_ids)
    writer.write(encode_request(api_key, version, correlation_id, body, client_id=CLIENT_ID))
    await writer.drain()
    (size,) = _SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), TIMEOUT_S))
    got, response = decode_response(
        api_key, version, await asyncio.wait_for(reader.readexactly(size), TIMEOUT_S)
    )
    if got != correlation_id:
        raise ConnectionError(f"correlation id {got}, expected {correlation_id}")
    return response


async def _login(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: SaslMechanismClient, peer: str
) -> None:
    """SaslHandshake v1, then SaslAuthenticate v1 until done (Kafka's SaslClientAuthenticator; a node
    skips ApiVersions, which a SASL listener allows)."""
    handshake = await _round_trip(reader, writer, _SASL_HANDSHAKE, 1, {"mechanism": client.mechanism})
    if handshake["error_code"]:
        enabled = ", ".join(handshake["mechanisms"]) or "none"
        raise NodeAuthFailed(f"{peer} refused SASL mechanism {client.mechanism} (enabled: {enabled})")
    token: bytes | None = client.initial()
    try:
        while token is not None:
            answer = await _round_trip(reader, writer, _SASL_AUTHENTICATE, 1, {"auth_bytes": token})
            if answer["error_code"]:
                reason = answer.get("error_message") or f"error {answer['error_code']}"
                raise NodeAuthFailed(f"{peer} refused this node's {client.mechanism} login: {reason}")
            token = client.respond(answer["auth_bytes"])
    except SaslError as exc:
        raise NodeAuthFailed(f"{peer}: {exc}") from None


def inter_broker_listener(config: Config) -> Listener:
    """The listener nodes call each other on; ValueError naming the flag when it is not one of ours."""
    listeners = config.resolved_listeners()
    name = config.inter_broker_listener_name
    if name is None:
        return listeners[0]
    for listener in listeners:
        if listener.name == name.upper():  # listener names are upper case (listeners.parse_endpoints)
            return listener
    names = ", ".join(listener.name for listener in listeners)
    raise ValueError(f"--inter-broker-listener-name {name} is not a listener of this node ({names})")


def check(config: Config) -> None:
    """The inter-broker settings must fit the listener (KafkaConfig's validation, in words); ValueError
    with one line otherwise."""
    listener = inter_broker_listener(config)
    user, password = config.inter_broker_sasl_username, config.inter_broker_sasl_password
    mechanism = config.sasl_mechanism_inter_broker_protocol
    if not listener.uses_sasl:
        if user is not None or password is not None:
            raise ValueError(
                f"--inter-broker-sasl-username/--inter-broker-sasl-password need a SASL inter-broker "
                f"listener; {listener.name} is {listener.security_protocol}"
            )
        return
    if user is None or password is None:
        raise ValueError(
            f"the inter-broker listener {listener.name} is {listener.security_protocol}: nodes need "
            "--inter-broker-sasl-username and --inter-broker-sasl-password (or --inter-broker-listener-name "
            "naming a PLAINTEXT or SSL listener)"
        )
    if mechanism not in config.sasl_enabled_mechanisms:
        raise ValueError(
            f"--sasl-mechanism-inter-broker-protocol {mechanism} is not in --sasl-enabled-mechanisms "
            f"({','.join(config.sasl_enabled_mechanisms)})"
        )


def node_client(config: Config) -> NodeClient:
    """This node's client of its peers, from `config` (already `check`ed)."""
    listener = inter_broker_listener(config)
    tls = _tls_context(config) if listener.uses_tls else None
    sasl: SaslLogin | None = None
    user, password = config.inter_broker_sasl_username, config.inter_broker_sasl_password
    if listener.uses_sasl and user is not None and password is not None:
        sasl = _sasl_login(config.sasl_mechanism_inter_broker_protocol, user, password)
    return NodeClient(listener.name, tls, sasl)


def _sasl_login(mechanism: str, user: str, password: str) -> SaslLogin:
    if mechanism == "PLAIN":
        return lambda: PlainClient(user, password)
    return lambda: ScramClient(mechanism, user, password, salt_password=_salted)


def _tls_context(config: Config) -> ssl.SSLContext:
    """A client context: the peers checked against the truststore (the system's CAs without one), this
    node's keystore presented as its certificate (mTLS where the listener asks for one)."""
    truststore = config.ssl_truststore_location
    context = ssl.create_default_context(cafile=None if truststore is None else str(truststore))
    if config.ssl_keystore_location is not None:
        context.load_cert_chain(str(config.ssl_keystore_location), password=config.ssl_key_password)
    return context
