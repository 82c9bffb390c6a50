"""The `kcoord-topic` data source: the records real producers wrote, every codec, pushdown, torn tails."""

from __future__ import annotations

import asyncio
import shutil
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from kcoord.pipeline import topic_reader
from kcoord.pipeline.reader import PipelineError


def _rows(df: Any) -> list[tuple[int, int, str, str]]:
    return sorted(
        (r["partition"], r["offset"], bytes(r["key"]).decode(), bytes(r["value"]).decode())
        for r in df.collect()
    )


def test_rows_are_what_the_producers_were_acknowledged_in_every_codec(
    spark: Any, produced: dict[str, Any]
) -> None:
    df = spark.read.format("kcoord-topic").load(str(produced["dir"]))
    assert _rows(df) == sorted(produced["acked"])
    assert {r["topic"] for r in df.select("topic").distinct().collect()} == {produced["topic"]}
    assert df.where("size(headers) > 0").count() == 0
    started = time.time() - 3600
    assert df.where(f"timestamp < to_timestamp_ltz({int(started)})").count() == 0
    codecs = {
        header.compression
        for part in topic_reader.plan(str(produced["dir"]))
        for header, _ in topic_reader.batches(part)
    }
    assert codecs == {0, 1, 2, 3, 4}, codecs  # none, gzip, snappy, lz4, zstd all on disk and read


def test_partition_and_offset_filters_are_pushed_down_and_exact(spark: Any, produced: dict[str, Any]) -> None:
    df = spark.read.format("kcoord-topic").load(str(produced["dir"]))
    query = df.where(f"topic = '{produced['topic']}' AND partition = 1 AND offset >= 10 AND offset < 25")
    assert query.rdd.getNumPartitions() == 1  # the one segment of partition 1
    expected = sorted(r for r in produced["acked"] if r[0] == 1 and 10 <= r[1] < 25)
    assert _rows(query) == expected and len(expected) == 15
    assert df.where("partition IN (0, 2) AND offset <= 4").count() == 10
    assert df.where("topic = 'no-such-topic'").count() == 0
    assert df.where("offset % 2 = 0").count() == sum(1 for r in produced["acked"] if r[1] % 2 == 0)


def _write_small_segments(root: Path, partitions: int, batches: int) -> None:
    """Partition logs written by partition_log's own writer with 2 kB segments (kafka-python batches)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kcoord.partition_log import PartitionConfig, PartitionLogs

    def batch(start: int, codec: int) -> bytes:
        builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
        for i in range(10):
            builder.append(i, int(time.time() * 1000), f"k{start + i}".encode(), f"v{start + i}".encode(), [])
        return bytes(builder.build())

    async def write() -> None:
        now = lambda: int(time.time() * 1000)  # noqa: E731
        logs = await PartitionLogs.open(root / "topics", fsync="always", now_ms=now)
        for p in range(partitions):
            plog = logs.ensure("small", p, PartitionConfig(segment_bytes=2000))
            for n in range(batches):
                validated = plog.validate(batch(n * 10, n % 5), now())
                await plog.append(validated)  # type: ignore[arg-type]
        await logs.close()

    asyncio.run(write())


def test_offset_ranges_skip_whole_segments(spark: Any, tmp_path: Path) -> None:
    _write_small_segments(tmp_path, 2, 30)
    df = spark.read.format("kcoord-topic").load(str(tmp_path))
    total = df.rdd.getNumPartitions()
    assert total == len(topic_reader.plan(str(tmp_path))) and total >= 6  # one input partition per segment
    assert df.count() == 600
    query = df.where("partition = 0 AND offset BETWEEN 250 AND 259")
    assert query.rdd.getNumPartitions() == 1
    assert [(r["offset"], bytes(r["value"])) for r in query.orderBy("offset").collect()] == [
        (o, f"v{o}".encode()) for o in range(250, 260)
    ]
    holding = [
        part for part in topic_reader.plan(str(tmp_path)) if part.end_offset > 290
    ]  # segments that can hold offsets >= 290, computed from the files' names
    assert df.where("offset >= 290").rdd.getNumPartitions() == len(holding) < total


def _next_batch(part: topic_reader.TopicPart) -> bytes:
    """The segment's last batch again with the next base offset: a valid continuation (the CRC
    does not cover the base offset)."""
    header, data = list(topic_reader.batches(part))[-1]
    return struct.pack(">q", header.last_offset + 1) + data[8:]


def test_a_torn_tail_is_dropped_like_recovery_and_a_corrupt_sealed_segment_is_refused(
    spark: Any, tmp_path: Path
) -> None:
    _write_small_segments(tmp_path, 1, 30)
    segments = sorted((tmp_path / "topics" / "small-0").glob("*.log"))
    last_part = topic_reader.plan(str(tmp_path))[-1]
    torn = _next_batch(last_part)
    with open(segments[-1], "ab") as f:
        f.write(torn[: len(torn) // 2])  # a half-written batch at the end of the active segment
    df = spark.read.format("kcoord-topic").load(str(tmp_path))
    assert sorted(r["offset"] for r in df.collect()) == list(range(300))
    sealed = bytearray(segments[1].read_bytes())
    sealed[len(sealed) // 2] ^= 0xFF
    segments[1].write_bytes(bytes(sealed))
    with pytest.raises(Exception, match="corrupt sealed segment"):
        df.count()
    with pytest.raises(PipelineError, match=f"{segments[1].name}: corrupt sealed segment"):
        for part in topic_reader.plan(str(tmp_path)):
            list(topic_reader.records(part))


def test_a_live_copy_is_read_up_to_the_planned_size(
    spark: Any, produced: dict[str, Any], tmp_path: Path
) -> None:
    """Bytes appended after planning (the server still writing) are not read: a consistent prefix."""
    data = tmp_path / "data"
    shutil.copytree(produced["dir"], data)
    parts = topic_reader.plan(str(data))
    for part in parts:
        appended = _next_batch(part)
        with open(part.path, "ab") as f:
            f.write(appended)  # the server appends a whole valid batch after planning
    assert len(list(topic_reader.batches(topic_reader.plan(str(data))[0]))) > len(
        list(topic_reader.batches(parts[0]))
    )  # a new plan would see it
    rows = sorted((p.partition, r.offset) for p in parts for r in topic_reader.records(p))
    assert rows == sorted((p, o) for p, o, _, _ in produced["acked"])


def test_the_coordinator_log_source_decodes_topic_registry_records(
    spark: Any, produced: dict[str, Any]
) -> None:
    rows = (
        spark.read.format("kcoord")
        .load(str(produced["dir"]))
        .where(f"record_type = 4 AND topic = '{produced['topic']}'")
        .collect()
    )
    assert rows and all(r["num_partitions"] == 3 and not r["tombstone"] for r in rows)
    assert len({r["topic_id"] for r in rows}) == 1 and len(rows[0]["topic_id"]) == 36
