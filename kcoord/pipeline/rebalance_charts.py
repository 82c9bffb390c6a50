"""The `rebalances` job's charts: per group, generations over time labelled with why each began, and
the member count over time; the groups with the most generations, said in the title when there are
more. The job's text summary lists the same groups and the same labelled generations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.ticker import MaxNLocator

from kcoord.pipeline import charts

CHART_GROUPS = 6
ANNOTATED = 12  # the newest generations of a panel labelled with their reason (and listed in the text)

Row = tuple[Any, ...]  # rebalances.TIMELINE_DDL: group, generation, ts, members, joins, leaves, moved, reason


def shown(groups: Mapping[str, Sequence[Row]]) -> list[str]:
    return sorted(groups, key=lambda g: (-len(groups[g]), g))[:CHART_GROUPS]


def _title(what: str, groups: Mapping[str, Sequence[Row]], picked: Sequence[str]) -> str:
    more = f": top {len(picked)} of {len(groups)} groups by generations" if len(groups) > len(picked) else ""
    return f"{what}{more}"


def _short(reason: str) -> str:
    return reason.replace(" or expired", "").replace("same members rejoined", "rejoined")


def figure(groups: Mapping[str, Sequence[Row]], column: int, note_lines: Sequence[str]) -> Any:
    """column 1: generations labelled with their reason; column 3: members."""
    picked = shown(groups)
    what = "Rebalances (generation, and why it began)" if column == 1 else "Group members over time"
    fig, rows = charts.grid(len(picked), 1, _title(what, groups, picked))
    for group, (ax,) in zip(picked, rows, strict=False):
        series = sorted(groups[group], key=lambda r: r[1])
        ax.set_title(group, fontsize="medium")
        ax.set_ylabel("generation" if column == 1 else "members")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # generations and members are counts
        charts.date_axis(ax)
        charts.series(ax, [r[2] for r in series], [r[column] for r in series], group)
        if column == 1:
            for r in series[-ANNOTATED:]:
                x = charts.dates([r[2]])[0]
                ax.annotate(_short(r[7]), (charts.num(x), r[1]), textcoords="offset points", xytext=(4, 4),
                            fontsize="x-small")  # fmt: skip
        ax.margins(x=0.08, y=0.25)  # room for the labels and for a single point
    if not picked:
        charts.empty(rows[0][0], "no group generations in the history read")
    charts.notes(fig, note_lines)
    charts.layout(fig, len(note_lines))
    return fig


def write(groups: Mapping[str, Sequence[Row]], note_lines: Sequence[str], out: Path) -> list[str]:
    """rebalances.png and membership.png; returns the groups charted, in their order."""
    charts.save(figure(groups, 1, note_lines), out / "rebalances.png")
    charts.save(figure(groups, 3, note_lines), out / "membership.png")
    return shown(groups)
