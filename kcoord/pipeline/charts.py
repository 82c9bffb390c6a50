"""Charts a person reads (issue 28): real dates on time axes, a marker on every point (a series of one
point still shows), one panel per group, notes on the figure when the history is shorter than asked.

Every chart is saved with a description of what its figure draws, taken from the matplotlib artists
themselves after drawing (per panel: title, the x axis's date range, points per series, notes), in
the PNG's "Description" text chunk: a test, or a person with `exiftool`, can check what a chart
shows without looking at pixels.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: the jobs run on servers and in CI; before pyplot is imported

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

PANEL_HEIGHT = 2.6
NOTE_COLOR = "#8a4b00"


def dates(ms: Sequence[int]) -> list[datetime]:
    return [datetime.fromtimestamp(t / 1000, UTC) for t in ms]


def num(when: datetime) -> float:
    """matplotlib's number for a date (where annotations go on a date axis)."""
    value: float = mdates.date2num(when)  # type: ignore[no-untyped-call]  # unannotated
    return value


def grid(rows: int, columns: int, title: str) -> tuple[Figure, list[list[Axes]]]:
    """One row of panels per group (at least one row, so an empty chart says so)."""
    rows = max(rows, 1)
    fig, axes = plt.subplots(
        rows, columns, figsize=(6 * columns, PANEL_HEIGHT * rows + 1.2), squeeze=False, sharex=True
    )
    fig.suptitle(title)
    return fig, [list(row) for row in axes]


def date_axis(ax: Axes) -> None:
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]  # unannotated in matplotlib
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    ax.set_xlabel("time (UTC)")


def series(ax: Axes, ms: Sequence[int], values: Sequence[float], label: str, *, step: bool = True) -> None:
    """A time series with a marker on every point; `step` holds each value until the next."""
    style = "steps-post" if step else "default"
    x = mdates.date2num(dates(ms))  # type: ignore[no-untyped-call]  # real dates, shown as dates
    ax.plot(x, list(values), marker="o", markersize=4, label=label, drawstyle=style)


def empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="gray")


def notes(fig: Figure, lines: Sequence[str]) -> None:
    """Notes under the panels (history shorter than asked, what negative values mean)."""
    if lines:
        fig.text(0.01, 0.005, "\n".join(lines), fontsize="small", color=NOTE_COLOR, va="bottom", wrap=True)


def layout(fig: Figure, note_lines: int) -> None:
    fig.tight_layout(rect=(0, 0.03 + 0.025 * note_lines, 1, 0.97))


def describe(fig: Figure) -> dict[str, Any]:
    """What the figure draws, read back from its artists."""
    panels = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        lines = [line for line in ax.get_lines() if not str(line.get_label()).startswith("_")]
        low, high = ax.get_xlim()
        is_date = isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
        panels.append(
            {
                "title": ax.get_title(),
                "ylabel": ax.get_ylabel(),
                "x_dates": [_iso(low), _iso(high)] if is_date else None,
                "points": {str(line.get_label()): len(list(line.get_xdata())) for line in lines},  # type: ignore[arg-type]
                "markers": sorted({str(line.get_marker()) for line in lines}),
                "texts": [t.get_text() for t in ax.texts],
            }
        )
    return {
        "title": fig.get_suptitle(),
        "panels": panels,
        "notes": [t.get_text() for t in fig.texts if t.get_text() != fig.get_suptitle()],
    }


def _iso(num: float) -> str:
    when: datetime = mdates.num2date(num, tz=UTC)  # type: ignore[no-untyped-call]  # unannotated
    return when.isoformat()


def save(fig: Figure, path: Path) -> Path:
    fig.canvas.draw()  # ticks and limits as they will be saved
    fig.savefig(path, dpi=80, metadata={"Description": json.dumps(describe(fig))})
    plt.close(fig)
    return path
