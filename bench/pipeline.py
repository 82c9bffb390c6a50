"""Pipeline benchmark: rows/s through the `kcoord` Spark data source next to the coordinator's replay.

    .venv/bin/python -m bench.pipeline [--records 2000000] [--master local[2]]

1. writes a log of N offset-commit records (1,000 groups x 20 partitions, rewritten) into 64 MiB
   segments with storage's framing and coordinator.persistence.to_storage, i.e. the server's bytes;
2. the coordinator's own single-process replay of it: storage.recovery.recover with
   coordinator.persistence.from_storage decoding every record (the server's start path);
3. rows/s through `spark.read.format("kcoord")` on --master (all columns materialised);
4. wall time of each job (offsets, rebalances, compact) on the same directory.
Run by hand on an idle machine; figures are printed, nothing is asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from coordinator.groups.records import OffsetCommitRecord
from coordinator.persistence import from_storage, to_storage
from storage import FileOps, LogConfig, framing, recovery
from storage.files import encode_segment_header, segment_name


def write_log(directory: Path, records: int, segment_bytes: int = 64 << 20) -> None:
    now = int(time.time() * 1000)
    base, parts, size = 0, [encode_segment_header(0)], 0
    for lsn in range(records):
        group, partition = divmod(lsn % 20_000, 20)
        rec = to_storage(OffsetCommitRecord(f"g{group}", "events", partition, lsn, -1, "", now, -1))
        frame = framing.encode(rec.type, 0, lsn, now, rec.key, rec.value)
        parts.append(frame)
        size += len(frame)
        if size >= segment_bytes:
            (directory / segment_name(base)).write_bytes(b"".join(parts))
            base, parts, size = lsn + 1, [encode_segment_header(lsn + 1)], 0
    (directory / segment_name(base)).write_bytes(b"".join(parts))


def coordinator_replay(directory: Path) -> float:
    started = time.monotonic()
    state = recovery.recover(directory, LogConfig(), from_storage, FileOps())  # type: ignore[arg-type]
    seconds = time.monotonic() - started
    print(
        f"coordinator replay: {state.records} records in {seconds:.2f} s = {state.records / seconds:,.0f}/s"
    )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from pipeline import compact, offsets, rebalances, session

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        write_log(data, args.records)
        coordinator_replay(data)
        spark = session.start(args.master, "kcoord-bench")
        try:
            for attempt in ("warm-up", "measured"):
                started = time.monotonic()
                rows = (
                    spark.read.format("kcoord")
                    .load(str(data))
                    .selectExpr("sum(offset)", "count(*)")
                    .collect()
                )
                seconds = time.monotonic() - started
                count = rows[0][1]
                rate = count / seconds
                label = f"kcoord source ({attempt}, {args.master})"
                print(f"{label}: {count} rows in {seconds:.2f} s = {rate:,.0f} rows/s")
            for name, job in (
                ("offsets", offsets.run),
                ("rebalances", rebalances.run),
                ("compact", compact.run),
            ):
                started = time.monotonic()
                job(spark, str(data), str(Path(tmp) / f"out-{name}"))
                print(f"job {name}: {time.monotonic() - started:.2f} s")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
