"""Job `compact`: the live records of a data directory as a new, valid segment set in `--out`.

Live = the newest record of each (type, key) that is not a tombstone: what storage.recovery's
keydir holds after replay, so `kcoord serve --data-dir OUT` restores the same offsets and groups.
Records keep their LSN, timestamp, key and value bytes; they are written with storage's own
framing into one segment (tmp -> fsync -> rename, like storage's snapshots).

From a cluster (`--cluster`) the same job exports the cluster's state as a single-node data
directory. Its lsns are per shard (and the metadata table's seq), not one sequence, so the records
are renumbered 0, 1, ... in lsn order, which keeps each shard's order; a record without a time of its
own (kcoord/pipeline/cluster_reader.py) is stamped with the export's time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kcoord.pipeline.inputs import Input, as_input
from kcoord.storage import framing
from kcoord.storage.files import SEGMENT_COMPACTED, FileOps, encode_segment_header, segment_name


def live_records(spark: Any, source: str | Input) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    records = as_input(source).coordinator(spark, with_history=False)
    newest = Window.partitionBy("record_type", "key").orderBy(F.col("lsn").desc())
    return (
        records.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select("lsn", "timestamp_ms", "record_type", "key", "value")
        .orderBy("lsn")
    )


def write_segment(out: Path, rows: Any, renumber: bool = False) -> tuple[Path, int]:
    """One segment of `rows` (ascending LSN); refuses to overwrite an existing log. `renumber`: the
    rows' lsns are not one sequence (a cluster's): number them 0, 1, ... in the order given."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("*.log")) or any(out.glob("*.snap")):
        from kcoord.pipeline.reader import PipelineError

        raise PipelineError(f"{out}: already holds a kcoord log; compact writes into an empty directory")
    path = out / segment_name(0)
    parts = [encode_segment_header(0, flags=SEGMENT_COMPACTED)]  # only live records: no history
    now_ms = int(time.time() * 1000)
    for index, row in enumerate(rows):
        lsn = index if renumber else row.lsn
        timestamp_ms = now_ms if row.timestamp_ms is None else row.timestamp_ms
        parts.append(framing.encode(row.record_type, 0, lsn, timestamp_ms, bytes(row.key), bytes(row.value)))
    FileOps().write_file_atomically(path, b"".join(parts))
    return path, len(parts) - 1


def run(spark: Any, source: str | Input, out: str) -> str:
    data = as_input(source)
    before = data.coordinator(spark, with_history=False).count()
    rows = live_records(spark, data).toLocalIterator()
    path, count = write_segment(Path(out), rows, renumber=data.cluster is not None)
    return f"compact: {before} records -> {count} live records in {path}"
