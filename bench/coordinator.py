"""Coordinator benchmark: a real `kcoord serve` (and a bare uvloop ceiling server) driven over loopback.

    .venv/bin/python -m bench.coordinator [--duration 5] [--sizes 10,100,1000,10000] [--window 16,64]
        [--metrics] [--json out.json]

Every load reports requests/s, latency, the server's CPU seconds per request (from /proc/PID/stat) and
the ceiling measured in the same run; the report starts with the commit it ran on. `--metrics` starts
the server with its HTTP endpoint and scrapes /metrics every second during every load (issue 11's
"metrics on" figure).

Phases, each bounded in count and time, all traffic on 127.0.0.1:
1. heartbeats/s and latency for 100 groups x 10 members over 16 pipelined connections (the members
   join and sync first, each on its own connection); the same load against a bare uvloop server that
   answers every frame with a pre-encoded Heartbeat response: the ceiling of this machine and client;
2. durable OffsetCommit/s (server runs with --fsync always) with 1 and with 50 partitions per request;
3. time from the first JoinGroup sent to the last SyncGroup response of the final generation for one
   group of 10, 100, 1,000 and 10,000 members (one connection per member, as real clients do);
4. the 10,000-member group heartbeating every 3 s: the server's RSS and CPU%.

Requests are encoded with our own `protocol.frames.encode_request`; the hot loops send pre-encoded
frames so that the (single, Python) load generator is not the bottleneck. Server flags:
--group-initial-rebalance-delay-ms 0, --fsync always, --log-level INFO.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import json
import random
import resource
import signal
import ssl
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.protocol.consumer_protocol import encode_assignment, encode_subscription
from kcoord.protocol.frames import FrameSplitter, decode_response, encode_request
from tests.kcoord_process import CommandProcess, KcoordServer, ServerProcess

SIZE = struct.Struct(">i")
ERR_NONE, ERR_REBALANCE_IN_PROGRESS, ERR_MEMBER_ID_REQUIRED = 0, 27, 79
ERR_ILLEGAL_GENERATION, ERR_UNKNOWN_MEMBER_ID = 22, 25
JOIN_V, SYNC_V, HEARTBEAT_V, LEAVE_V, COMMIT_V = 5, 3, 3, 3, 3  # librdkafka's / aiokafka's versions


# -- processes ----------------------------------------------------------------------------------------


def start_kcoord(data_dir: Path, http_port: int | None = None, fsync: str = "always") -> KcoordServer:
    # INFO: the "listening on" line is INFO; transitions are one line each
    http = ("--http-listen", f"127.0.0.1:{http_port}") if http_port else ()
    server = KcoordServer(data_dir, "--fsync", fsync, "--log-level", "INFO", *http)
    server.start(60)
    if http_port:  # the HTTP endpoint starts just after the Kafka listener: wait for it too
        import socket

        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", http_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    server.stop()
                    raise
                time.sleep(0.02)
    return server


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def scrape_metrics(port: int, stop: asyncio.Event) -> tuple[int, float, int]:
    """GET /metrics every second until `stop` (a client as simple as Prometheus'): the scrape count,
    the median seconds from request to the end of the answer, and the answer's size."""
    durations, size = [], 0
    while not stop.is_set():
        started = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await writer.drain()
        size = len(await reader.read())  # until the server closes
        writer.close()
        durations.append(time.perf_counter() - started)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
    return len(durations), sorted(durations)[len(durations) // 2] if durations else 0.0, size


def git_commit() -> str:
    import subprocess

    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def start_ceiling(keystore: Path | None = None, batch: bool = False) -> CommandProcess:
    """The bare uvloop server; with `keystore` (key + certificate chain, PEM) it speaks TLS; with
    `batch` the answers to one read go out in one write."""
    extra = (["--ssl-keystore", str(keystore)] if keystore else []) + (["--batch"] if batch else [])
    ceiling = CommandProcess([sys.executable, "-m", "bench.coordinator", "ceiling-server", *extra], "ceiling")
    ceiling.start(60)
    return ceiling


# -- the ceiling: a bare uvloop server answering pre-encoded Heartbeat responses -------------------------


class _CeilingProtocol(asyncio.Protocol):
    """Splits frames and answers each one with its own write of a pre-encoded Heartbeat v3 response:
    the work any server does per request, minus decoding, handling and encoding."""

    RESPONSE = SIZE.pack(10) + struct.pack(">iih", 0, 0, 0)  # correlation, throttle, error
    transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, end = 0, len(buf)
        write, response = self.writer(), self.RESPONSE
        while end - pos >= 4:
            (size,) = SIZE.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            frame = bytes(buf[pos + 4 : pos + 4 + size])  # a real server hands the frame on
            pos += 4 + size
            write(response[:4] + frame[4:8] + response[8:])  # echo the correlation id
        if pos:
            del buf[:pos]
        self.read_done()

    def writer(self) -> Callable[[bytes], object]:
        return self.transport.write

    def read_done(self) -> None:
        pass


class _BatchingCeilingProtocol(_CeilingProtocol):
    """The answers to one read go out in one write, as kcoord's connection sends them
    (Connection._flush). With TLS every write is its own record (encrypted, MACed, sent), so a TLS
    ceiling that wrote each answer alone would fall far below kcoord (bench.security)."""

    pending: list[bytes]

    def writer(self) -> Callable[[bytes], object]:
        self.pending = []
        return self.pending.append

    def read_done(self) -> None:
        if self.pending:
            self.transport.write(b"".join(self.pending))


def serve_ceiling(keystore: Path | None = None, batch: bool = False) -> None:
    import uvloop

    tls = None
    if keystore is not None:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(keystore)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        protocol = _BatchingCeilingProtocol if batch else _CeilingProtocol
        server = await loop.create_server(protocol, "127.0.0.1", 0, backlog=4096, ssl=tls)
        print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()

    uvloop.run(main())


# -- client plumbing ----------------------------------------------------------------------------------


class Conn(asyncio.Protocol):
    """A client connection: responses arrive in request order, each resolving the oldest waiter."""

    def __init__(self) -> None:
        self.splitter = FrameSplitter()
        self.waiters: collections.deque[asyncio.Future[bytes]] = collections.deque()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not an asyncio.Transport

    def data_received(self, data: bytes) -> None:
        for payload in self.splitter.feed(data):
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(payload)

    def connection_lost(self, exc: Exception | None) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ConnectionError(f"connection lost: {exc}"))

    def request(self, frame: bytes) -> asyncio.Future[bytes]:
        assert self.transport is not None
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        self.transport.write(frame)
        return waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(port: int, count: int, batch: int = 500) -> list[Conn]:
    loop = asyncio.get_running_loop()
    conns: list[Conn] = []
    for start in range(0, count, batch):
        made = await asyncio.gather(
            *(loop.create_connection(Conn, "127.0.0.1", port) for _ in range(min(batch, count - start)))
        )
        conns.extend(protocol for _, protocol in made)
    return conns


_correlation = iter(range(1, 1 << 31))


def encode(api_key: int, version: int, body: dict[str, Any]) -> bytes:
    return encode_request(api_key, version, next(_correlation), body, client_id="kcoord-bench")


def decode(api_key: int, version: int, payload: bytes) -> dict[str, Any]:
    return decode_response(api_key, version, payload)[1]


async def call(conn: Conn, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode(api_key, version, await conn.request(encode(api_key, version, body)))


# -- group members ------------------------------------------------------------------------------------


def subscription(topic: str) -> bytes:
    return encode_subscription({"topics": [topic], "user_data": None}, version=0)


def assignment(topic: str, partitions: list[int]) -> bytes:
    return encode_assignment({"assigned_partitions": [{"topic": topic, "partitions": partitions}]}, version=0)


@dataclass
class Formation:
    """One group being formed: done when every member synced in the newest generation."""

    group: str
    size: int
    heartbeat_interval_s: float
    newest_generation: int = -1
    synced: dict[int, tuple[int, float]] = field(default_factory=dict)  # member index -> (generation, time)
    first_join_at: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    heartbeat_errors: collections.Counter[int] = field(default_factory=collections.Counter)
    rebalances: int = 0

    def check_done(self) -> None:
        if len(self.synced) == self.size and all(
            g == self.newest_generation for g, _ in self.synced.values()
        ):
            self.done.set()

    def last_sync_at(self) -> float:
        return max(t for _, t in self.synced.values())


class Member:
    """A minimal consumer-group member: join (with MEMBER_ID_REQUIRED), sync, heartbeat, rejoin."""

    def __init__(self, conn: Conn, formation: Formation, index: int, topic: str) -> None:
        self.conn = conn
        self.formation = formation
        self.index = index
        self.topic = topic
        self.member_id = ""
        self.generation = -1
        self.metadata = subscription(topic)

    async def run(self) -> None:
        formation = self.formation
        while True:
            if not formation.first_join_at:
                formation.first_join_at = time.perf_counter()
            join = await call(self.conn, 11, JOIN_V, {
                "group_id": formation.group,
                "session_timeout_ms": 30_000,
                "rebalance_timeout_ms": 60_000,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": self.metadata}],
            })  # fmt: skip
            if join["error_code"] == ERR_MEMBER_ID_REQUIRED:
                self.member_id = join["member_id"]
                continue
            if join["error_code"] == ERR_UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if join["error_code"] != ERR_NONE:
                raise RuntimeError(f"JoinGroup error {join['error_code']}")
            self.member_id = join["member_id"]
            self.generation = join["generation_id"]
            formation.newest_generation = max(formation.newest_generation, self.generation)
            assignments = []
            if join["leader"] == self.member_id:
                assignments = self._assign([m["member_id"] for m in join["members"]])
            sync = await call(self.conn, 14, SYNC_V, {
                "group_id": formation.group,
                "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": None,
                "assignments": assignments,
            })  # fmt: skip
            if sync["error_code"] != ERR_NONE:
                formation.rebalances += 1
                continue
            formation.synced[self.index] = (self.generation, time.perf_counter())
            formation.check_done()
            await self._heartbeat_until_rebalance()
            formation.synced.pop(self.index, None)
            formation.rebalances += 1

    def _assign(self, member_ids: list[str]) -> list[dict[str, Any]]:
        partitions = 64
        ordered = sorted(member_ids)
        return [
            {"member_id": m, "assignment": assignment(self.topic, list(range(i, partitions, len(ordered))))}
            for i, m in enumerate(ordered)
        ]

    async def _heartbeat_until_rebalance(self) -> None:
        formation = self.formation
        frame_body = {
            "group_id": formation.group,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": None,
        }
        await asyncio.sleep(random.uniform(0, formation.heartbeat_interval_s))
        while True:
            response = await call(self.conn, 12, HEARTBEAT_V, frame_body)
            error = response["error_code"]
            if error != ERR_NONE:
                formation.heartbeat_errors[error] += 1
                if error == ERR_UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                return
            await asyncio.sleep(formation.heartbeat_interval_s)


async def form_group(
    conns: Sequence[Conn],
    group: str,
    topic: str,
    heartbeat_interval_s: float,
    timeout: float,
    member_type: Callable[[Conn, Formation, int, str], Member] = Member,
) -> tuple[Formation, list[Member], list[asyncio.Task[None]]]:
    """`member_type` builds each member (a subclass may assign differently: bench.consumer_protocol)."""
    formation = Formation(group, len(conns), heartbeat_interval_s)
    members = [member_type(conn, formation, i, topic) for i, conn in enumerate(conns)]
    tasks = [asyncio.create_task(m.run()) for m in members]
    waiter = asyncio.create_task(formation.done.wait())
    await asyncio.wait([waiter, *tasks], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    failed = [t for t in tasks if t.done()]
    if failed or not formation.done.is_set():
        for task in tasks:
            task.cancel()
        waiter.cancel()
        reason = failed[0].exception() if failed else f"timeout after {timeout}s"
        raise RuntimeError(
            f"group {group} of {len(conns)} did not form: {reason}; synced {len(formation.synced)}"
        )
    return formation, members, tasks


async def leave_group(conn: Conn, group: str, members: list[Member], tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    identities = [{"member_id": m.member_id, "group_instance_id": None} for m in members if m.member_id]
    await call(conn, 13, LEAVE_V, {"group_id": group, "members": identities})


# -- pipelined load ------------------------------------------------------------------------------------


class Pump(asyncio.Protocol):
    """Keeps `window` pre-encoded requests in flight; records each response's latency and error."""

    def __init__(self, frames: list[bytes], window: int, error_of: Callable[[bytes], int]) -> None:
        self.frames = frames
        self.window = window
        self.error_of = error_of
        self.next = 0
        self.splitter = FrameSplitter()
        self.sent_at: collections.deque[float] = collections.deque()
        self.latencies: list[float] = []
        self.measuring = False
        self.answered = 0
        self.errors: collections.Counter[int] = collections.Counter()
        self.stopped = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not an asyncio.Transport

    def start(self) -> None:
        self._send(self.window)

    def _send(self, count: int) -> None:
        if self.stopped or not count:
            return
        frames, n = self.frames, len(self.frames)
        batch = []
        for _ in range(count):
            batch.append(frames[self.next])
            self.next = (self.next + 1) % n
        now = time.perf_counter()
        self.sent_at.extend([now] * count)
        assert self.transport is not None
        self.transport.write(b"".join(batch))

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        payloads = self.splitter.feed(data)
        sent_at, latencies, measuring, error_of = self.sent_at, self.latencies, self.measuring, self.error_of
        for payload in payloads:
            error = error_of(payload)
            if error:
                self.errors[error] += 1
            started = sent_at.popleft()
            if measuring:
                latencies.append(now - started)
        if measuring:
            self.answered += len(payloads)
        self._send(len(payloads))


def heartbeat_error(payload: bytes) -> int:
    return int.from_bytes(payload[8:10], "big", signed=True)  # correlation, throttle, error


def commit_errors(payload: bytes) -> int:
    """OffsetCommit v3 response, one topic: the first non-zero partition error (0 if none)."""
    pos = 8 + 4  # correlation, throttle, topic count
    (name_len,) = struct.unpack_from(">h", payload, pos)
    pos += 2 + name_len
    (count,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    for _ in range(count):
        error = int.from_bytes(payload[pos + 4 : pos + 6], "big", signed=True)
        if error:
            return error
        pos += 6
    return 0


@dataclass
class LoadResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    server_cpu_pct: float
    server_cpu_us_per_request: float
    server_kernel_us_per_request: float  # of which in the kernel (syscalls: socket I/O, write, fsync)
    errors: dict[int, int]


async def run_load(
    server: ServerProcess,
    frames_per_conn: list[list[bytes]],
    window: int,
    error_of: Callable[[bytes], int],
    warmup_s: float,
    duration_s: float,
    port: int | None = None,
    tls: ssl.SSLContext | None = None,
) -> LoadResult:
    """`port` (default `server.port`) and `tls` pick another listener of the server (bench.security)."""
    loop = asyncio.get_running_loop()
    pumps: list[Pump] = []
    for frames in frames_per_conn:
        _, pump = await loop.create_connection(
            functools.partial(Pump, frames, window, error_of), "127.0.0.1", port or server.port, ssl=tls
        )
        pumps.append(pump)
    for pump in pumps:
        pump.start()
    await asyncio.sleep(warmup_s)
    (user0, kernel0), t0 = server.cpu_split(), time.perf_counter()
    for pump in pumps:
        pump.measuring = True
    await asyncio.sleep(duration_s)
    for pump in pumps:
        pump.measuring = False
    (user1, kernel1), t1 = server.cpu_split(), time.perf_counter()
    cpu0, cpu1 = user0 + kernel0, user1 + kernel1
    for pump in pumps:
        pump.stopped = True
    await asyncio.sleep(0.2)
    for pump in pumps:
        assert pump.transport is not None
        pump.transport.close()
    latencies = sorted(x for p in pumps for x in p.latencies)
    errors: collections.Counter[int] = collections.Counter()
    for pump in pumps:
        errors.update(pump.errors)
    elapsed = t1 - t0
    answered = sum(p.answered for p in pumps)
    return LoadResult(
        requests_per_s=answered / elapsed,
        p50_ms=1000 * latencies[len(latencies) // 2] if latencies else float("nan"),
        p99_ms=1000 * latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
        server_cpu_pct=100 * (cpu1 - cpu0) / elapsed,
        server_cpu_us_per_request=1e6 * (cpu1 - cpu0) / answered if answered else float("nan"),
        server_kernel_us_per_request=1e6 * (kernel1 - kernel0) / answered if answered else float("nan"),
        errors=dict(errors),
    )


# -- phases ------------------------------------------------------------------------------------------


async def create_topic(port: int, topic: str, partitions: int) -> None:
    (conn,) = await connect(port, 1)
    try:
        response = await call(conn, 19, 4, {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 10_000,
            "validate_only": False,
        })  # fmt: skip
        error = response["topics"][0]["error_code"]
        if error not in (0, 36):  # 36 TOPIC_ALREADY_EXISTS
            raise RuntimeError(f"CreateTopics {topic}: error {error}")
    finally:
        conn.close()


Formed = tuple[Formation, list[Member], list[asyncio.Task[None]]]


async def heartbeat_frames(formed: Sequence[Formed], connections: int) -> list[list[bytes]]:
    """Stop the members' own heartbeats and return every member's Heartbeat frame, spread over
    `connections`: a pump heartbeats for them from now on."""
    frames: list[list[bytes]] = [[] for _ in range(connections)]
    i = 0
    for formation, members, tasks in formed:
        for task in tasks:
            task.cancel()
        for member in members:
            body = {
                "group_id": formation.group,
                "generation_id": member.generation,
                "member_id": member.member_id,
                "group_instance_id": None,
            }
            frames[i % connections].append(encode(12, HEARTBEAT_V, body))
            i += 1
    await asyncio.gather(*(t for _, _, tasks in formed for t in tasks), return_exceptions=True)
    return frames


async def heartbeat_phase(
    kcoord: ServerProcess, ceiling: ServerProcess, args: argparse.Namespace
) -> dict[str, Any]:
    groups, per_group, connections = 100, 10, 16
    topic = "bench-heartbeats"
    await create_topic(kcoord.port, topic, 64)
    member_conns = await connect(kcoord.port, groups * per_group)
    formed = await asyncio.gather(*(
        form_group(member_conns[g * per_group : (g + 1) * per_group], f"hb-{g}", topic, 1.0, 60)
        for g in range(groups)
    ))  # fmt: skip
    frames = await heartbeat_frames(formed, connections)
    by_window = {}
    for window in args.windows:  # interleaved: kcoord, then the ceiling, at each window
        result = await run_load(kcoord, frames, window, heartbeat_error, 1.0, args.duration)
        ceiling_result = await run_load(ceiling, frames, window, heartbeat_error, 1.0, args.duration)
        by_window[str(window)] = {
            "kcoord": result.__dict__,
            "ceiling": ceiling_result.__dict__,
            "ratio": result.requests_per_s / ceiling_result.requests_per_s,
        }
    (conn,) = await connect(kcoord.port, 1)
    for formation, members, tasks in formed:
        await leave_group(conn, formation.group, members, tasks)
    conn.close()
    for c in member_conns:
        c.close()
    return by_window


async def commit_phase(kcoord: ServerProcess, args: argparse.Namespace) -> dict[str, Any]:
    topic, groups, connections, window = "bench-commits", 100, 16, max(args.windows)
    await create_topic(kcoord.port, topic, 50)
    results = {}
    for per_request in (1, 50):
        frames: list[list[bytes]] = [[] for _ in range(connections)]
        for i in range(connections * 64):
            body = {
                "group_id": f"commit-{per_request}-{i % groups}",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "retention_time_ms": -1,
                "topics": [{
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "committed_offset": i * 10 + p, "committed_metadata": "bench"}
                        for p in range(per_request)
                    ],
                }],
            }  # fmt: skip
            frames[i % connections].append(encode(8, COMMIT_V, body))
        result = await run_load(kcoord, frames, window, commit_errors, 1.0, args.duration)
        results[f"{per_request}_partition"] = {
            **result.__dict__,
            "partitions_per_s": result.requests_per_s * per_request,
        }
    return results


async def join_phase(kcoord: ServerProcess, args: argparse.Namespace) -> dict[str, Any]:
    topic = "bench-joins"
    await create_topic(kcoord.port, topic, 64)
    results: dict[str, Any] = {}
    for size in args.sizes:
        conns = await connect(kcoord.port, size)
        started = time.perf_counter()
        formation, members, tasks = await form_group(conns, f"join-{size}", topic, 0.5, timeout=120)
        elapsed = formation.last_sync_at() - formation.first_join_at
        results[str(size)] = {
            "first_join_to_last_sync_s": elapsed,
            "generation": formation.newest_generation,
            "rebalances_seen": formation.rebalances,
            "wall_s": time.perf_counter() - started,
        }
        print(f"  group of {size:>6}: first JoinGroup -> last SyncGroup {elapsed:.3f}s "
              f"(generation {formation.newest_generation})", flush=True)  # fmt: skip
        if size == max(args.sizes) and size >= 10_000:
            results["idle"] = await idle_phase(kcoord, formation, args)
        await leave_group(conns[0], formation.group, members, tasks)
        for conn in conns:
            conn.close()
    return results


async def idle_phase(kcoord: ServerProcess, formation: Formation, args: argparse.Namespace) -> dict[str, Any]:
    """The big group heartbeats every 3 s (staggered): the server's CPU% and RSS."""
    formation.heartbeat_interval_s = 3.0
    await asyncio.sleep(4.0)  # every member is now on the 3 s cadence
    errors_before = sum(formation.heartbeat_errors.values())
    cpu0, t0 = kcoord.cpu_seconds(), time.perf_counter()
    await asyncio.sleep(args.idle_seconds)
    cpu1, t1 = kcoord.cpu_seconds(), time.perf_counter()
    return {
        "members": formation.size,
        "seconds": t1 - t0,
        "server_cpu_pct": 100 * (cpu1 - cpu0) / (t1 - t0),
        "server_rss_mib": kcoord.rss_kib() / 1024,
        "heartbeat_errors": sum(formation.heartbeat_errors.values()) - errors_before,
    }


def raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def report(results: dict[str, Any]) -> None:
    print(f"commit {results.get('commit')}, {results.get('metrics', 'metrics endpoint off')}")
    for window, hb in results.get("heartbeats", {}).items():
        k, c = hb["kcoord"], hb["ceiling"]
        print(f"heartbeats (100 groups x 10 members, 16 conns x {window} in flight): "
              f"{k['requests_per_s']:,.0f}/s p50 {k['p50_ms']:.2f} ms p99 {k['p99_ms']:.2f} ms, "
              f"server CPU {k['server_cpu_pct']:.0f}% = {k['server_cpu_us_per_request']:.1f} us/heartbeat "
              f"({k['server_kernel_us_per_request']:.1f} in the kernel), errors {k['errors']}")  # fmt: skip
        print(f"  ceiling (bare uvloop, pre-encoded answers): {c['requests_per_s']:,.0f}/s "
              f"p99 {c['p99_ms']:.2f} ms, server CPU {c['server_cpu_pct']:.0f}% = "
              f"{c['server_cpu_us_per_request']:.1f} us/request "
              f"({c['server_kernel_us_per_request']:.1f} in the kernel) -> heartbeats at "
              f"{100 * hb['ratio']:.0f}% of the ceiling (target >= 40%)")  # fmt: skip
    for name, r in results.get("commits", {}).items():
        print(
            f"OffsetCommit {name} (fsync=always): {r['requests_per_s']:,.0f} req/s = "
            f"{r['partitions_per_s']:,.0f} partitions/s, p99 {r['p99_ms']:.2f} ms, server CPU "
            f"{r['server_cpu_us_per_request']:.1f} us/request "
            f"({r['server_kernel_us_per_request']:.1f} in the kernel), errors {r['errors']}"
        )
    for size, r in results.get("joins", {}).items():
        if size == "idle":
            print(f"{r['members']:,} members heartbeating every 3 s: server CPU {r['server_cpu_pct']:.1f}% "
                  f"RSS {r['server_rss_mib']:.0f} MiB, heartbeat errors {r['heartbeat_errors']}")  # fmt: skip
        else:
            elapsed = r["first_join_to_last_sync_s"]
            print(f"group of {int(size):,}: first JoinGroup -> last SyncGroup {elapsed:.3f} s")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    results["commit"] = git_commit()
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-") as tmp:
        http_port = free_port() if args.metrics else None
        kcoord = start_kcoord(Path(tmp) / "data", http_port)
        ceiling = start_ceiling()
        stop_scraping = asyncio.Event()
        scraper = (
            asyncio.ensure_future(scrape_metrics(http_port, stop_scraping))
            if http_port and not args.no_scrape
            else None
        )
        try:
            results["server_rss_mib_at_start"] = kcoord.rss_kib() / 1024
            if "heartbeats" in args.phases:
                print("heartbeats ...", flush=True)
                results["heartbeats"] = await heartbeat_phase(kcoord, ceiling, args)
            if "commits" in args.phases:
                print("offset commits ...", flush=True)
                results["commits"] = await commit_phase(kcoord, args)
            if "joins" in args.phases:
                print("joins ...", flush=True)
                results["joins"] = await join_phase(kcoord, args)
            results["server_rss_mib_at_end"] = kcoord.rss_kib() / 1024
            if scraper is not None:
                stop_scraping.set()
                scrapes, median_s, size = await scraper
                results["metrics"] = (
                    f"metrics endpoint on, /metrics scraped {scrapes} times (1/s), "
                    f"median {1000 * median_s:.1f} ms for {size:,} bytes"
                )
        finally:
            returncode = kcoord.stop()
            ceiling.stop()
            if returncode != 0:
                print("\n".join(kcoord.lines[-30:]), file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.coordinator", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=["run", "ceiling-server"])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per load (default 5)")
    parser.add_argument("--sizes", default="10,100,1000,10000", help="group sizes for the join phase")
    parser.add_argument("--idle-seconds", type=float, default=15.0, help="measurement of the idle 10k group")
    parser.add_argument("--phases", default="heartbeats,commits,joins")
    parser.add_argument("--window", default="16,64", help="requests in flight per connection (default 16,64)")
    parser.add_argument(
        "--metrics", action="store_true", help="HTTP endpoint on, /metrics scraped every second"
    )
    parser.add_argument("--no-scrape", action="store_true", help="with --metrics: endpoint on, never scraped")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--ssl-keystore", type=Path, help="ceiling-server: speak TLS (PEM key + chain)")
    parser.add_argument("--batch", action="store_true", help="ceiling-server: one write per read")
    args = parser.parse_args(argv)
    if args.command == "ceiling-server":
        serve_ceiling(args.ssl_keystore, args.batch)
        return 0
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.windows = [int(w) for w in args.window.split(",") if w]
    args.phases = set(args.phases.split(","))
    raise_open_files_limit()
    try:
        import uvloop

        results = uvloop.run(bench(args))
    except ImportError:
        results = asyncio.run(bench(args))
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
