"""Instructions the server executes per request, counted by valgrind's callgrind: a figure that does
not move with the machine's load, clock or scheduler, for comparing two builds (or metrics off and on)
where throughput differences of a few per cent drown in run-to-run noise.

    .venv/bin/python -m bench.instructions [--requests 4096] [--metrics] [--fsync never] [--acls N] [--json F]

The server runs under `valgrind --tool=callgrind` (tens of times slower, which does not matter: nothing
here is timed). Groups are formed; then the counters are zeroed (`callgrind_control -z`), a fixed number
of pre-encoded requests is pipelined (16 connections, 64 in flight each, as bench.coordinator), and the
count of executed instructions (Ir, every thread of the process: the event loop and the storage writer)
is read from the dump. `--acls N` runs the server with `--authorizer standard` and bench.security's N
ACLs (half literal, half prefixed; the load's principal allowed): against a run without, the
instructions an authorization check adds per request. Loads: OffsetCommit of one partition (v3, as
bench.coordinator), then heartbeats of 100 members (10 groups x 10). `--metrics` serves `/metrics`
(the request path then counts and samples what the metrics need) and, after the loads, counts the
instructions of one scrape. Under valgrind a scrape a second would land on far fewer requests than at
full speed, so the two are measured apart: at R requests/s and one scrape a second, the endpoint's
share is the per-request difference plus scrape / R. Needs valgrind (Debian package `valgrind`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.coordinator import (
    COMMIT_V,
    HEARTBEAT_V,
    commit_errors,
    connect,
    create_topic,
    encode,
    form_group,
    free_port,
    git_commit,
    heartbeat_error,
)
from bench.security_loads import assert_denied, bench_acls, create_acls
from kcoord.protocol.frames import FrameSplitter
from tests.kcoord_process import KcoordServer

GROUPS, PER_GROUP, CONNECTIONS, WINDOW = 10, 10, 16, 64


class CallgrindServer(KcoordServer):
    """`kcoord serve` under callgrind; `zero` the counters, then read `instructions` since."""

    def __init__(self, data_dir: Path, out_dir: Path, *extra: str) -> None:
        # A fixed hash seed: dict and set layouts (and so the instructions of every lookup) no longer
        # differ from one server process to the next.
        super().__init__(data_dir, *extra, env={"PYTHONHASHSEED": "0"})
        self.out_dir = out_dir

    def argv(self) -> list[str]:
        return [
            "valgrind", "--tool=callgrind",
            f"--callgrind-out-file={self.out_dir}/callgrind.out.%p",
            *super().argv(),
        ]  # fmt: skip

    def _control(self, *args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(self.pid)], check=True, capture_output=True, timeout=60
        )

    def zero(self) -> None:
        self._control("-z")

    def instructions(self) -> int:
        """Dump the counters and return the executed instructions since the last `zero`."""
        before = set(self.out_dir.glob("callgrind.out.*"))
        self._control("-d")
        dumps = sorted(set(self.out_dir.glob("callgrind.out.*")) - before, key=lambda p: p.stat().st_mtime)
        total = 0
        for dump in dumps:  # one per thread with --separate-threads; one in all otherwise
            match = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(errors="replace"), re.M)
            if match:
                total += int(match.group(1))
        return total


class CountedPump(asyncio.Protocol):
    """Sends `total` pre-encoded requests, `window` in flight; `done` when all are answered."""

    def __init__(
        self, frames: list[bytes], total: int, window: int, error_of: Callable[[bytes], int]
    ) -> None:
        self.frames, self.total, self.window, self.error_of = frames, total, window, error_of
        self.sent = self.answered = self.errors = 0
        self.splitter = FrameSplitter()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def send(self, count: int) -> None:
        count = min(count, self.total - self.sent)
        if count <= 0:
            return
        n = len(self.frames)
        self.transport.write(b"".join(self.frames[(self.sent + i) % n] for i in range(count)))
        self.sent += count

    def data_received(self, data: bytes) -> None:
        payloads = self.splitter.feed(data)
        self.errors += sum(1 for p in payloads if self.error_of(p))
        self.answered += len(payloads)
        if self.answered >= self.total and not self.done.done():
            self.done.set_result(None)
        self.send(len(payloads))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"closed after {self.answered} answers: {exc}"))


async def pump(port: int, frames: list[list[bytes]], total: int, error_of: Callable[[bytes], int]) -> int:
    """Pipeline `total` requests over the connections; returns the count of error answers."""
    loop = asyncio.get_running_loop()
    pumps = []
    for conn_frames in frames:
        _, p = await loop.create_connection(
            functools.partial(CountedPump, conn_frames, total // len(frames), WINDOW, error_of),
            "127.0.0.1",
            port,
        )
        pumps.append(p)
    for p in pumps:
        p.send(WINDOW)
    await asyncio.wait_for(asyncio.gather(*(p.done for p in pumps)), 600)
    for p in pumps:
        p.transport.close()
    return sum(p.errors for p in pumps)


async def heartbeat_frames(port: int) -> tuple[list[list[bytes]], list[Any]]:
    topic = "bench-heartbeats"
    await create_topic(port, topic, 16)
    conns = await connect(port, GROUPS * PER_GROUP)
    formed = []
    for g in range(GROUPS):  # one at a time: everything is slow under valgrind
        formed.append(
            await form_group(conns[g * PER_GROUP : (g + 1) * PER_GROUP], f"hb-{g}", topic, 1.0, 300)
        )
    frames: list[list[bytes]] = [[] for _ in range(CONNECTIONS)]
    i = 0
    for formation, members, tasks in formed:
        for task in tasks:
            task.cancel()
        for member in members:
            body = {"group_id": formation.group, "generation_id": member.generation,
                    "member_id": member.member_id, "group_instance_id": None}  # fmt: skip
            frames[i % CONNECTIONS].append(encode(12, HEARTBEAT_V, body))
            i += 1
    await asyncio.gather(*(t for _, _, tasks in formed for t in tasks), return_exceptions=True)
    return frames, conns  # the members' connections stay open, as in a real group


async def commit_frames(port: int) -> list[list[bytes]]:
    topic = "bench-commits"
    await create_topic(port, topic, 1)
    frames: list[list[bytes]] = [[] for _ in range(CONNECTIONS)]
    for i in range(CONNECTIONS * 64):
        body = {
            "group_id": f"commit-{i % 100}",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": i, "committed_metadata": "bench"}]}],
        }  # fmt: skip
        frames[i % CONNECTIONS].append(encode(8, COMMIT_V, body))
    return frames


async def measure(server: CallgrindServer, load: Any, total: int, error_of: Any) -> dict[str, Any]:
    server.zero()
    errors = await pump(server.port, load, total, error_of)
    return {"requests": total, "errors": errors, "instructions_per_request": server.instructions() / total}


async def scrape_instructions(server: CallgrindServer, http_port: int, scrapes: int) -> tuple[float, int]:
    """Instructions of one GET /metrics (a Prometheus scrape), and the answer's size. Under valgrind
    a scrape takes long enough for the server's own timers to run meanwhile: the instructions of an
    equally long idle stretch right after are subtracted."""
    server.zero()
    started = time.monotonic()
    size = 0
    for _ in range(scrapes):
        reader, writer = await asyncio.open_connection("127.0.0.1", http_port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await writer.drain()
        size = len(await asyncio.wait_for(reader.read(), 300))
        writer.close()
    elapsed = time.monotonic() - started
    scraping = server.instructions()
    server.zero()
    await asyncio.sleep(elapsed)
    idle = server.instructions()
    return max(scraping - idle, 0) / scrapes, size


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "commit": git_commit(), "metrics": args.metrics, "fsync": args.fsync, "acls": args.acls,
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kcoord-instr-") as tmp:
        http_port = free_port() if args.metrics else None
        http = ("--http-listen", f"127.0.0.1:{http_port}") if http_port else ()
        authorizer = (
            ("--authorizer", "standard", "--allow-everyone-if-no-acl-found", "true") if args.acls else ()
        )
        server = CallgrindServer(Path(tmp) / "data", Path(tmp), "--fsync", args.fsync, *http, *authorizer)
        server.start(300)
        try:
            if args.acls:  # bench.security's set: the load's principal allowed, among args.acls others
                await create_acls(server.port, bench_acls(args.acls, GROUPS))
                await assert_denied(server.port, "app-0")
            # commits first: once the heartbeat groups exist, their members' sessions run out while
            # another load is counted (everything is slow under valgrind), and the rebalances that
            # follow would be counted with it
            commits = await commit_frames(server.port)
            results["commits"] = await measure(server, commits, args.requests, commit_errors)
            hb, conns = await heartbeat_frames(server.port)
            results["heartbeats"] = await measure(server, hb, args.requests, heartbeat_error)
            if http_port:
                per_scrape, size = await scrape_instructions(server, http_port, 5)
                results["scrape"] = {"instructions": per_scrape, "bytes": size}
            for conn in conns:
                conn.transport.close()
        finally:
            server.stop()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.instructions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--requests", type=int, default=4096, help="requests counted per load (default 4096)")
    parser.add_argument("--metrics", action="store_true", help="serve /metrics; also count one scrape")
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument(
        "--acls", type=int, default=0, help="--authorizer standard with this many ACLs (bench.security's)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.requests < CONNECTIONS * WINDOW:
        parser.error(f"--requests must be at least {CONNECTIONS * WINDOW}")
    import uvloop

    results = uvloop.run(bench(args))
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
