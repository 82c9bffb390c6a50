"""Job `lag`: committed offset versus each partition's log end, per group/partition, latest and over time.

Lag = log end offset - committed offset, as Kafka's kafka-consumer-groups.sh --describe reports it
(ConsumerGroupCommand: LOG-END-OFFSET minus CURRENT-OFFSET, from ListOffsets(latest), i.e. the high
watermark; after recovery kcoord's high watermark is its log end). It is negative when a group
committed past the log end, and null when the topic no longer exists.

* latest: the committed offsets the coordinator restores (offsets.latest_offsets) joined with each
  partition's log start and end as recovery finds them (topic_reader.log_ends, read on the driver from
  the last segment's batch headers). Partitions: those of the topics the registry holds (newest
  type-4 topic record of each name, not deleted); a partition without a log yet has log end 0.
* over time: every offset commit of the coordinator log, with the log end *at the commit's time*:
  1 + the highest offset of a record whose timestamp is not later than the commit (records read
  through `kcoord-topic`, restricted to the committed topics). Record timestamps are the producer's
  CreateTime unless the topic uses LogAppendTime, so this is an estimate when clocks differ.
  Commits come from the whole history kept (the `kcoord` source reads the history area too).
* lag in seconds at a commit: how long the next record to consume (the one at the committed offset)
  had waited by then: commit time - that record's timestamp, 0 when caught up, null when the lag is
  negative or that record is gone. Burrow and kafka-lag-exporter report time lag the same way.

On a cluster (`--cluster`), log start and end come from each partition's lease row and the records
from its stored batches (kcoord/pipeline/cluster_reader.py); its history is the newest commit of each
partition only (PostgreSQL keeps no older ones), which the notes say.

The chart and the text summary: kcoord/pipeline/lag_report.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcoord.pipeline import lag_report
from kcoord.pipeline.inputs import Input, as_input
from kcoord.pipeline.reader import OFFSET_COMMIT_TYPE, TOPIC_TYPE

ENDS_DDL = "topic STRING, partition INT, log_start BIGINT, log_end BIGINT"
LATEST_COLUMNS = ["group", "topic", "partition", "committed_offset", "log_start", "log_end", "lag"]
HISTORY_COLUMNS = [
    "group", "topic", "partition", "ts_ms", "committed_offset", "log_end_then", "lag_then", "lag_seconds_then"
]  # fmt: skip


def registered_topics(spark: Any, source: str | Input) -> dict[str, int]:
    """topic -> partitions of every topic the coordinator's registry holds (newest record wins)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    coordinator = as_input(source).coordinator(spark, with_history=False)
    records = coordinator.where(F.col("record_type") == TOPIC_TYPE)
    newest = Window.partitionBy("topic").orderBy(F.col("lsn").desc())
    rows = (
        records.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select("topic", "num_partitions")
        .collect()
    )
    return {r["topic"]: r["num_partitions"] for r in rows}


def log_end_rows(source: str | Input, topics: dict[str, int]) -> list[tuple[str, int, int, int]]:
    ends = as_input(source).log_ends()
    return [
        (topic, p, *ends.get((topic, p), (0, 0)))
        for topic, count in sorted(topics.items())
        for p in range(count)
    ]


def latest(spark: Any, source: str | Input) -> Any:
    from pyspark.sql import functions as F

    from kcoord.pipeline.offsets import latest_offsets

    ends = spark.createDataFrame(log_end_rows(source, registered_topics(spark, source)), ENDS_DDL)
    committed = latest_offsets(spark, source).withColumnRenamed("offset", "committed_offset")
    return (
        committed.join(ends, ["topic", "partition"], "left")
        .withColumn("lag", F.col("log_end") - F.col("committed_offset"))
        .select(*LATEST_COLUMNS)
    )


def history(spark: Any, source: str | Input, topics: list[str]) -> Any:
    """Every commit with the log end at its time and the lag then."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    commits = (
        as_input(source)
        .coordinator(spark)
        .where(
            (F.col("record_type") == OFFSET_COMMIT_TYPE) & ~F.col("tombstone") & F.col("group").isNotNull()
        )
        .select(
            "group",
            "topic",
            "partition",
            F.col("timestamp_ms").alias("ts_ms"),
            F.lit(1).alias("kind"),
            F.lit(None).cast("long").alias("end"),
            F.col("offset").alias("committed_offset"),
        )
    )
    if not topics:
        return commits.select("group", "topic", "partition", "ts_ms", "committed_offset").withColumns(
            {
                "log_end_then": F.lit(None).cast("long"),
                "lag_then": F.lit(None).cast("long"),
                "lag_seconds_then": F.lit(None).cast("double"),
            }
        )
    topic_records = (
        as_input(source).topic_records(spark).where(F.col("topic").isin(topics))
    )  # the filter is pushed down: other topics' segments (or batches) are not read
    records = topic_records.select(
        F.lit(None).cast("string").alias("group"),
        "topic",
        "partition",
        F.unix_millis("timestamp").alias("ts_ms"),
        F.lit(0).alias("kind"),  # a record at the commit's millisecond counts as before it
        (F.col("offset") + 1).alias("end"),
        F.lit(None).cast("long").alias("committed_offset"),
    )
    upto = (
        Window.partitionBy("topic", "partition")
        .orderBy("ts_ms", "kind")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    next_record = topic_records.select(
        "topic",
        "partition",
        F.col("offset").alias("committed_offset"),
        F.unix_millis("timestamp").alias("next_ms"),
    )
    waited = F.greatest(F.lit(0.0), (F.col("ts_ms") - F.col("next_ms")) / 1000)
    return (
        records.unionByName(commits)
        .withColumn("log_end_then", F.coalesce(F.max("end").over(upto), F.lit(0).cast("long")))
        .where(F.col("kind") == 1)
        .withColumn("lag_then", F.col("log_end_then") - F.col("committed_offset"))
        .join(next_record, ["topic", "partition", "committed_offset"], "left")
        .withColumn(
            "lag_seconds_then",
            F.when(F.col("lag_then") == 0, F.lit(0.0)).when(F.col("lag_then") > 0, waited),
        )
        .select(*HISTORY_COLUMNS)
    )


def run(spark: Any, source: str | Input, out: str, since_ms: int | None = None) -> str:
    from pyspark.sql import functions as F

    note_lines = as_input(source).notes(since_ms)
    latest_df = latest(spark, source).orderBy("group", "topic", "partition").cache()
    latest_df.write.mode("overwrite").parquet(f"{out}/lag")
    latest_rows = latest_df.collect()
    topics = sorted({r["topic"] for r in latest_rows if r["log_end"] is not None})
    history_df = history(spark, source, topics)
    if since_ms is not None:
        history_df = history_df.where(F.col("ts_ms") >= since_ms)
    history_df = history_df.orderBy("group", "topic", "partition", "ts_ms").cache()
    history_df.write.mode("overwrite").parquet(f"{out}/lag_history")
    history_rows = history_df.select("group", "topic", "partition", "ts_ms", "lag_then", "lag_seconds_then")
    groups = lag_report.build(latest_rows, history_rows.collect())
    path = lag_report.write(groups, note_lines, Path(out))
    lines = [
        f"lag: {len(latest_rows)} partitions of {len({r['group'] for r in latest_rows})} groups"
        f" -> {out}/lag; "
        f"{history_df.count()} commits over time -> {out}/lag_history; chart {path}",
        *(f"  {line}" for line in note_lines),
        *lag_report.summary(groups),
    ]
    return "\n".join(lines)
