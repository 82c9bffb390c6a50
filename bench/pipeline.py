"""Pipeline benchmark: rows/s through the `kcoord` Spark data source next to the coordinator's replay.

    .venv/bin/python -m bench.pipeline [--records 2000000] [--master local[2]]

1. writes a log of N offset-commit records (1,000 groups x 20 partitions, rewritten) into 64 MiB
   segments with storage's framing and coordinator.persistence.to_storage, i.e. the server's bytes;
2. the coordinator's own single-process replay of it: storage.recovery.recover with
   coordinator.persistence.from_storage decoding every record (the server's start path);
3. rows/s through `spark.read.format("kcoord")` on --master (all columns materialised);
4. partition logs of the committed topic `events` (20 partitions, --topic-records records in batches
   of 500, --codec compressed) written by partition_log's own writer, plus the topic's registry
   record; rows/s through `spark.read.format("kcoord-topic")` (every record decompressed, value
   bytes summed) and, with a filter on one partition's last tenth, what pushdown leaves to read;
5. wall time of each job (offsets, rebalances, lag, compact) on the same directory.
Run by hand on an idle machine; figures are printed, nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.metadata import TopicRecord
from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.storage import FileOps, LogConfig, framing, recovery
from kcoord.storage.files import encode_segment_header, segment_name


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


TOPIC_PARTITIONS = 20
BATCH_RECORDS = 500
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def write_topic(directory: Path, records: int, codec: str) -> None:
    """`events`' registry record in its own coordinator-log segment, then its partition logs."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kcoord.partition_log import PartitionConfig, PartitionLogs

    lsn = max(int(p.stem) for p in directory.glob("*.log")) + 10_000_000  # past every commit
    rec = to_storage(TopicRecord("events", uuid.uuid4(), TOPIC_PARTITIONS))
    now = int(time.time() * 1000)
    frame = framing.encode(rec.type, 0, lsn, now, rec.key, rec.value)
    (directory / segment_name(lsn)).write_bytes(encode_segment_header(lsn) + frame)

    builder = DefaultRecordBatchBuilder(2, CODECS[codec], False, -1, -1, -1, 1 << 24)
    for i in range(BATCH_RECORDS):
        builder.append(i, now, f"key-{i % 97}".encode(), f"value {i:08d} ".encode() * 8, [])
    batch = bytes(builder.build())  # the log assigns offsets: one batch appended over and over

    async def write() -> None:
        logs = await PartitionLogs.open(directory / "topics", fsync="never", now_ms=lambda: now)
        per_partition = records // TOPIC_PARTITIONS // BATCH_RECORDS
        for p in range(TOPIC_PARTITIONS):
            plog = logs.ensure("events", p, PartitionConfig(segment_bytes=64 << 20))
            for _ in range(per_partition):
                validated: Any = plog.validate(batch, now)
                await plog.append(validated)
        await logs.close()

    asyncio.run(write())


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
    parser.add_argument("--topic-records", type=int, default=2_000_000)
    parser.add_argument("--codec", choices=sorted(CODECS), default="lz4")
    args = parser.parse_args()
    from kcoord.pipeline import compact, lag, offsets, rebalances, session

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        write_log(data, args.records)
        coordinator_replay(data)
        write_topic(data, args.topic_records, args.codec)
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
            topic = spark.read.format("kcoord-topic").load(str(data))
            for attempt in ("warm-up", "measured"):
                started = time.monotonic()
                rows = topic.selectExpr("count(*)", "sum(length(value))").collect()
                seconds = time.monotonic() - started
                label = f"kcoord-topic source ({attempt}, {args.codec}, {args.master})"
                print(f"{label}: {rows[0][0]} rows in {seconds:.2f} s = {rows[0][0] / seconds:,.0f} rows/s")
            last_tenth = args.topic_records // TOPIC_PARTITIONS * 9 // 10
            started = time.monotonic()
            count = topic.where(f"partition = 7 AND offset >= {last_tenth}").count()
            print(f"kcoord-topic pushdown (one partition's last tenth): {count} rows in "
                  f"{time.monotonic() - started:.2f} s")  # fmt: skip
            for name, job in (
                ("offsets", offsets.run),
                ("rebalances", rebalances.run),
                ("lag", lag.run),
                ("compact", compact.run),
            ):
                started = time.monotonic()
                job(spark, str(data), str(Path(tmp) / f"out-{name}"))
                print(f"job {name}: {time.monotonic() - started:.2f} s")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
