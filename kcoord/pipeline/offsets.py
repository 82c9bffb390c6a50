"""Job `offsets`: the latest committed offset per group/topic/partition.

What the coordinator restores: the newest record (highest LSN) of each offset key wins and a
tombstone removes the key (storage.recovery's keydir rule; Kafka's GroupMetadataManager.loadGroupsAndOffsets
does the same with the newest record per key of __consumer_offsets), read from the live view (the
newest snapshot and after), so the history area can never change it.

`offsets_history`: every offset commit on disk, the history area's included (issue 28), oldest first.
A cluster (`--cluster`) keeps the newest commit of each partition only: `offsets` is complete, the
history holds those commits, and the notes say so.
"""

from __future__ import annotations

from typing import Any

from kcoord.pipeline.inputs import Input, as_input

OFFSET_COLUMNS = ["group", "topic", "partition", "offset", "leader_epoch", "metadata", "commit_timestamp"]
HISTORY_COLUMNS = ["lsn", "timestamp_ms", *OFFSET_COLUMNS, "tombstone"]


def latest_offsets(spark: Any, source: str | Input) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kcoord.pipeline.reader import OFFSET_COMMIT_TYPE

    records = as_input(source).coordinator(spark, with_history=False)
    commits = records.where((F.col("record_type") == OFFSET_COMMIT_TYPE) & F.col("group").isNotNull())
    newest = Window.partitionBy("group", "topic", "partition").orderBy(F.col("lsn").desc())
    return (
        commits.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select(*OFFSET_COLUMNS)
    )


def commit_history(spark: Any, source: str | Input, since_ms: int | None = None) -> Any:
    """Every offset commit (and offset tombstone) on disk, the history area's included (a cluster:
    the newest commit of each partition)."""
    from pyspark.sql import functions as F

    from kcoord.pipeline.reader import OFFSET_COMMIT_TYPE

    records = as_input(source).coordinator(spark)
    commits = records.where((F.col("record_type") == OFFSET_COMMIT_TYPE) & F.col("group").isNotNull())
    if since_ms is not None:
        commits = commits.where(F.col("timestamp_ms") >= since_ms)
    return commits.select(*HISTORY_COLUMNS)


def run(spark: Any, source: str | Input, out: str, since_ms: int | None = None) -> str:
    offsets = latest_offsets(spark, source).orderBy("group", "topic", "partition").cache()
    offsets.write.mode("overwrite").parquet(f"{out}/offsets")
    rows = offsets.count()
    groups = offsets.select("group").distinct().count()
    commits = commit_history(spark, source, since_ms).orderBy("lsn").cache()
    commits.write.mode("overwrite").parquet(f"{out}/offsets_history")
    notes = as_input(source).notes(since_ms)
    return "\n".join(
        [
            f"offsets: {rows} partitions committed by {groups} groups -> {out}/offsets; "
            f"{commits.count()} commits over time -> {out}/offsets_history",
            *(f"  {line}" for line in notes),
        ]
    )
