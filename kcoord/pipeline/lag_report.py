"""The `lag` job's chart and text summary, built from one selection so the two always agree.

Per group (the CHART_GROUPS with the most total lag, said in the title when there are more): a row
of two panels, lag in records and lag in seconds at each commit, one series per partition (the
CHART_PARTITIONS with the most lag, said in the panel title when there are more).

A group's total lag adds up only positive lags. A negative lag (a commit past the log end: after
DeleteRecords, an offset reset to a later offset, a topic deleted and created again) is not
"ahead of the producers": adding it would hide real lag elsewhere. It is drawn below zero, explained
on the chart, and listed apart in the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.pipeline import charts

CHART_GROUPS = 6
CHART_PARTITIONS = 8
NEGATIVE_NOTE = (
    "lag below 0: the group committed past the log end (DeleteRecords, an offset reset, a recreated "
    "topic); shown as is, not counted in a group's total"
)

TopicPartition = tuple[str, int]
Point = tuple[int, int | None, float | None]  # ts_ms, lag in records, lag in seconds


@dataclass
class GroupLag:
    group: str
    total: int = 0  # the sum of the positive latest lags
    partitions: int = 0
    latest: dict[TopicPartition, int | None] = field(default_factory=dict)
    points: dict[TopicPartition, list[Point]] = field(default_factory=dict)

    @property
    def negative(self) -> list[tuple[TopicPartition, int]]:
        return sorted((tp, lag) for tp, lag in self.latest.items() if lag is not None and lag < 0)

    @property
    def unknown(self) -> int:
        return sum(1 for lag in self.latest.values() if lag is None)

    def charted(self) -> list[TopicPartition]:
        """The partitions drawn: most latest lag first (absolute, so a negative one shows too)."""
        tps = sorted(self.points, key=lambda tp: (-abs(self.latest.get(tp) or 0), tp))
        return tps[:CHART_PARTITIONS]


def build(latest_rows: Sequence[Any], history_rows: Sequence[Any]) -> list[GroupLag]:
    """Every group, most total lag first."""
    groups: dict[str, GroupLag] = {}
    for r in latest_rows:
        g = groups.setdefault(r["group"], GroupLag(r["group"]))
        g.partitions += 1
        g.latest[(r["topic"], r["partition"])] = r["lag"]
        if r["lag"] is not None and r["lag"] > 0:
            g.total += r["lag"]
    for r in history_rows:
        g = groups.setdefault(r["group"], GroupLag(r["group"]))
        g.points.setdefault((r["topic"], r["partition"]), []).append(
            (r["ts_ms"], r["lag_then"], r["lag_seconds_then"])
        )
    for g in groups.values():
        for points in g.points.values():
            points.sort(key=lambda p: p[0])
    return sorted(groups.values(), key=lambda g: (-g.total, g.group))


def title(groups: Sequence[GroupLag]) -> str:
    shown = min(len(groups), CHART_GROUPS)
    more = f": top {shown} of {len(groups)} groups by total lag" if len(groups) > shown else ""
    return f"Consumer lag at each commit{more}"


def figure(groups: Sequence[GroupLag], note_lines: Sequence[str]) -> Any:
    shown = list(groups[:CHART_GROUPS])
    fig, rows = charts.grid(len(shown), 2, title(groups))
    negative = False
    for g, (records_ax, seconds_ax) in zip(shown, rows, strict=False):
        tps = g.charted()
        more = f" ({len(tps)} of {len(g.points)} partitions, most lag)" if len(g.points) > len(tps) else ""
        for ax, unit, index in ((records_ax, "records", 1), (seconds_ax, "seconds", 2)):
            ax.set_title(f"{g.group}: lag in {unit}{more}", fontsize="medium")
            ax.set_ylabel(f"lag ({unit})")
            charts.date_axis(ax)
            drawn = 0
            for tp in tps:
                points = [(p[0], float(v)) for p in g.points[tp] if (v := p[index]) is not None]
                if points:
                    charts.series(ax, [t for t, _ in points], [v for _, v in points], f"{tp[0]}-{tp[1]}")
                    drawn += 1
                    negative = negative or any(v < 0 for _, v in points)
            if drawn:
                ax.axhline(0, color="gray", linewidth=0.8)
                ax.legend(fontsize="x-small", loc="upper left")
            else:
                charts.empty(
                    ax, "no commits in the history read" if index == 1 else "no lag in seconds known"
                )
    if not shown:
        charts.empty(rows[0][0], "no offset commits in the history read")
    lines = [*note_lines, *([NEGATIVE_NOTE] if negative else [])]
    charts.notes(fig, lines)
    charts.layout(fig, len(lines))
    return fig


def summary(groups: Sequence[GroupLag]) -> list[str]:
    """One line per charted group, in the chart's order, with what its panels show."""
    lines = []
    if len(groups) > CHART_GROUPS:
        lines.append(f"  chart: the top {CHART_GROUPS} of {len(groups)} groups by total lag")
    for g in groups[:CHART_GROUPS]:
        tps = g.charted()
        commits = sum(len(g.points[tp]) for tp in tps)
        seconds = [p[2] for tp in tps for p in g.points[tp][-1:] if p[2] is not None]
        behind = f", at its last commit at most {max(seconds):.1f} s behind" if seconds else ""
        lines.append(
            f"  {g.group}: total lag {g.total} over {_count(g.partitions, 'partition')}{behind}; "
            f"{_count(commits, 'commit')} of {_count(len(tps), 'partition')} charted"
        )
        if g.negative:
            past = ", ".join(f"{t}-{p} {lag}" for (t, p), lag in g.negative)
            lines.append(f"    committed past the log end (negative lag, not in the total): {past}")
    unknown = sum(g.unknown for g in groups)
    if unknown:
        lines.append(f"  {unknown} committed partitions belong to topics that no longer exist (lag null)")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def write(groups: Sequence[GroupLag], note_lines: Sequence[str], out: Path) -> Path:
    return charts.save(figure(groups, note_lines), out / "lag.png")
