"""Data-plane benchmark: librdkafka (confluent-kafka) clients in their own processes against `kcoord serve`.

    .venv/bin/python -m bench.dataplane [--seconds 8] [--message-bytes 1024] [--json out.json]

Phases, each bounded in time, all traffic on 127.0.0.1, the server with --fsync always (every
acks=all batch fsynced before it is acknowledged):
1. produce MiB/s and messages/s with acks=all to 1 and to 6 partitions (one producer process);
2. consume MiB/s of everything produced, from a cold start of the log (a fresh consumer process);
3. end-to-end latency p50/p99 from produce to a long-polling consumer at a steady 20 MiB/s;
and, measured in the same run, the limits of this machine: fsync latency and sequential write MiB/s of
the data directory's file system, loopback TCP MiB/s, and the same producer against a server that
does not fsync (--fsync never: the client-bound ceiling). Server CPU seconds per MiB come from
/proc/PID/stat. Figures vary between machines; compare them only with limits from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.kcoord_process import KcoordServer

MIB = 1 << 20


# -- the client side, run as `python -m bench.dataplane <role> <json>` in its own process ------------------


def produce_role(opts: dict[str, Any]) -> dict[str, Any]:
    """Produce for `seconds` (or at `rate` bytes/s); report bytes and messages acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": opts["bootstrap"],
            "acks": "all",
            "linger.ms": opts.get("linger_ms", 5),
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 262_144,
            "compression.type": "none",
            **opts.get("client_config", {}),  # security.protocol, ssl.* (bench.security)
        }
    )
    payload = _payload(opts["message_bytes"], opts.get("compressible", False))
    acked = [0]
    latencies: list[float] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += 1

    topic, partitions = opts["topic"], opts["partitions"]
    deadline = time.monotonic() + opts["seconds"]
    rate = opts.get("rate")
    started, sent = time.monotonic(), 0
    while time.monotonic() < deadline:
        if rate and sent * len(payload) > rate * (time.monotonic() - started):
            producer.poll(0.001)
            continue
        try:
            stamp = time.time_ns().to_bytes(8, "big")
            producer.produce(
                topic, value=stamp + payload[8:], partition=sent % partitions, on_delivery=delivered
            )
            sent += 1
        except BufferError:
            producer.poll(0.005)
        if sent % 1000 == 0:
            producer.poll(0)
    producer.flush(60)
    elapsed = time.monotonic() - started
    return {
        "messages": acked[0],
        "bytes": acked[0] * len(payload),
        "seconds": elapsed,
        "latencies": latencies,
    }


def _payload(size: int, compressible: bool) -> bytes:
    """Random bytes (nothing a codec can shrink), or text-like records a codec shrinks (bench.compression)."""
    if not compressible:
        return os.urandom(size)
    words = [b"order", b"customer", b"%08d" % int.from_bytes(os.urandom(3), "big"), b"EUR", b"shipped"]
    return b" ".join(words[i % len(words)] for i in range(size)).ljust(size)[:size]


