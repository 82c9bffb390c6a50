"""Broker-side recompression benchmark: what a topic's `compression.type` costs the server (issue 33).

    .venv/bin/python -m bench.compression [--seconds 8] [--message-bytes 1024] [--fsync always]
                                          [--codecs zstd,lz4,gzip,snappy] [--random] [--json out.json]

One server, one run: for a `compression.type=producer` topic (the batch is stored as it came, the
baseline) and then one topic per codec given, a librdkafka producer that does not compress (its own
process, `bench.dataplane`'s produce role, acks=all) writes for `--seconds`, then a consumer reads
everything back. Per topic: produce MiB/s (uncompressed bytes acknowledged), the server's CPU ms per
produced MiB (/proc/PID/stat, the recompression's cost shows as the difference to the producer row),
the topic's bytes on disk per produced MiB, and consume MiB/s. Payloads are text-like (a codec shrinks
them) unless `--random`. Compare rows of the same run only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.dataplane import MIB, commit, run_role
from tests.kcoord_process import KcoordServer


def create_topic(bootstrap: str, topic: str, codec: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=1, replication_factor=1, config={"compression.type": codec})
    admin.create_topics([new])[topic].result(30)


def disk_bytes(data_dir: Path, topic: str) -> int:
    return sum(p.stat().st_size for p in (data_dir / "topics" / f"{topic}-0").glob("*.log"))


def row(server: KcoordServer, data_dir: Path, codec: str, args: argparse.Namespace) -> dict[str, Any]:
    topic = f"bench-{codec}-{time.monotonic_ns()}"
    create_topic(server.bootstrap, topic, codec)
    base = {"bootstrap": server.bootstrap, "topic": topic, "partitions": 1}
    options = {"message_bytes": args.message_bytes, "seconds": args.seconds, "compressible": not args.random}
    cpu0 = server.cpu_seconds()
    produced = run_role("produce", {**base, **options})
    cpu1 = server.cpu_seconds()
    consumed = run_role("consume", {**base, "seconds": 120, "expected": produced["messages"]})
    mib = max(produced["bytes"] / MIB, 1e-9)
    return {
        "compression_type": codec,
        "produce_mib_s": produced["bytes"] / MIB / produced["seconds"],
        "produce_cpu_ms_per_mib": (cpu1 - cpu0) * 1000 / mib,
        "disk_bytes_per_mib": disk_bytes(data_dir, topic) / mib,
        "consume_mib_s": consumed["bytes"] / MIB / consumed["seconds"],
        "consumed_all": consumed["messages"] >= produced["messages"],
    }


def bench(args: argparse.Namespace) -> dict[str, Any]:
    codecs = ["producer", *[c for c in args.codecs.split(",") if c]]
    results: dict[str, Any] = {
        "commit": commit(),
        "message_bytes": args.message_bytes,
        "payload": "random" if args.random else "text",
        "fsync": args.fsync,
    }
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-compression-", dir=args.dir) as tmp:
        data_dir = Path(tmp) / "data"
        server = KcoordServer(data_dir, "--fsync", args.fsync, "--log-level", "INFO")
        server.start(60)
        try:
            results["rows"] = [row(server, data_dir, codec, args) for codec in codecs]
        finally:
            server.stop()
    return results


def report(results: dict[str, Any]) -> None:
    print(
        f"commit {results['commit']}, {results['message_bytes']}-byte {results['payload']} messages, "
        f"--fsync {results['fsync']}, an uncompressing librdkafka producer"
    )
    for r in results["rows"]:
        print(
            f"compression.type={r['compression_type']:12} produce {r['produce_mib_s']:7.1f} MiB/s, "
            f"server {r['produce_cpu_ms_per_mib']:6.1f} ms CPU/MiB, "
            f"{r['disk_bytes_per_mib'] / MIB:5.2f} MiB on disk per MiB, "
            f"consume {r['consume_mib_s']:7.1f} MiB/s{'' if r['consumed_all'] else ' INCOMPLETE'}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.compression", description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--fsync", default="always", choices=("always", "never"))
    parser.add_argument("--codecs", default="zstd", help="topics besides the producer one, e.g. zstd,lz4")
    parser.add_argument("--random", action="store_true", help="incompressible payloads")
    parser.add_argument("--dir", default=None, help="where the data directory goes (default: the temp dir)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    results = bench(args)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
