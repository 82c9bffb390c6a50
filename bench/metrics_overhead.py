"""What the metrics endpoint costs: pairs of kcoord servers, one without and one with `/metrics`
(scraped every second), loaded in alternating short slices so that machine drift hits both alike.

    .venv/bin/python -m bench.metrics_overhead [--rounds 10] [--slice 2] [--control] [--json out.json]

Issue 11 asks that heartbeats/s and commits/s with `/metrics` on and scraped every second stay within
5 % of the figures with the endpoint off. Run to run, this machine drifts by 10-15 % (bench.coordinator
run twice), and two servers started side by side differ by +-5 % for no reason but the process (see
`--control`, an A/A run with the endpoint off on both), more than the effect measured. So each round
starts a fresh pair, forms the same groups on both (100 groups x 10 members for heartbeats, OffsetCommit
of one partition for 100 groups, with fsync=always unless `--fsync never`) and loads `off` then `on`,
or `on` then `off` (alternating, so a trend within the run cancels), for `--slice` seconds each after
a 0.5 s warm-up. Only one server is loaded at a time; the scraper keeps scraping `on` all along. The
report gives, per load, the median over rounds of on/off for requests/s and for server CPU per
request, the medians of each side, and the server CPU one scrape costs (measured on the idle `on`
server after the loads).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.coordinator import (
    COMMIT_V,
    HEARTBEAT_V,
    LoadResult,
    commit_errors,
    connect,
    create_topic,
    encode,
    form_group,
    free_port,
    git_commit,
    heartbeat_error,
    raise_open_files_limit,
    run_load,
    scrape_metrics,
    start_kcoord,
)
from tests.kcoord_process import KcoordServer

GROUPS, PER_GROUP, CONNECTIONS, WINDOW = 100, 10, 16, 64


async def heartbeat_frames(server: KcoordServer) -> list[list[bytes]]:
    """Forms 100 groups of 10 on `server`; pre-encoded heartbeats of all 1,000 members, 16 connections."""
    topic = "bench-heartbeats"
    await create_topic(server.port, topic, 64)
    conns = await connect(server.port, GROUPS * PER_GROUP)
    formed = await asyncio.gather(*(
        form_group(conns[g * PER_GROUP : (g + 1) * PER_GROUP], f"hb-{g}", topic, 1.0, 60)
        for g in range(GROUPS)
    ))  # fmt: skip
    frames: list[list[bytes]] = [[] for _ in range(CONNECTIONS)]
    i = 0
    for formation, members, tasks in formed:
        for task in tasks:  # the load heartbeats for them from now on
            task.cancel()
        for member in members:
            body = {
                "group_id": formation.group,
                "generation_id": member.generation,
                "member_id": member.member_id,
                "group_instance_id": None,
            }
            frames[i % CONNECTIONS].append(encode(12, HEARTBEAT_V, body))
            i += 1
    await asyncio.gather(*(t for _, _, tasks in formed for t in tasks), return_exceptions=True)
    # The member connections stay open (a real group's would): the server keeps them in its state.
    return frames


async def commit_frames(server: KcoordServer) -> list[list[bytes]]:
    topic = "bench-commits"
    await create_topic(server.port, topic, 1)
    frames: list[list[bytes]] = [[] for _ in range(CONNECTIONS)]
    for i in range(CONNECTIONS * 64):
        body = {
            "group_id": f"commit-{i % GROUPS}",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": i, "committed_metadata": "bench"}]}],
        }  # fmt: skip
        frames[i % CONNECTIONS].append(encode(8, COMMIT_V, body))
    return frames


def summarise(results: dict[str, list[LoadResult]]) -> dict[str, Any]:
    off, on = results["off"], results["on"]
    ratios = [b.requests_per_s / a.requests_per_s for a, b in zip(off, on, strict=True)]
    cpu_ratios = [
        b.server_cpu_us_per_request / a.server_cpu_us_per_request for a, b in zip(off, on, strict=True)
    ]
    return {
        "rounds": len(off),
        "off_requests_per_s": statistics.median(r.requests_per_s for r in off),
        "on_requests_per_s": statistics.median(r.requests_per_s for r in on),
        "off_cpu_us_per_request": statistics.median(r.server_cpu_us_per_request for r in off),
        "on_cpu_us_per_request": statistics.median(r.server_cpu_us_per_request for r in on),
        "throughput_on_over_off": statistics.median(ratios),
        "throughput_ratio_range": (min(ratios), max(ratios)),
        "cpu_per_request_on_over_off": statistics.median(cpu_ratios),
        "errors": {side: sum(sum(r.errors.values()) for r in rs) for side, rs in results.items()},
    }


async def scrape_cost(server: KcoordServer, port: int, scrapes: int) -> tuple[float, int]:
    """Server CPU seconds per /metrics scrape on an otherwise idle server, and the answer's size."""
    await asyncio.sleep(1.0)  # let the last load's stragglers drain
    cpu0 = server.cpu_seconds()
    size = 0
    for _ in range(scrapes):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await writer.drain()
        size = len(await reader.read())
        writer.close()
    idle0 = server.cpu_seconds()
    await asyncio.sleep(0.5)  # the idle baseline over a comparable stretch (timers, member sessions)
    idle = server.cpu_seconds() - idle0
    return max(idle0 - cpu0 - idle, 0.0) / scrapes, size


