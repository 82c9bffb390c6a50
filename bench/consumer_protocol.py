"""Consumer protocol (KIP-848) against the classic protocol when one member joins a big group (issue 14).

    .venv/bin/python -m bench.consumer_protocol [--members 1000] [--partitions 2000] [--requests 50000]
        [--fsync never|always] [--timeout 600] [--json out.json]

Each protocol gets its own fresh `kcoord serve` (--group-initial-rebalance-delay-ms 0, --fsync never
unless asked) and a topic of --partitions partitions (about two per member), all on 127.0.0.1:
1. consumer protocol: --members members join with ConsumerGroupHeartbeat v1 (one connection each) and
   heartbeat in rounds until ConsumerGroupDescribe says Stable. Then one more member joins and, timed,
   every member heartbeats in rounds as fast as the server answers (each reporting the partitions it
   owns, having dropped those it was asked to revoke), with a Describe after each round, until Stable
   again. The server is started with a 600 s consumer session timeout so that no member expires.
2. classic protocol: the same group formed with JoinGroup v5/SyncGroup v3 (bench.coordinator's members;
   the leader does a range assignment). Then one member joins and, timed, every member heartbeats
   (Heartbeat v4) until it is answered REBALANCE_IN_PROGRESS, rejoins, and syncs (eager: everyone
   rejoins, the leader assigns again) until every member has synced the new generation.
3. steady heartbeats of the group of each protocol, pipelined over 16 connections x 64 in flight,
   --requests of each: requests/s and the server's CPU per request, next to bench.coordinator's bare
   uvloop ceiling answering the same frames.

Reported for each join: wall time, heartbeat rounds, requests, partitions that changed owner, and the
server's CPU (user + system, /proc) over the timed stretch, Describes included (their own cost is
measured apart). Every loop is bounded in count, every phase by --timeout. Run by hand; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import json
import os
import shlex
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.coordinator import (
    ERR_MEMBER_ID_REQUIRED,
    ERR_NONE,
    ERR_REBALANCE_IN_PROGRESS,
    JOIN_V,
    SYNC_V,
    Conn,
    Formation,
    Member,
    assignment,
    call,
    connect,
    create_topic,
    encode,
    form_group,
    git_commit,
    heartbeat_error,
    raise_open_files_limit,
    start_ceiling,
    subscription,
)
from bench.instructions import CONNECTIONS, WINDOW, pump
from kcoord.protocol.consumer_protocol import decode_assignment
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT as UNCHANGED
from tests.kcoord_process import KcoordServer, ServerProcess

CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE, METADATA, CLASSIC_HEARTBEAT = 68, 69, 3, 12
CONSUMER_V, CLASSIC_HEARTBEAT_V = 1, 4
API_NAMES = {11: "JoinGroup", 12: "Heartbeat", 14: "SyncGroup"}
REBALANCE_TIMEOUT_MS = 300_000
CONSUMER_SESSION_TIMEOUT_MS = 600_000
MAX_ROUNDS = 100  # heartbeat rounds to reach Stable (a join settles in about three)
MAX_HEARTBEATS_PER_MEMBER = 10_000  # classic: heartbeats until REBALANCE_IN_PROGRESS
TOPIC = "bench-consumer-protocol"


T = TypeVar("T")


class Aborted(Exception):
    """A phase missed its deadline or its bound, or the server answered an unexpected error."""


@dataclass
class Deadline:
    phase: str
    seconds: float
    at: float = 0.0

    def __post_init__(self) -> None:
        self.at = time.monotonic() + self.seconds

    async def within(self, awaitable: Awaitable[T], what: str) -> T:
        remaining = self.at - time.monotonic()
        try:
            return await asyncio.wait_for(awaitable, max(remaining, 0.001))
        except TimeoutError:
            raise Aborted(f"{self.phase}: {what} not done within the {self.seconds:g} s deadline") from None


def flexible_error(payload: bytes) -> int:
    """The error code of a flexible response (ConsumerGroupHeartbeat, Heartbeat v4): correlation id,
    header tags (none), throttle time, error."""
    return int.from_bytes(payload[9:11], "big", signed=True)


def changed_owners(before: dict[int, str], after: dict[int, str]) -> int:
    return sum(1 for p in before.keys() | after.keys() if before.get(p) != after.get(p))


# -- the consumer protocol -------------------------------------------------------------------------


@dataclass
class ConsumerMember:
    """A ConsumerGroupHeartbeat v1 client: reports what it owns, takes what it is answered."""

    conn: Conn
    group: str
    member_id: str
    topic_id: uuid.UUID
    epoch: int = 0
    owned: list[int] = field(default_factory=list)

    async def join(self) -> None:
        await self._send({
            **UNCHANGED,
            "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
            "subscribed_topic_names": [TOPIC],
            "topic_partitions": [],
        })  # fmt: skip

    async def heartbeat(self) -> None:
        await self._send({**UNCHANGED, "topic_partitions": self.reported()})

    def reported(self) -> list[dict[str, Any]]:
        return [{"topic_id": self.topic_id, "partitions": self.owned}]

    def steady_frame(self) -> bytes:
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch, **UNCHANGED}
        return encode(CONSUMER_HEARTBEAT, CONSUMER_V, body)

    async def _send(self, fields: dict[str, Any]) -> None:
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch, **fields}
        answer = await call(self.conn, CONSUMER_HEARTBEAT, CONSUMER_V, body)
        if answer["error_code"] != ERR_NONE:
            raise Aborted(
                f"ConsumerGroupHeartbeat of {self.member_id} at epoch {self.epoch}: "
                f"error {answer['error_code']} {answer['error_message']}"
            )
        self.epoch = answer["member_epoch"]
        if answer["assignment"] is not None:  # null: unchanged; else revoked ones dropped, new ones added
            self.owned = sorted(
                p for t in answer["assignment"]["topic_partitions"] if t["topic_id"] == self.topic_id
                for p in t["partitions"]
            )  # fmt: skip


def consumer_owners(members: Sequence[ConsumerMember]) -> dict[int, str]:
    owners: dict[int, str] = {}
    for m in members:
        for p in m.owned:
            if p in owners:
                raise Aborted(f"partition {p} owned by both {owners[p]} and {m.member_id}")
            owners[p] = m.member_id
    return owners


async def topic_id_of(conn: Conn, name: str) -> uuid.UUID:
    metadata = await call(conn, METADATA, 12, {
        "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    })  # fmt: skip
    (topic,) = metadata["topics"]
    if topic["error_code"] != ERR_NONE:
        raise Aborted(f"Metadata {name}: error {topic['error_code']}")
    topic_id: uuid.UUID = topic["topic_id"]
    return topic_id


async def describe_state(conn: Conn, group: str) -> str:
    body = {"group_ids": [group], "include_authorized_operations": False}
    (described,) = (await call(conn, CONSUMER_DESCRIBE, 1, body))["groups"]
    if described["error_code"] != ERR_NONE:
        raise Aborted(f"ConsumerGroupDescribe {group}: error {described['error_code']}")
    state: str = described["group_state"]
    return state


@dataclass
class Settled:
    rounds: int = 0
    heartbeats: int = 0
    describes: int = 0


async def until_stable(
    members: Sequence[ConsumerMember], describer: Conn, deadline: Deadline, what: str
) -> Settled:
    """Rounds of one heartbeat per member, each followed by a Describe, until the group is Stable."""
    settled = Settled()
    while settled.rounds < MAX_ROUNDS:
        await deadline.within(asyncio.gather(*(m.heartbeat() for m in members)), f"{what}: a round")
        settled.rounds += 1
        settled.heartbeats += len(members)
        settled.describes += 1
        if await deadline.within(describe_state(describer, members[0].group), what) == "Stable":
            return settled
    raise Aborted(f"{what}: not Stable after {MAX_ROUNDS} heartbeat rounds")


async def describe_cpu(server: ServerProcess, conn: Conn, group: str) -> float:
    """Server CPU µs of one ConsumerGroupDescribe of the whole group (included in the join's CPU):
    Describes one after another for a second (at most 1,000), enough clock ticks to divide."""
    cpu0, stop_at, count = server.cpu_seconds(), time.monotonic() + 1.0, 0
    while count < 1000 and time.monotonic() < stop_at:
        await describe_state(conn, group)
        count += 1
    return 1e6 * (server.cpu_seconds() - cpu0) / count


async def consumer_phase(server: KcoordServer, args: argparse.Namespace) -> dict[str, Any]:
    group = "bench-consumer"
    await create_topic(server.port, TOPIC, args.partitions)
    conns = await connect(server.port, args.members + 2)
    describer = conns[-1]
    topic_id = await topic_id_of(describer, TOPIC)
    members = [ConsumerMember(conn, group, f"member-{i:05d}", topic_id) for i, conn in enumerate(conns[:-1])]
    existing, joiner = members[:-1], members[-1]

    deadline = Deadline("consumer protocol, forming the group", args.timeout)
    started = time.perf_counter()
    await deadline.within(asyncio.gather(*(m.join() for m in existing)), "the first heartbeats")
    formed = await until_stable(existing, describer, deadline, "forming")
    formed_s = time.perf_counter() - started
    print(f"  {len(existing)} members Stable after {formed_s:.1f} s, {formed.rounds} rounds", flush=True)
    before = consumer_owners(existing)

    deadline = Deadline("consumer protocol, one member joining", args.timeout)
    (user0, sys0), t0 = server.cpu_split(), time.perf_counter()
    await deadline.within(joiner.join(), "the joiner's first heartbeat")
    settled = await until_stable(members, describer, deadline, "the join")
    elapsed = time.perf_counter() - t0
    (user1, sys1) = server.cpu_split()
    after = consumer_owners(members)
    requests = 1 + settled.heartbeats
    join = {
        "seconds": elapsed,
        "rounds": settled.rounds,
        "requests": requests,
        "describes": settled.describes,
        "changed_owner": changed_owners(before, after),
        "joiner_partitions": len(joiner.owned),
        "unowned_partitions": args.partitions - len(after),
        "server_cpu_s": (user1 + sys1) - (user0 + sys0),
        "server_cpu_us_per_request": 1e6 * ((user1 + sys1) - (user0 + sys0)) / requests,
        "describe_cpu_us": await describe_cpu(server, describer, group),
    }
    steady = await steady_load(server, [m.steady_frame() for m in members], flexible_error, args)
    for conn in conns:
        conn.close()
    return {"formed_s": formed_s, "formed_rounds": formed.rounds, "join": join, "steady": steady}


# -- the classic protocol --------------------------------------------------------------------------


def range_assign(member_ids: Sequence[str], partitions: int) -> dict[str, list[int]]:
    """Kafka's RangeAssignor for one topic: members sorted by id, consecutive ranges, the first
    `partitions % members` one longer."""
    ordered = sorted(member_ids)
    share, extra = divmod(partitions, len(ordered))
    ranges, start = {}, 0
    for i, member_id in enumerate(ordered):
        length = share + (1 if i < extra else 0)
        ranges[member_id] = list(range(start, start + length))
        start += length
    return ranges


def owners_of(ranges: dict[str, list[int]]) -> dict[int, str]:
    return {p: member_id for member_id, ps in ranges.items() for p in ps}


class RangeMember(Member):
    """bench.coordinator's member, whose leader assigns `partitions` by range and records in
    `assigned`, per generation, what it assigned."""

    def __init__(
        self,
        conn: Conn,
        formation: Formation,
        index: int,
        topic: str,
        *,
        partitions: int,
        assigned: dict[int, dict[str, list[int]]],
    ) -> None:
        super().__init__(conn, formation, index, topic)
        self.partitions = partitions
        self.assigned = assigned  # generation -> member id -> partitions

    def _assign(self, member_ids: list[str]) -> list[dict[str, Any]]:
        ranges = range_assign(member_ids, self.partitions)
        self.assigned[self.generation] = ranges
        return [{"member_id": m, "assignment": assignment(self.topic, ps)} for m, ps in ranges.items()]


def classic_join_body(group: str, member_id: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 30_000,  # as bench.coordinator's members
        "rebalance_timeout_ms": 60_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription(TOPIC)}],
    }


@dataclass
class Rejoin:
    """One eager rebalance as the members drive it: requests sent, the new generation's assignment."""

    group: str
    partitions: int
    requests: collections.Counter[str] = field(default_factory=collections.Counter)
    generation: int = -1
    ranges: dict[str, list[int]] = field(default_factory=dict)
    last_sync_at: float = 0.0

    async def call(self, conn: Conn, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.requests[API_NAMES[api_key]] += 1
        return await call(conn, api_key, version, body)

    async def member(self, conn: Conn, member_id: str, generation: int) -> tuple[str, int, list[int]]:
        """Heartbeat until the rebalance is announced, then rejoin and sync."""
        body = {"group_id": self.group, "generation_id": generation, "member_id": member_id,
                "group_instance_id": None}  # fmt: skip
        for _ in range(MAX_HEARTBEATS_PER_MEMBER):
            error = (await self.call(conn, CLASSIC_HEARTBEAT, CLASSIC_HEARTBEAT_V, body))["error_code"]
            if error == ERR_REBALANCE_IN_PROGRESS:
                return await self.join_and_sync(conn, member_id)
            if error != ERR_NONE:
                raise Aborted(f"Heartbeat of {member_id}: error {error}")
        raise Aborted(f"{member_id}: no REBALANCE_IN_PROGRESS in {MAX_HEARTBEATS_PER_MEMBER} heartbeats")

    async def first_join(self, conn: Conn) -> str:
        """A new member's first JoinGroup (v4+): answered MEMBER_ID_REQUIRED with its id."""
        first = await self.call(conn, 11, JOIN_V, classic_join_body(self.group, ""))
        if first["error_code"] != ERR_MEMBER_ID_REQUIRED:
            raise Aborted(
                f"the joiner's first JoinGroup: error {first['error_code']}, not MEMBER_ID_REQUIRED"
            )
        member_id: str = first["member_id"]
        return member_id

    async def join_and_sync(self, conn: Conn, member_id: str) -> tuple[str, int, list[int]]:
        join = await self.call(conn, 11, JOIN_V, classic_join_body(self.group, member_id))
        if join["error_code"] != ERR_NONE:
            raise Aborted(f"JoinGroup of {member_id}: error {join['error_code']}")
        assignments = []
        if join["leader"] == member_id:
            self.generation = join["generation_id"]
            self.ranges = range_assign([m["member_id"] for m in join["members"]], self.partitions)
            assignments = [
                {"member_id": m, "assignment": assignment(TOPIC, ps)} for m, ps in self.ranges.items()
            ]
        sync = await self.call(conn, 14, SYNC_V, {
            "group_id": self.group,
            "generation_id": join["generation_id"],
            "member_id": member_id,
            "group_instance_id": None,
            "assignments": assignments,
        })  # fmt: skip
        if sync["error_code"] != ERR_NONE:
            raise Aborted(f"SyncGroup of {member_id}: error {sync['error_code']}")
        self.last_sync_at = max(self.last_sync_at, time.perf_counter())
        _, got = decode_assignment(sync["assignment"])
        return (
            member_id,
            join["generation_id"],
            [p for t in got["assigned_partitions"] for p in t["partitions"]],
        )


async def classic_phase(server: KcoordServer, args: argparse.Namespace) -> dict[str, Any]:
    group = "bench-classic"
    await create_topic(server.port, TOPIC, args.partitions)
    conns = await connect(server.port, args.members + 1)
    assigned: dict[int, dict[str, list[int]]] = {}
    factory = functools.partial(RangeMember, partitions=args.partitions, assigned=assigned)
    started = time.perf_counter()
    try:
        formation, members, tasks = await form_group(conns[:-1], group, TOPIC, 1.0, args.timeout, factory)
    except RuntimeError as exc:  # form_group's own deadline (args.timeout) or a member's failure
        raise Aborted(f"classic protocol, forming the group: {exc}") from None
    formed_s = time.perf_counter() - started
    for task in tasks:  # from here on the rebalance below drives them
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"  {len(members)} members synced after {formed_s:.1f} s "
          f"(generation {formation.newest_generation})", flush=True)  # fmt: skip
    before = owners_of(assigned[formation.newest_generation])

    deadline = Deadline("classic protocol, one member joining", args.timeout)
    rejoin = Rejoin(group, args.partitions)
    (user0, sys0), t0 = server.cpu_split(), time.perf_counter()
    # The joiner's JoinGroup (with its id) is written before any member heartbeats, as when a
    # member joins between heartbeats; the members then heartbeat back to back until told to rejoin.
    joiner_id = await deadline.within(rejoin.first_join(conns[-1]), "the joiner's first JoinGroup")
    joining = asyncio.ensure_future(rejoin.join_and_sync(conns[-1], joiner_id))
    await asyncio.sleep(0)  # the joiner's JoinGroup is on the wire
    rejoining = (rejoin.member(m.conn, m.member_id, m.generation) for m in members)
    synced = await deadline.within(asyncio.gather(joining, *rejoining), "the rebalance")
    elapsed = rejoin.last_sync_at - t0
    (user1, sys1) = server.cpu_split()
    generations = {g for _, g, _ in synced}
    if generations != {rejoin.generation}:
        raise Aborted(f"members synced generations {sorted(generations)}, not only {rejoin.generation}")
    after = owners_of(rejoin.ranges)
    cpu = (user1 + sys1) - (user0 + sys0)
    requests = sum(rejoin.requests.values())
    join = {
        "seconds": elapsed,
        "generation": rejoin.generation,
        "requests": requests,
        "requests_by_api": dict(rejoin.requests),
        "changed_owner": changed_owners(before, after),
        "joiner_partitions": len(synced[0][2]),
        "server_cpu_s": cpu,
        "server_cpu_us_per_request": 1e6 * cpu / requests,
    }
    bodies = [
        {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": None}
        for member_id, generation, _ in synced
    ]
    frames = [encode(CLASSIC_HEARTBEAT, CLASSIC_HEARTBEAT_V, body) for body in bodies]
    steady = await steady_load(server, frames, flexible_error, args)
    for conn in conns:
        conn.close()
    return {"formed_s": formed_s, "join": join, "steady": steady}


# -- steady heartbeats -----------------------------------------------------------------------------


async def counted(
    server: ServerProcess, frames: list[bytes], error_of: Callable[[bytes], int], total: int
) -> dict[str, Any]:
    per_conn: list[list[bytes]] = [frames[i::CONNECTIONS] for i in range(CONNECTIONS)]
    requests = (total // CONNECTIONS) * CONNECTIONS
    (user0, sys0), t0 = server.cpu_split(), time.perf_counter()
    errors = await pump(server.port, per_conn, total, error_of)  # bounded: `total`, and 600 s
    elapsed = time.perf_counter() - t0
    (user1, sys1) = server.cpu_split()
    return {
        "requests": requests,
        "errors": errors,
        "requests_per_s": requests / elapsed,
        "server_cpu_us_per_request": 1e6 * ((user1 + sys1) - (user0 + sys0)) / requests,
        "server_kernel_us_per_request": 1e6 * (sys1 - sys0) / requests,
    }


async def steady_load(
    server: ServerProcess, frames: list[bytes], error_of: Callable[[bytes], int], args: argparse.Namespace
) -> dict[str, Any]:
    """The group's members' steady heartbeats, pipelined; then the same frames against the ceiling."""
    result = await counted(server, frames, error_of, args.requests)
    ceiling = start_ceiling()
    try:
        result["ceiling"] = await counted(ceiling, frames, heartbeat_error, args.requests)
    finally:
        ceiling.stop()
    return result


# -- report ----------------------------------------------------------------------------------------


def report_rows(r: dict[str, Any], partitions: int) -> list[str]:
    """One protocol's column of the table."""
    join, steady, ceiling = r["join"], r["steady"], r["steady"]["ceiling"]
    if "describes" in join:
        detail = f" + {join['describes']} Describe"
    else:
        detail = " (" + ", ".join(f"{n:,} {api}" for api, n in join["requests_by_api"].items()) + ")"
    unowned = f", {join['unowned_partitions']} unowned" if join.get("unowned_partitions") else ""
    return [
        f"{r['formed_s']:.1f} s",
        f"{1000 * join['seconds']:.0f} ms",
        str(join.get("rounds", "-")),
        f"{join['requests']:,}{detail}",
        f"{join['changed_owner']:,} of {partitions:,}{unowned}",
        str(join["joiner_partitions"]),
        f"{1000 * join['server_cpu_s']:.0f} ms = {join['server_cpu_us_per_request']:.0f} µs/request",
        f"{steady['requests_per_s']:,.0f}/s, {steady['server_cpu_us_per_request']:.1f} µs CPU each "
        f"({steady['server_kernel_us_per_request']:.1f} in the kernel), errors {steady['errors']}",
        f"{ceiling['requests_per_s']:,.0f}/s, {ceiling['server_cpu_us_per_request']:.1f} µs CPU each",
    ]


REPORT_LABELS = (
    "group formed",
    "one member joins: until Stable / all synced",
    "heartbeat rounds",
    "requests",
    "partitions that changed owner",
    "the joiner's partitions",
    "server CPU over the join",
    f"steady heartbeats ({CONNECTIONS} connections x {WINDOW} in flight)",
    "ceiling (bare uvloop), same frames",
)


def report(results: dict[str, Any]) -> None:
    partitions = results["partitions"]
    print(f"commit {results['commit']}, fsync {results['fsync']}: {results['command']}")
    print(f"{results['members']:,} members + 1 joining, {partitions:,} partitions\n")
    print("| | consumer protocol (ConsumerGroupHeartbeat v1) | classic (JoinGroup v5, eager range) |")
    print("|---|---|---|")
    columns = [
        report_rows(results[name], partitions) if name in results else ["-"] * len(REPORT_LABELS)
        for name in ("consumer", "classic")
    ]
    for label, consumer, classic in zip(REPORT_LABELS, *columns, strict=True):
        print(f"| {label} | {consumer} | {classic} |")
    if "consumer" in results:
        join = results["consumer"]["join"]
        print(
            f"\nconsumer protocol: the join's server CPU (and so its µs per heartbeat) includes "
            f"{join['describes']} ConsumerGroupDescribe of the whole group, "
            f"{join['describe_cpu_us']:.0f} µs each (measured apart)"
        )
    print(f"server CPU is read from /proc in clock ticks of {1000 / os.sysconf('SC_CLK_TCK'):.0f} ms")


# -- main ------------------------------------------------------------------------------------------


def start_server(data_dir: Path, fsync: str) -> KcoordServer:
    server = KcoordServer(
        data_dir,
        "--fsync", fsync,
        "--log-level", "INFO",  # the "listening on" line is INFO
        "--group-consumer-session-timeout-ms", str(CONSUMER_SESSION_TIMEOUT_MS),
        "--group-consumer-max-session-timeout-ms", str(CONSUMER_SESSION_TIMEOUT_MS),
    )  # fmt: skip
    server.start(60)
    return server


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "commit": git_commit(),
        "command": shlex.join(["python", "-m", "bench.consumer_protocol", *args.argv]),
        "fsync": args.fsync,
        "members": args.members,
        "partitions": args.partitions,
    }
    phases: dict[str, Callable[[KcoordServer, argparse.Namespace], Awaitable[dict[str, Any]]]] = {
        "consumer": consumer_phase,
        "classic": classic_phase,
    }
    for name in args.protocols:
        print(f"{name} protocol ...", flush=True)
        with tempfile.TemporaryDirectory(prefix="kcoord-bench-") as tmp:
            server = start_server(Path(tmp) / "data", args.fsync)
            try:
                results[name] = await phases[name](server, args)
            finally:
                if server.stop() != 0:
                    print("\n".join(server.lines[-30:]), file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.consumer_protocol", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--members", type=int, default=1000, help="members before one joins (default 1000)")
    parser.add_argument("--partitions", type=int, default=2000, help="partitions of the topic (default 2000)")
    parser.add_argument(
        "--requests", type=int, default=50_000, help="steady heartbeats per protocol (default 50000)"
    )
    parser.add_argument("--fsync", choices=("never", "always"), default="never")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds each phase may take (default 600)"
    )
    parser.add_argument("--protocols", default="consumer,classic", help="default consumer,classic")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.protocols = [p for p in args.protocols.split(",") if p]
    if not set(args.protocols) <= {"consumer", "classic"}:
        parser.error("--protocols: consumer, classic or both")
    if args.members < CONNECTIONS:
        parser.error(f"--members must be at least {CONNECTIONS}")
    if args.requests < CONNECTIONS * WINDOW:
        parser.error(f"--requests must be at least {CONNECTIONS * WINDOW}")
    raise_open_files_limit()
    import uvloop

    try:
        results = uvloop.run(bench(args))
    except Aborted as exc:
        print(f"aborted: {exc}", file=sys.stderr)
        return 1
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
