"""The container figures for docs/benchmarks.md, run by hand (not part of `make test`):

    .venv/bin/python -m tests.container.measure [--records 1000000]

Builds the image from the locally built base (as the tests do), then measures, each from before
`podman run` to the first passing `kcoord health`: a cold start on an empty volume; a start on a data
directory holding N offset-commit records and no snapshot (what a restart after a crash replays);
the clean `podman stop` of that container (SIGTERM -> snapshot -> exit 0); and the start again from
that snapshot. Prints the image size and what it adds above its base.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from kcoord import storage
from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.persistence import to_storage
from kcoord.wiring.config import Config
from kcoord.wiring.local_backends import storage_config
from tests.container.engine import BASE_IMAGE, ensure_base_image, ensure_tools, inspect, podman
from tests.container.helpers import Containers, free_port, wait_exited, wait_healthy
from tests.kcoord_process import REPO

IMAGE = "localhost/kcoord-test:latest"
UID = 10001  # the image's USER


async def write_offsets(directory: Path, records: int) -> None:
    """`records` offset commits over records/10 partitions of 100 groups, written through storage.Log as
    the server writes them, closed without a snapshot."""
    config = storage_config(Config(data_dir=directory, fsync="never"))
    log = await storage.Log.open(directory, config, lambda record: None)
    now = int(time.time() * 1000)
    batch = 2000
    for start in range(0, records, batch):
        appends = []
        for i in range(start, min(start + batch, records)):
            key = i % max(records // 10, 1)
            record = OffsetCommitRecord(f"group-{key % 100}", "events", key // 100, i, -1, "", now)
            appends.append(log.append([to_storage(record)]))
        await asyncio.gather(*appends)
    await log.close(write_snapshot=False)


def timed_start(made: Containers, data: str) -> tuple[str, float]:
    started = time.monotonic()
    name = made.run(free_port(), data)
    wait_healthy(name, timeout=600)
    return name, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    reason = ensure_tools()
    if reason:
        raise SystemExit(reason)
    ensure_base_image()
    podman("build", "--format", "docker", "--network", "host", "--build-arg", f"BASE={BASE_IMAGE}",
           "--tag", IMAGE, str(REPO), timeout=900)  # fmt: skip
    size = int(inspect("image", IMAGE)["Size"])  # type: ignore[call-overload]
    base = int(inspect("image", BASE_IMAGE)["Size"])  # type: ignore[call-overload]
    print(f"image {size / 1e6:.1f} MB, base {base / 1e6:.1f} MB, kcoord adds {(size - base) / 1e6:.1f} MB")
    made = Containers(IMAGE)
    scratch = Path(tempfile.mkdtemp(prefix="kcoord-measure-"))
    try:
        for _ in range(3):
            name, seconds = timed_start(made, made.volume())
            print(f"cold start to healthy, empty volume: {seconds:.2f} s")
            podman("stop", name)
        data = scratch / "data"
        started = time.monotonic()
        asyncio.run(write_offsets(data, args.records))
        print(f"wrote {args.records} offset records in {time.monotonic() - started:.1f} s "
              f"({sum(f.stat().st_size for f in data.rglob('*') if f.is_file()) / 1e6:.0f} MB)")  # fmt: skip
        for path in (data, *data.rglob("*")):
            os.chown(path, UID, UID)
        name, seconds = timed_start(made, str(data))
        print(f"start to healthy, {args.records} offset records, no snapshot (replay): {seconds:.2f} s")
        started = time.monotonic()
        podman("stop", name, timeout=60)
        state = wait_exited(name)
        seconds = time.monotonic() - started
        print(f"podman stop to exit (snapshot written): {seconds:.2f} s, exit {state['ExitCode']}")
        name, seconds = timed_start(made, str(data))
        print(f"start to healthy, {args.records} offset records, from the snapshot: {seconds:.2f} s")
        started = time.monotonic()
        podman("stop", name, timeout=60)
        state = wait_exited(name)
        print(f"podman stop to exit: {time.monotonic() - started:.2f} s, exit {state['ExitCode']}")
    finally:
        made.remove()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
