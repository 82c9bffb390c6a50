"""The loads of bench.security (issue 25): TLS against plaintext, SCRAM authentications, ACL checks.

Every load returns its rate next to the server's CPU per unit (from /proc/PID/stat); the driver and
the report are in bench.security.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Callable
from typing import Any

from bench.coordinator import (
    ERR_NONE,
    HEARTBEAT_V,
    Conn,
    call,
    connect,
    create_topic,
    form_group,
    heartbeat_error,
    heartbeat_frames,
    run_load,
)
from bench.dataplane import MIB, run_role
from bench.dataplane import create_topic as create_topic_with_librdkafka
from kcoord.client_cli.sasl_client import ScramClient, salted_password
from kcoord.coordinator.metadata.acl_model import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.kcoord_process import ServerProcess

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, CREATE_ACLS = 18, 17, 36, 30
ANONYMOUS = "User:ANONYMOUS"  # every client of a PLAINTEXT listener
GROUP_AUTHORIZATION_FAILED = 30


# -- heartbeats (bench.coordinator's raw-socket load), over any listener ----------------------------------


async def heartbeat_groups(
    port: int, groups: int, per_group: int, connections: int
) -> tuple[Any, list[Conn]]:
    """Form `groups` x `per_group` members (one connection each, left open as real members keep
    theirs) and return their Heartbeat frames spread over `connections`."""
    topic = "bench-heartbeats"
    await create_topic(port, topic, 64)
    conns = await connect(port, groups * per_group)
    formed = await asyncio.gather(*(
        form_group(conns[g * per_group : (g + 1) * per_group], f"hb-{g}", topic, 1.0, 60)
        for g in range(groups)
    ))  # fmt: skip
    return await heartbeat_frames(formed, connections), conns


async def pipelined(
    server: ServerProcess, frames: Any, window: int, seconds: float, error_of: Callable[[bytes], int],
    port: int | None = None, tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:  # fmt: skip
    """bench.coordinator.run_load (warm-up of min(1 s, seconds)): requests/s, latency, server CPU each."""
    result = await run_load(server, frames, window, error_of, min(1.0, seconds), seconds, port, tls)
    # the error count (the median of counts over rounds); which codes: the first round's text
    return dict(result.__dict__, errors=sum(result.errors.values()), error_codes=str(result.errors))


async def heartbeats(
    server: ServerProcess,
    frames: Any,
    window: int,
    seconds: float,
    port: int | None,
    tls: ssl.SSLContext | None,
) -> dict[str, Any]:
    return await pipelined(server, frames, window, seconds, heartbeat_error, port, tls)


# -- produce with librdkafka (bench.dataplane's produce role), PLAINTEXT or SSL ---------------------------


def produce(
    server: ServerProcess, bootstrap: str, admin_bootstrap: str, client_config: dict[str, str], args: Any
) -> dict[str, Any]:
    """One producer process for `args.seconds` (acks=all, bench.dataplane's settings) through
    `bootstrap` with `client_config` (security.protocol, ssl.*); MiB/s and server CPU ms per MiB."""
    topic = f"bench-produce-{time.monotonic_ns()}"
    create_topic_with_librdkafka(admin_bootstrap, topic, args.partitions)
    opts = {
        "bootstrap": bootstrap, "topic": topic, "partitions": args.partitions,
        "message_bytes": args.message_bytes, "seconds": args.seconds, "client_config": client_config,
    }  # fmt: skip
    cpu0 = server.cpu_seconds()
    produced = run_role("produce", opts)
    cpu = server.cpu_seconds() - cpu0
    mib = produced["bytes"] / MIB
    return {"mib_s": mib / produced["seconds"], "server_cpu_ms_per_mib": cpu * 1000 / max(mib, 1e-9)}


# -- short connections: SCRAM authentications, and connect + ApiVersions alone (the limit) -----------------


@functools.cache
def _cached_salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """The client's PBKDF2 once per (user, salt): it would cost the load generator as much as the
    server's whole exchange, and it is the server's work that is measured."""
    return salted_password(mechanism, password, salt, iterations)


async def _open(port: int) -> Conn:
    _, conn = await asyncio.get_running_loop().create_connection(Conn, "127.0.0.1", port)
    await call(
        conn, API_VERSIONS, 3, {"client_software_name": "kcoord-bench", "client_software_version": "1"}
    )
    return conn


async def _scram(conn: Conn, mechanism: str, user: str, password: str) -> None:
    """SaslHandshake v1, then SaslAuthenticate v2 until done (coordinator.tools.sasl_client's exchange)."""
    handshake = await call(conn, SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if handshake["error_code"] != ERR_NONE:
        raise RuntimeError(f"SaslHandshake {mechanism}: error {handshake['error_code']}")
    client = ScramClient(mechanism, user, password, salt_password=_cached_salted_password)
    token: bytes | None = client.initial()
    while token is not None:
        response = await call(conn, SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if response["error_code"] != ERR_NONE:
            raise RuntimeError(f"SaslAuthenticate {mechanism}: {response['error_message']}")
        token = client.respond(response["auth_bytes"])


async def short_connections(
    server: ServerProcess, port: int, mechanism: str | None, credentials: tuple[str, str], args: Any
) -> dict[str, Any]:
    """`args.concurrency` loops, each: connect, ApiVersions v3, (SCRAM with `mechanism`), close; for
    `args.seconds`. Connections/s and server CPU µs per connection."""
    deadline = time.monotonic() + args.seconds
    done = [0]

    async def loop() -> None:
        while time.monotonic() < deadline:
            conn = await _open(port)
            if mechanism is not None:
                await _scram(conn, mechanism, *credentials)
            conn.close()
            done[0] += 1

    cpu0, t0 = server.cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(args.concurrency)))
    cpu, elapsed = server.cpu_seconds() - cpu0, time.perf_counter() - t0
    return {
        "connections": done[0],
        "per_s": done[0] / elapsed,
        "server_cpu_us_each": cpu * 1e6 / max(done[0], 1),
    }


# -- ACLs ------------------------------------------------------------------------------------------------


def acl(resource_type: ResourceType, name: str, pattern: PatternType, principal: str) -> dict[str, Any]:
    return {
        "resource_type": int(resource_type), "resource_name": name, "resource_pattern_type": int(pattern),
        "principal": principal, "host": "*", "operation": int(AclOperation.READ),
        "permission_type": int(AclPermissionType.ALLOW),
    }  # fmt: skip


def bench_acls(total: int, groups: int) -> list[dict[str, Any]]:
    """`total` READ ACLs, half LITERAL, half PREFIXED. The load's principal (ANONYMOUS) is allowed by
    prefixes (groups `hb-`, `commit-`) and one literal topic; every load group also has a literal and a
    prefixed ACL of its own for another principal, so that each check finds buckets to walk; the rest
    are other teams' topics and groups (names `app-N` literal, `team-N-` prefixed, prefixes of several
    lengths)."""
    group, topic, literal, prefixed = (
        ResourceType.GROUP,
        ResourceType.TOPIC,
        PatternType.LITERAL,
        PatternType.PREFIXED,
    )
    acls = [
        acl(group, "hb-", prefixed, ANONYMOUS),
        acl(group, "commit-", prefixed, ANONYMOUS),
        acl(topic, "bench-commits", literal, ANONYMOUS),
    ]
    for g in range(groups):
        acls.append(acl(group, f"hb-{g}", literal, f"User:owner-{g}"))
        acls.append(acl(group, f"hb-{g}", prefixed, f"User:owner-{g}"))
    half = total // 2
    literal_count = half - sum(1 for a in acls if a["resource_pattern_type"] == literal)
    prefixed_count = total - len(acls) - literal_count
    acls += [
        acl(topic if i % 2 else group, f"app-{i}", literal, f"User:app-{i}") for i in range(literal_count)
    ]
    acls += [
        acl(topic if i % 2 else group, f"team-{i}-", prefixed, f"User:team-{i}")
        for i in range(prefixed_count)
    ]
    return acls


async def create_acls(port: int, acls: list[dict[str, Any]], batch: int = 1000) -> None:
    (conn,) = await connect(port, 1)
    try:
        for start in range(0, len(acls), batch):
            response = await call(conn, CREATE_ACLS, 3, {"creations": acls[start : start + batch]})
            errors = {r["error_code"] for r in response["results"]} - {ERR_NONE}
            if errors:
                raise RuntimeError(f"CreateAcls: errors {errors}")
    finally:
        conn.close()


async def assert_denied(port: int, group: str) -> None:
    """A Heartbeat to a group whose only ACL names another principal is refused: the ACLs are in
    force (with --allow-everyone-if-no-acl-found true, a server that lost them would allow it)."""
    (conn,) = await connect(port, 1)
    try:
        body = {"group_id": group, "generation_id": 1, "member_id": "m", "group_instance_id": None}
        error = (await call(conn, 12, HEARTBEAT_V, body))["error_code"]
    finally:
        conn.close()
    if error != GROUP_AUTHORIZATION_FAILED:
        raise RuntimeError(
            f"Heartbeat to {group} as {ANONYMOUS}: error {error}, not GROUP_AUTHORIZATION_FAILED"
        )


async def keep_alive(port: int, frames: list[list[bytes]], interval_s: float = 5.0) -> None:
    """Every `interval_s`, every member heartbeats once over one connection of its own: the members'
    sessions (30 s) outlive the other phases of a round. Runs until cancelled; at 1,000 members it
    adds 200 heartbeats/s, well under 1 % of a measured load. Any error (a lost member) stops it."""
    (conn,) = await connect(port, 1)
    flat = [frame for per_conn in frames for frame in per_conn]
    try:
        while True:
            answers = await asyncio.gather(*(conn.request(frame) for frame in flat))
            errors = [heartbeat_error(a) for a in answers if heartbeat_error(a)]
            if errors:
                raise RuntimeError(f"keep-alive heartbeats on port {port} answered errors {set(errors)}")
            await asyncio.sleep(interval_s)
    finally:
        conn.close()
