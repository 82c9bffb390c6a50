"""Job `rebalances`: per group the generation timeline and a summary, with PNG charts.

A generation may be stored more than once (after the join and again after SyncGroup carries the
assignment, like Kafka's GroupMetadataManager.storeGroup); its *first* record dates it and its
*last* record gives its members and assignment. Joins, leaves and moved partitions compare a
generation with the previous one.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TIMELINE_DDL = (
    "`group` STRING, generation INT, timestamp_ms BIGINT, members INT, joins INT, leaves INT, "
    "moved_partitions INT"
)
SUMMARY_DDL = (
    "`group` STRING, generations INT, rebalances_per_hour DOUBLE, median_gap_s DOUBLE, "
    "p95_gap_s DOUBLE, max_members INT"
)
CHART_GROUPS = 5


def owners(members: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    return {
        (a["topic"], p): m["member_id"] for m in members for a in m["assigned"] or () for p in a["partitions"]
    }


def timeline(group: str, records: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(group, generation, timestamp_ms, members, joins, leaves, moved_partitions) per generation."""
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
        out.append((group, generation, ts, len(ids), len(ids - prev_ids), len(prev_ids - ids), moved))
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


def compute(spark: Any, data_dir: str) -> Any:
    from pyspark.sql import functions as F

    from pipeline.reader import GROUP_METADATA_TYPE

    records = spark.read.format("kcoord").load(data_dir)
    metadata = records.where(
        (F.col("record_type") == GROUP_METADATA_TYPE) & ~F.col("tombstone") & F.col("group").isNotNull()
    ).select("group", "generation", "lsn", "timestamp_ms", "members")
    per_group = metadata.rdd.map(lambda r: (r["group"], r.asDict(recursive=True))).groupByKey()
    return spark.createDataFrame(per_group.flatMap(lambda kv: timeline(kv[0], kv[1])), TIMELINE_DDL)


def charts(rows: list[tuple[Any, ...]], out: Path) -> list[Path]:
    """Generations over time and membership for the busiest groups (most generations)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_group: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        by_group.setdefault(r[0], []).append(r)
    busiest = sorted(by_group, key=lambda g: -len(by_group[g]))[:CHART_GROUPS]
    paths = []
    for name, column, label in (("rebalances.png", 1, "generation"), ("membership.png", 3, "members")):
        fig, ax = plt.subplots(figsize=(8, 4))
        for group in busiest:
            series = sorted(by_group[group], key=lambda r: r[1])
            ax.step([r[2] / 1000 for r in series], [r[column] for r in series], where="post", label=group)
        ax.set_xlabel("time (unix seconds)")
        ax.set_ylabel(label)
        if busiest:
            ax.legend(fontsize="small")
        fig.savefig(out / name, dpi=80)
        plt.close(fig)
        paths.append(out / name)
    return paths


def run(spark: Any, data_dir: str, out: str) -> str:
    timeline_df = compute(spark, data_dir).orderBy("group", "generation").cache()
    timeline_df.write.mode("overwrite").parquet(f"{out}/rebalances")
    rows = [tuple(r) for r in timeline_df.collect()]
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        groups.setdefault(r[0], []).append(r)
    summaries = [summary(g) for g in groups.values()]
    summary_df = spark.createDataFrame([tuple(s.values()) for s in summaries], SUMMARY_DDL)
    summary_df.write.mode("overwrite").parquet(f"{out}/rebalance_summary")
    charts(rows, Path(out))
    lines = [
        f"rebalances: {len(rows)} generations in {len(groups)} groups -> {out}/rebalances, charts in {out}"
    ]
    for s in sorted(summaries, key=lambda s: -s["generations"])[:CHART_GROUPS]:
        lines.append(
            f"  {s['group']}: {s['generations']} generations, max {s['max_members']} members, "
            f"median gap {s['median_gap_s']} s"
        )
    return "\n".join(lines)
