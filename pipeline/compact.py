"""Job `compact`: the live records of a data directory as a new, valid segment set in `--out`.

Live = the newest record of each (type, key) that is not a tombstone: what storage.recovery's
keydir holds after replay, so `kcoord serve --data-dir OUT` restores the same offsets and groups.
Records keep their LSN, timestamp, key and value bytes; they are written with storage's own
framing into one segment (tmp -> fsync -> rename, like storage's snapshots).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcoord.storage import framing
from kcoord.storage.files import SEGMENT_COMPACTED, FileOps, encode_segment_header, segment_name


def live_records(spark: Any, data_dir: str) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    records = spark.read.format("kcoord").option("history", "false").load(data_dir)
    newest = Window.partitionBy("record_type", "key").orderBy(F.col("lsn").desc())
    return (
        records.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select("lsn", "timestamp_ms", "record_type", "key", "value")
        .orderBy("lsn")
    )


def write_segment(out: Path, rows: Any) -> tuple[Path, int]:
    """One segment of `rows` (ascending LSN); refuses to overwrite an existing log."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("*.log")) or any(out.glob("*.snap")):
        from kcoord.pipeline.reader import PipelineError

        raise PipelineError(f"{out}: already holds a kcoord log; compact writes into an empty directory")
    path = out / segment_name(0)
    parts = [encode_segment_header(0, flags=SEGMENT_COMPACTED)]  # only live records: no history
    for row in rows:
        parts.append(
            framing.encode(row.record_type, 0, row.lsn, row.timestamp_ms, bytes(row.key), bytes(row.value))
        )
    FileOps().write_file_atomically(path, b"".join(parts))
    return path, len(parts) - 1


def run(spark: Any, data_dir: str, out: str) -> str:
    before = spark.read.format("kcoord").option("history", "false").load(data_dir).count()
    path, count = write_segment(Path(out), live_records(spark, data_dir).toLocalIterator())
    return f"compact: {before} records -> {count} live records in {path}"
