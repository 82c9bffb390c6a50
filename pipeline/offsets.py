"""Job `offsets`: the latest committed offset per group/topic/partition.

What the coordinator restores: the newest record (highest LSN) of each offset key wins and a
tombstone removes the key (storage.recovery's keydir rule; Kafka's GroupMetadataManager.loadGroupsAndOffsets
does the same with the newest record per key of __consumer_offsets).
"""

from __future__ import annotations

from typing import Any

OFFSET_COLUMNS = ["group", "topic", "partition", "offset", "leader_epoch", "metadata", "commit_timestamp"]


def latest_offsets(spark: Any, data_dir: str) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from pipeline.reader import OFFSET_COMMIT_TYPE

    records = spark.read.format("kcoord").option("history", "false").load(data_dir)
    commits = records.where((F.col("record_type") == OFFSET_COMMIT_TYPE) & F.col("group").isNotNull())
    newest = Window.partitionBy("group", "topic", "partition").orderBy(F.col("lsn").desc())
    return (
        commits.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select(*OFFSET_COLUMNS)
    )


def run(spark: Any, data_dir: str, out: str) -> str:
    offsets = latest_offsets(spark, data_dir).orderBy("group", "topic", "partition").cache()
    offsets.write.mode("overwrite").parquet(f"{out}/offsets")
    rows = offsets.count()
    groups = offsets.select("group").distinct().count()
    return f"offsets: {rows} partitions committed by {groups} groups -> {out}/offsets"
