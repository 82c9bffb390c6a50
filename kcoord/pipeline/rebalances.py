"""Job `rebalances`: per group the generation timeline and a summary, with PNG charts.

A generation may be stored more than once (after the join and again after SyncGroup carries the
assignment, like Kafka's GroupMetadataManager.storeGroup); its *first* record dates it and its
*last* record gives its members and assignment. Joins, leaves and moved partitions compare a
generation with the previous one; the records read include the history area, so every generation
within the history's retention is there, not only the newest one compaction keeps.

The reason of a rebalance is inferred from that comparison: Kafka's GroupMetadataValue stores no
reason (JoinGroup v8's `reason` only reaches the broker's log, GroupCoordinator.handleJoinGroup), so
"joined", "left or expired" and "same members rejoined" (a subscription change, a forced rebalance,
a leader's metadata change) are what the log can tell.

A cluster (`--cluster`) keeps each group's newest generation only, dated by its state timestamp: one
row per group, and the notes say there is no history.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kcoord.pipeline import history as history_notes
from kcoord.pipeline import rebalance_charts
from kcoord.pipeline.inputs import Input, as_input

TIMELINE_DDL = (
    "`group` STRING, generation INT, timestamp_ms BIGINT, members INT, joins INT, leaves INT, "
    "moved_partitions INT, reason STRING"
)
SUMMARY_DDL = (
    "`group` STRING, generations INT, rebalances_per_hour DOUBLE, median_gap_s DOUBLE, "
    "p95_gap_s DOUBLE, max_members INT"
)
CHART_GROUPS = 6


def reason(generation: int, first: bool, joins: int, leaves: int, members: int) -> str:
    """Why a generation began, as far as the membership change tells (see the module docstring)."""
    if first:
        return "group formed" if generation <= 1 else "first generation in the history read"
    if joins and leaves:
        return f"{joins} joined, {leaves} left or expired"
    if joins:
        return f"{joins} joined"
    if leaves:
        return f"{leaves} left or expired" + ("" if members else " (group empty)")
    return "same members rejoined"


def owners(members: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    return {
        (a["topic"], p): m["member_id"] for m in members for a in m["assigned"] or () for p in a["partitions"]
    }


def timeline(group: str, records: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(group, generation, timestamp_ms, members, joins, leaves, moved_partitions, reason) per generation."""
    generations: dict[int, tuple[int, list[dict[str, Any]]]] = {}
    for r in sorted(records, key=lambda r: r["lsn"]):
        first_ts = generations[r["generation"]][0] if r["generation"] in generations else r["timestamp_ms"]
        generations[r["generation"]] = (first_ts, r["members"] or [])
    out: list[tuple[Any, ...]] = []
    prev_ids: set[str] = set()
    prev_owners: dict[tuple[str, int], str] = {}
    for generation in sorted(generations):
        ts, members = generations[generation]
        ids = {m["member_id"] for m in members}
        now = owners(members)
        moved = sum(1 for tp in now.keys() | prev_owners.keys() if now.get(tp) != prev_owners.get(tp))
        joins, leaves = len(ids - prev_ids), len(prev_ids - ids)
        why = reason(generation, not out, joins, leaves, len(ids))
        out.append((group, generation, ts, len(ids), joins, leaves, moved, why))
        prev_ids, prev_owners = ids, now
    return out


def summary(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Rebalances per hour, median and p95 seconds between generations, max members, of one group."""
    times = [r[2] for r in rows]
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(times)]
    hours = (times[-1] - times[0]) / 3_600_000 if len(times) > 1 else 0.0
    return {
        "group": rows[0][0],
        "generations": len(rows),
        "rebalances_per_hour": len(rows) / hours if hours else float(len(rows)),
        "median_gap_s": statistics.median(gaps) if gaps else None,
        "p95_gap_s": statistics.quantiles(gaps, n=20, method="inclusive")[-1]
        if len(gaps) > 1
        else (gaps[0] if gaps else None),
        "max_members": max(r[3] for r in rows),
    }


def compute(spark: Any, source: str | Input) -> Any:
    from pyspark.sql import functions as F

    from kcoord.pipeline.reader import GROUP_METADATA_TYPE

    records = as_input(source).coordinator(spark)
    metadata = records.where(
        (F.col("record_type") == GROUP_METADATA_TYPE)
        & ~F.col("tombstone")
        & F.col("group").isNotNull()
        & F.col("timestamp_ms").isNotNull()  # a cluster's record without a state time cannot be dated
    ).select("group", "generation", "lsn", "timestamp_ms", "members")
    per_group = metadata.rdd.map(lambda r: (r["group"], r.asDict(recursive=True))).groupByKey()
    return spark.createDataFrame(per_group.flatMap(lambda kv: timeline(kv[0], kv[1])), TIMELINE_DDL)


def run(spark: Any, source: str | Input, out: str, since_ms: int | None = None) -> str:
    from pyspark.sql import functions as F

    note_lines = as_input(source).notes(since_ms)
    timeline_df = compute(spark, source)
    if since_ms is not None:
        timeline_df = timeline_df.where(F.col("timestamp_ms") >= since_ms)
    timeline_df = timeline_df.orderBy("group", "generation").cache()
    timeline_df.write.mode("overwrite").parquet(f"{out}/rebalances")
    rows = [tuple(r) for r in timeline_df.collect()]
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        groups.setdefault(r[0], []).append(r)
    summaries = [summary(g) for g in groups.values()]
    summary_df = spark.createDataFrame([tuple(s.values()) for s in summaries], SUMMARY_DDL)
    summary_df.write.mode("overwrite").parquet(f"{out}/rebalance_summary")
    shown = rebalance_charts.write(groups, note_lines, Path(out))
    lines = [
        f"rebalances: {len(rows)} generations in {len(groups)} groups -> {out}/rebalances, charts in {out}",
        *(f"  {line}" for line in note_lines),
    ]
    if len(groups) > len(shown):
        lines.append(f"  charts: the {len(shown)} of {len(groups)} groups with the most generations")
    by_group = {s["group"]: s for s in summaries}
    for group in shown:
        s = by_group[group]
        gap = "-" if s["median_gap_s"] is None else f"{s['median_gap_s']:.1f}"
        lines.append(
            f"  {group}: {s['generations']} generations, max {s['max_members']} members, median gap {gap} s"
        )
        earlier = len(groups[group]) - rebalance_charts.ANNOTATED
        if earlier > 0:
            lines.append(f"    ({earlier} earlier generations in {out}/rebalances)")
        for r in groups[group][-rebalance_charts.ANNOTATED :]:
            members = f"{r[3]} member" + ("" if r[3] == 1 else "s")
            lines.append(f"    generation {r[1]} at {history_notes.when(r[2])}: {members}, {r[7]}")
    return "\n".join(lines)
