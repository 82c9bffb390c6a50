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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline import topic_reader
from pipeline.reader import OFFSET_COMMIT_TYPE, TOPIC_TYPE

ENDS_DDL = "topic STRING, partition INT, log_start BIGINT, log_end BIGINT"
LATEST_COLUMNS = ["group", "topic", "partition", "committed_offset", "log_start", "log_end", "lag"]
CHART_SERIES = 8


def registered_topics(spark: Any, data_dir: str) -> dict[str, int]:
    """topic -> partitions of every topic the coordinator's registry holds (newest record wins)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    records = (
        spark.read.format("kcoord")
        .option("history", "false")
        .load(data_dir)
        .where(F.col("record_type") == TOPIC_TYPE)
    )
    newest = Window.partitionBy("topic").orderBy(F.col("lsn").desc())
    rows = (
        records.withColumn("_rank", F.row_number().over(newest))
        .where((F.col("_rank") == 1) & ~F.col("tombstone"))
        .select("topic", "num_partitions")
        .collect()
    )
    return {r["topic"]: r["num_partitions"] for r in rows}


def log_end_rows(data_dir: str, topics: dict[str, int]) -> list[tuple[str, int, int, int]]:
    ends = topic_reader.log_ends(data_dir)
    return [
        (topic, p, *ends.get((topic, p), (0, 0)))
        for topic, count in sorted(topics.items())
        for p in range(count)
    ]


def latest(spark: Any, data_dir: str) -> Any:
    from pyspark.sql import functions as F

    from pipeline.offsets import latest_offsets

    ends = spark.createDataFrame(log_end_rows(data_dir, registered_topics(spark, data_dir)), ENDS_DDL)
    committed = latest_offsets(spark, data_dir).withColumnRenamed("offset", "committed_offset")
    return (
        committed.join(ends, ["topic", "partition"], "left")
        .withColumn("lag", F.col("log_end") - F.col("committed_offset"))
        .select(*LATEST_COLUMNS)
    )


def history(spark: Any, data_dir: str, topics: list[str]) -> Any:
    """Every commit with the log end at its time and the lag then."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    commits = (
        spark.read.format("kcoord")
        .load(data_dir)
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
            {"log_end_then": F.lit(None).cast("long"), "lag_then": F.lit(None).cast("long")}
        )
    records = (
        spark.read.format("kcoord-topic")
        .load(data_dir)
        .where(F.col("topic").isin(topics))  # pushed down: other topics' segments are not read
        .select(
            F.lit(None).cast("string").alias("group"),
            "topic",
            "partition",
            F.unix_millis("timestamp").alias("ts_ms"),
            F.lit(0).alias("kind"),  # a record at the commit's millisecond counts as before it
            (F.col("offset") + 1).alias("end"),
            F.lit(None).cast("long").alias("committed_offset"),
        )
    )
    upto = (
        Window.partitionBy("topic", "partition")
        .orderBy("ts_ms", "kind")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        records.unionByName(commits)
        .withColumn("log_end_then", F.coalesce(F.max("end").over(upto), F.lit(0).cast("long")))
        .where(F.col("kind") == 1)
        .withColumn("lag_then", F.col("log_end_then") - F.col("committed_offset"))
        .select("group", "topic", "partition", "ts_ms", "committed_offset", "log_end_then", "lag_then")
    )


def chart(rows: list[Any], latest_rows: list[Any], out: Path) -> Path:
    """Lag at each commit over time for the group/partitions with the largest latest lag."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worst = sorted(
        (r for r in latest_rows if r["lag"] is not None), key=lambda r: (-r["lag"], r["group"], r["topic"])
    )
    keep = [(r["group"], r["topic"], r["partition"]) for r in worst[:CHART_SERIES]]
    series: dict[tuple[str, str, int], list[tuple[int, int]]] = {k: [] for k in keep}
    for r in rows:
        key = (r["group"], r["topic"], r["partition"])
        if key in series and r["lag_then"] is not None:
            series[key].append((r["ts_ms"], r["lag_then"]))
    fig, ax = plt.subplots(figsize=(8, 4))
    for (group, topic, partition), points in series.items():
        points.sort()
        ax.step([t / 1000 for t, _ in points], [lag for _, lag in points], where="post",
                label=f"{group} {topic}-{partition}")  # fmt: skip
    ax.set_xlabel("time (unix seconds)")
    ax.set_ylabel("lag at commit (records)")
    if series:
        ax.legend(fontsize="small")
    path = out / "lag.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run(spark: Any, data_dir: str, out: str) -> str:
    latest_df = latest(spark, data_dir).orderBy("group", "topic", "partition").cache()
    latest_df.write.mode("overwrite").parquet(f"{out}/lag")
    latest_rows = latest_df.collect()
    topics = sorted({r["topic"] for r in latest_rows if r["log_end"] is not None})
    history_df = history(spark, data_dir, topics).orderBy("group", "topic", "partition", "ts_ms").cache()
    history_df.write.mode("overwrite").parquet(f"{out}/lag_history")
    history_rows = history_df.select("group", "topic", "partition", "ts_ms", "lag_then").collect()
    path = chart([r.asDict() for r in history_rows], [r.asDict() for r in latest_rows], Path(out))
    totals: dict[str, int] = {}
    for r in latest_rows:
        if r["lag"] is not None:
            totals[r["group"]] = totals.get(r["group"], 0) + r["lag"]
    lines = [
        f"lag: {len(latest_rows)} partitions of {len({r['group'] for r in latest_rows})} groups"
        f" -> {out}/lag; "
        f"{len(history_rows)} commits over time -> {out}/lag_history; chart {path}"
    ]
    for group, total in sorted(totals.items(), key=lambda kv: -kv[1])[:5]:
        lines.append(f"  {group}: total lag {total}")
    unknown = sum(1 for r in latest_rows if r["log_end"] is None)
    if unknown:
        lines.append(f"  {unknown} committed partitions belong to topics that no longer exist (lag null)")
    return "\n".join(lines)
