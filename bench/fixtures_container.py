"""Container start-up benchmark (issue 26): time from `KcoordContainer.start()` to the first successful
produce, the figure users compare with a Kafka container's 10-60 s. Run by hand:

    .venv/bin/python -m bench.fixtures_container [--image localhost/kcoord-test:latest] [--rounds 5]
        [--bridge] [--json out.json]

Each round: `start()` (create + start the container, wait until ApiVersions answers and /readyz says
ready), then a stock kafka-python producer is built on `get_bootstrap_server()` and one record is
sent with acks=all and waited for (the topic is auto-created), then the container is removed. Reported:
median, min and max of start() to ready, start() to the first acknowledged produce, and the removal.

The engine is DOCKER_HOST's; without one, `podman system service` is started on a temporary socket for
the run (runc, explicit ulimits, host networking: containers.conf as tests/container's fixture writes
it) and stopped by its PID at the end. The image must exist: the container tests build it
(`localhost/kcoord-test:latest`), or `podman build --format docker -t kcoord .`. Host networking is the
default here (the bridge must not be used on these machines); `--bridge` measures the published-port
set-up instead.

For comparison (fixtures-notes.md): a JVM broker starts in ~1.15-1.2 s, GraalVM native ~0.11-0.14 s
(KIP-974); Kafka containers take 10-60 s to a usable broker (testcontainers-java PR #2078, apache/pinot
PR #17790).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from kafka import KafkaProducer
from testcontainers.core.config import testcontainers_config

from bench.coordinator import git_commit
from kcoord.testing.containers import KcoordContainer

CONTAINERS_CONF = (
    '[engine]\nruntime = "runc"\n'
    '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]\nnetns = "host"\n'
)


@contextlib.contextmanager
def docker_host(workdir: Path) -> Iterator[str]:
    """DOCKER_HOST if set, else a podman API socket of this run (stopped by its PID afterwards)."""
    if os.environ.get("DOCKER_HOST"):
        yield os.environ["DOCKER_HOST"]
        return
    conf, sock = workdir / "containers.conf", workdir / "podman.sock"
    conf.write_text(CONTAINERS_CONF)
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{sock}"],
        env={**os.environ, "CONTAINERS_CONF": str(conf)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            if service.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("podman system service did not create its socket")
            time.sleep(0.05)
        os.environ["DOCKER_HOST"] = f"unix://{sock}"
        yield os.environ["DOCKER_HOST"]
    finally:
        os.environ.pop("DOCKER_HOST", None)
        service.send_signal(signal.SIGTERM)
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()


def one_round(image: str, bridge: bool) -> dict[str, float]:
    """Seconds from start() to ready, to the first acknowledged produce, and of the removal."""
    container = KcoordContainer(image)
    if not bridge:
        container.with_host_network()
    started = time.monotonic()
    try:
        container.start()
        ready = time.monotonic()
        producer = KafkaProducer(bootstrap_servers=container.get_bootstrap_server(), acks="all")
        producer.send(f"bench-{uuid.uuid4().hex[:8]}", value=b"first").get(timeout=30)
        produced = time.monotonic()
        producer.close()
    finally:
        stopping = time.monotonic()
        container.stop()
        stopped = time.monotonic()
    return {
        "start_to_ready_s": ready - started,
        "start_to_first_produce_s": produced - started,
        "remove_s": stopped - stopping,
    }


def summary(rounds: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {
        key: {
            "median": statistics.median(r[key] for r in rounds),
            "min": min(r[key] for r in rounds),
            "max": max(r[key] for r in rounds),
        }
        for key in rounds[0]
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench.fixtures_container", description=__doc__.split("\n")[0])
    parser.add_argument("--image", default="localhost/kcoord-test:latest")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bridge", action="store_true", help="publish ports instead of host networking")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = parser.parse_args(argv)
    testcontainers_config.ryuk_disabled = True  # the reaper is a registry image; every round removes its own
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-") as workdir, docker_host(Path(workdir)) as host:
        rounds = [one_round(args.image, args.bridge) for _ in range(args.rounds)]
    stats_by_figure = summary(rounds)
    result = {
        "commit": git_commit(),
        "image": args.image,
        "engine": host,
        "network": "bridge" if args.bridge else "host",
        "rounds": rounds,
        "summary": stats_by_figure,
    }
    for key, stats in stats_by_figure.items():
        print(f"{key:26} median {stats['median']:.3f} s  (min {stats['min']:.3f}, max {stats['max']:.3f})")
    print("reference: JVM broker ~1.2 s (KIP-974); Kafka containers 10-60 s (testcontainers-java PR #2078)")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