def consume_role(opts: dict[str, Any]) -> dict[str, Any]:
    """Read partitions from the start until `expected` messages arrived (or `seconds`); bytes/s, latencies."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": opts["bootstrap"],
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.min.bytes": 1,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            # librdkafka's default is read_committed; bench.transactions compares the two
            **({"isolation.level": opts["isolation_level"]} if "isolation_level" in opts else {}),
        }
    )
    consumer.assign([TopicPartition(opts["topic"], p, 0) for p in range(opts["partitions"])])
    count, size, latencies = 0, 0, []
    started = time.monotonic()
    deadline = started + opts["seconds"]
    # For latency, poll(): consume(num_messages=N) holds what arrived until N messages or its
    # timeout, which would add up to the timeout to every measured latency.
    take = (
        (lambda: [m for m in [consumer.poll(0.1)] if m is not None])
        if opts.get("latency")
        else (lambda: consumer.consume(num_messages=10_000, timeout=0.1))
    )
    while time.monotonic() < deadline and count < opts.get("expected", 1 << 62):
        for msg in take():
            if msg.error() is not None:
                continue
            count += 1
            value = msg.value()
            size += len(value)
            if opts.get("latency"):
                latencies.append((time.time_ns() - int.from_bytes(value[:8], "big")) / 1e6)
    elapsed = time.monotonic() - started
    consumer.close()
    return {"messages": count, "bytes": size, "seconds": elapsed, "latencies": latencies}


def run_role(role: str, opts: dict[str, Any], module: str = "bench.dataplane") -> dict[str, Any]:
    """Run `python -m <module> <role> <opts>` in its own process; its last stdout line is the result."""
    proc = subprocess.run(
        [sys.executable, "-m", module, role, json.dumps(opts)],
        capture_output=True,
        text=True,
        timeout=opts["seconds"] + 120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{module} {role} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


# -- machine limits ------------------------------------------------------------------------------------------


def fsync_latency_ms(directory: Path, rounds: int = 200) -> float:
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        started = time.perf_counter()
        for _ in range(rounds):
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
        return (time.perf_counter() - started) / rounds * 1000
    finally:
        os.close(fd)
        path.unlink()


def sequential_write_mib_s(directory: Path, total: int = 512 * MIB) -> float:
    path = directory / "write-probe"
    chunk = os.urandom(MIB)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        started = time.perf_counter()
        for _ in range(total // MIB):
            os.write(fd, chunk)
        os.fsync(fd)
        return total / MIB / (time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()


def loopback_mib_s(total: int = 1024 * MIB) -> float:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def sink() -> None:
        conn, _ = server.accept()
        with conn:
            while conn.recv(1 << 20):
                pass

    thread = threading.Thread(target=sink)
    thread.start()
    chunk = b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.perf_counter()
        for _ in range(total // MIB):
            sock.sendall(chunk)
    thread.join()
    server.close()
    return total / MIB / (time.perf_counter() - started)


# -- phases --------------------------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def produce_consume(server: KcoordServer, partitions: int, args: argparse.Namespace) -> dict[str, Any]:
    topic = f"bench-{partitions}-{time.monotonic_ns()}"
    create_topic(server.bootstrap, topic, partitions)
    base = {"bootstrap": server.bootstrap, "topic": topic, "partitions": partitions}
    cpu0 = server.cpu_seconds()
    produced = run_role("produce", {**base, "message_bytes": args.message_bytes, "seconds": args.seconds})
    cpu1 = server.cpu_seconds()
    consumed = run_role("consume", {**base, "seconds": 120, "expected": produced["messages"]})
    cpu2 = server.cpu_seconds()
    return {
        "partitions": partitions,
        "produce_mib_s": produced["bytes"] / MIB / produced["seconds"],
        "produce_msgs_s": produced["messages"] / produced["seconds"],
        "produce_cpu_s_per_mib": (cpu1 - cpu0) / max(produced["bytes"] / MIB, 1e-9),
        "consume_mib_s": consumed["bytes"] / MIB / consumed["seconds"],
        "consume_cpu_s_per_mib": (cpu2 - cpu1) / max(consumed["bytes"] / MIB, 1e-9),
        "consumed_all": consumed["messages"] >= produced["messages"],
    }


def latency_phase(server: KcoordServer, args: argparse.Namespace) -> dict[str, Any]:
    topic = f"bench-latency-{time.monotonic_ns()}"
    create_topic(server.bootstrap, topic, 1)
    base = {"bootstrap": server.bootstrap, "topic": topic, "partitions": 1}
    result: dict[str, Any] = {}
    consumer = threading.Thread(
        target=lambda: result.update(
            run_role("consume", {**base, "seconds": args.seconds + 5, "latency": True})
        )
    )
    consumer.start()
    time.sleep(2)  # the consumer is connected and long-polling before the first message
    run_role(
        "produce",
        {
            **base,
            "message_bytes": args.message_bytes,
            "seconds": args.seconds,
            "rate": 20 * MIB,
            "linger_ms": 0,
        },
    )
    consumer.join()
    lat = result["latencies"]
    return {"e2e_p50_ms": percentile(lat, 0.5), "e2e_p99_ms": percentile(lat, 0.99), "samples": len(lat)}


def commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": commit(), "message_bytes": args.message_bytes}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-", dir=args.dir) as tmp:
        data = Path(tmp)
        results["limits"] = {
            "fsync_ms": fsync_latency_ms(data),
            "seq_write_mib_s": sequential_write_mib_s(data),
            "loopback_mib_s": loopback_mib_s(),
        }
        for fsync in ("never", "always"):
            # INFO: the fixture waits for the "listening on" line
            server = KcoordServer(data / f"data-{fsync}", "--fsync", fsync, "--log-level", "INFO")
            server.start(60)
            try:
                rows = [produce_consume(server, p, args) for p in (1, 6)]
                results[f"fsync_{fsync}"] = rows
                if fsync == "always":
                    results["latency"] = latency_phase(server, args)
            finally:
                server.stop()
    return results


def report(results: dict[str, Any]) -> None:
    limits = results["limits"]
    print(
        f"commit {results['commit']}, {results['message_bytes']}-byte messages, librdkafka producer/consumer"
    )
    print(
        f"limits: fsync {limits['fsync_ms']:.2f} ms, sequential write {limits['seq_write_mib_s']:.0f} MiB/s, "
        f"loopback TCP {limits['loopback_mib_s']:.0f} MiB/s"
    )
    for fsync in ("never", "always"):
        for row in results[f"fsync_{fsync}"]:
            produce_cpu = row["produce_cpu_s_per_mib"] * 1000
            consume_cpu = row["consume_cpu_s_per_mib"] * 1000
            print(
                f"--fsync {fsync:6} {row['partitions']} partition(s): "
                f"produce {row['produce_mib_s']:.1f} MiB/s ({row['produce_msgs_s']:,.0f} msg/s, "
                f"server {produce_cpu:.1f} ms CPU/MiB), consume {row['consume_mib_s']:.1f} MiB/s "
                f"(server {consume_cpu:.1f} ms CPU/MiB){'' if row['consumed_all'] else ' INCOMPLETE'}"
            )
    lat = results["latency"]
    print(
        f"end-to-end at 20 MiB/s: p50 {lat['e2e_p50_ms']:.1f} ms, p99 {lat['e2e_p99_ms']:.1f} ms "
        f"({lat['samples']} msgs)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("produce", "consume"):
        role = produce_role if argv[0] == "produce" else consume_role
        print(json.dumps(role(json.loads(argv[1]))))
        return 0
    parser = argparse.ArgumentParser(prog="bench.dataplane", description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--dir", default=None, help="where the data directories go (default: the temp dir)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    results = bench(args)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