def pin(pid: int, cpu: int) -> None:
    """Every thread of `pid` onto one CPU: the scheduler no longer moves the loaded server next to
    the load generator in one slice and away from it in the next, which alone moved results by ~10 %."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), {cpu})


async def one_round(args: argparse.Namespace, tmp: Path, round_: int, results: dict[str, Any]) -> None:
    """A fresh pair of servers: each process has its own layout of memory and hash seeds, which moved
    one server's figures against another's by +-5 % (the A/A control), more than the effect; a new
    pair per round turns that into noise the median over rounds removes."""
    http_port = free_port()
    # --control: both servers without the endpoint, to show the method's own noise (an A/A test)
    on_port = None if args.control else http_port
    servers = {
        "off": start_kcoord(tmp / f"off-{round_}", fsync=args.fsync),
        "on": start_kcoord(tmp / f"on-{round_}", on_port, fsync=args.fsync),
    }
    stop = asyncio.Event()
    cpus = sorted(os.sched_getaffinity(0))
    if args.pin and len(cpus) >= 2:  # this process (load, scraper) on one CPU, both servers on another
        pin(os.getpid(), cpus[0])
        for server in servers.values():
            pin(server.pid, cpus[1])
        results["pinned"] = f"load generator on CPU {cpus[0]}, servers on CPU {cpus[1]}"
    scraper = asyncio.ensure_future(scrape_metrics(http_port, stop)) if on_port else None
    order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
    try:
        hb = {side: await heartbeat_frames(server) for side, server in servers.items()}
        for side in order:
            results["heartbeats"][side].append(
                await run_load(servers[side], hb[side], WINDOW, heartbeat_error, 0.5, args.slice)
            )
        commits = {side: await commit_frames(server) for side, server in servers.items()}
        for side in order:
            results["commits"][side].append(
                await run_load(servers[side], commits[side], WINDOW, commit_errors, 0.5, args.slice)
            )
        stop.set()
        if scraper is not None:
            scrapes, median_s, _ = await scraper
            results["scrapes"] += scrapes
            results["scrape_wall_ms"].append(1000 * median_s)
            per_scrape, size = await scrape_cost(servers["on"], http_port, 20)
            results["scrape_cpu_ms"].append(1000 * per_scrape)
            results["scrape_bytes"] = size
    finally:
        stop.set()
        if scraper is not None and not scraper.done():
            scraper.cancel()
        for server in servers.values():
            server.stop()


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "heartbeats": {"off": [], "on": []},
        "commits": {"off": [], "on": []},
        "scrapes": 0,
        "scrape_wall_ms": [],
        "scrape_cpu_ms": [],
        "scrape_bytes": 0,
    }
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-") as tmp:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}: two fresh servers, 100 groups of 10 on each ...",
                  flush=True)  # fmt: skip
            await one_round(args, Path(tmp), round_, raw)
    results: dict[str, Any] = {
        "commit": git_commit(), "fsync": args.fsync, "rounds": args.rounds, "slice_s": args.slice,
        "control": args.control,
        "pinned": raw.get("pinned", "not pinned"),
        "heartbeats": summarise(raw["heartbeats"]),
        "commits": summarise(raw["commits"]),
        "scrapes": raw["scrapes"],
    }  # fmt: skip
    if raw["scrape_cpu_ms"]:
        results["scrape_wall_median_ms"] = statistics.median(raw["scrape_wall_ms"])
        results["scrape_cpu_ms"] = statistics.median(raw["scrape_cpu_ms"])
        results["scrape_bytes"] = raw["scrape_bytes"]
    return results


def report(r: dict[str, Any]) -> None:
    what = (
        "CONTROL: both servers without the endpoint ('on' is a second 'off')"
        if r["control"]
        else f"/metrics scraped {r['scrapes']} times (1/s) on the 'on' server"
    )
    print(f"commit {r['commit']}, {r['rounds']} rounds of {r['slice_s']} s per side, {what}; "
          f"{r.get('pinned', 'not pinned')}")  # fmt: skip
    for name, label in (
        ("heartbeats", "heartbeats (100 groups x 10)"),
        ("commits", f"OffsetCommit (1 partition, fsync={r['fsync']})"),
    ):
        s = r[name]
        low, high = s["throughput_ratio_range"]
        print(
            f"{label}: off {s['off_requests_per_s']:,.0f}/s {s['off_cpu_us_per_request']:.2f} us/request, "
            f"on {s['on_requests_per_s']:,.0f}/s {s['on_cpu_us_per_request']:.2f} us/request; "
            f"on/off per round: throughput median {100 * (s['throughput_on_over_off'] - 1):+.1f}% "
            f"(range {100 * (low - 1):+.1f}%..{100 * (high - 1):+.1f}%), "
            f"CPU per request median {100 * (s['cpu_per_request_on_over_off'] - 1):+.1f}%, "
            f"errors {s['errors']}"
        )
    if r["control"]:
        return
    print(f"one scrape ({r['scrape_bytes']:,} bytes): {r['scrape_cpu_ms']:.1f} ms of server CPU "
          f"(idle server with 100 groups of 10 and 100 committing groups); "
          f"under load {r['scrape_wall_median_ms']:.1f} ms wall, median")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_overhead", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="rounds, each with a fresh pair of servers (default 10)"
    )
    parser.add_argument("--slice", type=float, default=2.0, help="seconds measured per server per round")
    parser.add_argument(
        "--fsync",
        choices=("always", "never"),
        default="always",
        help="the servers' --fsync (default always, as bench.coordinator); `never` takes the writer "
        "thread's batching, which differs from process to process, out of the commit figures",
    )
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="leave CPU placement to the OS")
    parser.add_argument("--control", action="store_true", help="A/A: the endpoint off on both servers")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.slice <= 0:
        parser.error("--rounds must be >= 1 and --slice > 0")
    raise_open_files_limit()
    import uvloop  # the servers run on it; so does the load, as in bench.coordinator

    results = uvloop.run(bench(args))
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
