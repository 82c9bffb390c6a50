"""Issue 28: the jobs see every commit and generation the history keeps, and their charts draw them.

`kept` (conftest) is a directory real clients wrote, stopped cleanly, compacted (the originals moved to
the history area) and restarted. The reference is a copy taken before compaction, read here with
storage's framing alone. Charts are checked through the description each PNG carries of its figure
(kcoord/pipeline/charts.py: read back from the drawn artists): points per series, dates on the x axis, notes.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kcoord.pipeline import history, lag, offsets, reader, rebalances
from kcoord.storage import Log, LogConfig, framing
from kcoord.storage.files import SEGMENT_HEADER_SIZE, list_segments
from kcoord.storage.history import list_history


def _before(kept: dict[str, Any]) -> list[dict[str, Any]]:
    """Every committed record the clients caused: the uncompacted copy's segments, read by framing."""
    rows = []
    for path in list_segments(kept["before"]):
        for frame in framing.scan(path.read_bytes(), SEGMENT_HEADER_SIZE, framing.DEFAULT_MAX_RECORD_BYTES):
            if frame.type <= framing.USER_TYPE_MAX:
                raw = reader.Raw(frame.lsn, frame.timestamp_ms, frame.type, frame.key, frame.value)
                rows.append(reader.decode_row(raw))
    return rows


def _commits(rows: list[dict[str, Any]]) -> set[tuple[str, str, int, int, int]]:
    return {
        (r["group"], r["topic"], r["partition"], r["offset"], r["timestamp_ms"])
        for r in rows
        if r["record_type"] == reader.OFFSET_COMMIT_TYPE and not r["tombstone"]
    }


def _described(path: Path) -> dict[str, Any]:
    from PIL import Image

    with Image.open(path) as image:
        text = image.text["Description"]  # type: ignore[attr-defined]  # PNG text chunks
    described: dict[str, Any] = json.loads(text)
    return described


def _panel(described: dict[str, Any], title: str) -> dict[str, Any]:
    matches = [p for p in described["panels"] if p["title"].startswith(title)]
    assert len(matches) == 1, (title, [p["title"] for p in described["panels"]])
    return matches[0]


def _dates_cover(panel: dict[str, Any], times_ms: list[int]) -> None:
    low, high = (datetime.fromisoformat(x).timestamp() * 1000 for x in panel["x_dates"])
    assert low <= min(times_ms) and max(times_ms) <= high, (panel["x_dates"], min(times_ms), max(times_ms))
    assert high - low < 86_400_000, "the axis spans the commits, not the epoch"


def test_compaction_moved_the_history_aside(kept: dict[str, Any]) -> None:
    assert list_history(kept["dir"]), "the offline compaction moved the original segment into history/"
    live = [
        raw for part in reader.plan(str(kept["dir"]), with_history=False) for raw in reader.raw_records(part)
    ]
    live_commits = [r for r in live if r.type == reader.OFFSET_COMMIT_TYPE]
    assert len(live_commits) < len(_commits(_before(kept))), "without the history the commits are gone"


@pytest.fixture(scope="module")
def lag_run(spark: Any, kept: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("lag-history")
    summary = lag.run(spark, str(kept["dir"]), str(out))
    print(summary)
    return out, summary


def test_lag_history_holds_every_commit_and_its_chart_draws_them(
    spark: Any, kept: dict[str, Any], lag_run: tuple[Path, str]
) -> None:
    out, summary = lag_run
    expected = _commits(_before(kept))
    got = {
        (r["group"], r["topic"], r["partition"], r["committed_offset"], r["ts_ms"])
        for r in spark.read.parquet(str(out / "lag_history")).collect()
    }
    assert got == expected
    steady, simple, topic = kept["steady"], kept["simple"], kept["topic"]
    per_partition = Counter((g, t, p) for g, t, p, _, _ in expected)
    assert all(per_partition[(steady, topic, p)] >= 15 for p in kept["ends"])
    described = _described(out / "lag.png")
    assert described["title"] == "Consumer lag at each commit"
    records = _panel(described, f"{steady}: lag in records")
    assert records["points"] == {f"{topic}-{p}": per_partition[(steady, topic, p)] for p in kept["ends"]}
    assert records["markers"] == ["o"]
    _dates_cover(records, [ts for g, *_, ts in expected if g == steady])
    seconds = _panel(described, f"{steady}: lag in seconds")
    assert seconds["points"] == records["points"], "every commit had a next record with a timestamp"
    # the simple group committed past the log end: one point below zero, explained, not summed
    past = _panel(described, f"{simple}: lag in records")
    assert past["points"] == {f"{topic}-0": 1}
    assert any("committed past the log end" in note for note in described["notes"])
    assert any(note.startswith("history since") for note in described["notes"])
    assert f"  {simple}: total lag 0 over 1 partition" in summary
    assert f"committed past the log end (negative lag, not in the total): {topic}-0 -870" in summary
    assert f"  {steady}: total lag 0 over 2 partitions" in summary  # the 15th commit reached the end
    commits = sum(per_partition[(steady, topic, p)] for p in kept["ends"])
    assert f"{commits} commits of 2 partitions charted" in summary


def _generations(rows: list[dict[str, Any]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for r in rows:
        if r["record_type"] == reader.GROUP_METADATA_TYPE and not r["tombstone"]:
            out.setdefault(r["group"], set()).add(r["generation"])
    return out


def test_rebalances_hold_every_generation_with_its_reason_and_charts_draw_them(
    spark: Any, kept: dict[str, Any], tmp_path: Path
) -> None:
    summary = rebalances.run(spark, str(kept["dir"]), str(tmp_path))
    print(summary)
    rows = spark.read.parquet(str(tmp_path / "rebalances")).collect()
    got: dict[str, set[int]] = {}
    for r in rows:
        got.setdefault(r["group"], set()).add(r["generation"])
    expected = _generations(_before(kept))
    assert got == expected
    steady = sorted((r for r in rows if r["group"] == kept["steady"]), key=lambda r: r["generation"])
    reasons = [r["reason"] for r in steady]
    assert reasons[0] == "group formed" and "1 joined" in reasons and "1 left or expired" in reasons, reasons
    described = _described(tmp_path / "rebalances.png")
    panel = _panel(described, kept["steady"])
    assert panel["points"] == {kept["steady"]: len(steady)}
    short = [
        r["reason"].replace(" or expired", "").replace("same members rejoined", "rejoined") for r in steady
    ]
    assert panel["texts"] == short[-12:], "each generation labelled with its reason"
    _dates_cover(panel, [r["timestamp_ms"] for r in steady])
    members = _panel(_described(tmp_path / "membership.png"), kept["steady"])
    assert members["points"] == {kept["steady"]: len(steady)} and members["markers"] == ["o"]
    assert f"  {kept['steady']}: {len(steady)} generations, max 2 members" in summary
    for r in steady:
        assert f"generation {r['generation']} at " in summary and r["reason"] in summary


def test_offsets_history_holds_every_commit_and_latest_is_what_recovery_restores(
    spark: Any, kept: dict[str, Any], tmp_path: Path
) -> None:
    print(offsets.run(spark, str(kept["dir"]), str(tmp_path)))
    history_rows = spark.read.parquet(str(tmp_path / "offsets_history")).collect()
    got = {(r["group"], r["topic"], r["partition"], r["offset"], r["timestamp_ms"]) for r in history_rows}
    expected = _commits(_before(kept))
    assert got == expected
    newest: dict[tuple[str, str, int], tuple[int, int]] = {}  # by LSN, as recovery's keydir
    for r in _before(kept):
        if r["record_type"] == reader.OFFSET_COMMIT_TYPE:
            key = (r["group"], r["topic"], r["partition"])
            newest[key] = max(newest.get(key, (-1, 0)), (r["lsn"], r["offset"]))
    latest = spark.read.parquet(str(tmp_path / "offsets")).collect()
    assert {(r["group"], r["topic"], r["partition"]): r["offset"] for r in latest} == {
        key: offset for key, (_, offset) in newest.items()
    }


def test_trimmed_history_is_noted_and_the_jobs_see_what_is_left(
    spark: Any, kept: dict[str, Any], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(kept["dir"], data)
    asyncio.run(_reopen(data, LogConfig(history_retention_bytes=1)))  # retention at open: all of it goes
    assert list_history(data) == []
    cover = history.coverage(reader.plan(str(data)))
    assert not cover.complete
    first_ms = min(ts for *_, ts in _commits(_before(kept)))
    summary = rebalances.run(spark, str(data), str(tmp_path / "out"), since_ms=first_ms)
    assert "history is shorter than asked" in summary
    described = _described(tmp_path / "out" / "rebalances.png")
    assert any("history is shorter than asked" in note for note in described["notes"])
    assert any("full history since" in note or "no history kept" in note for note in described["notes"])


async def _reopen(directory: Path, config: LogConfig) -> None:
    log = await Log.open(directory, config)
    await log.close(write_snapshot=False)


def test_a_corrupt_history_segment_is_read_up_to_the_damage(kept: dict[str, Any], tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(kept["dir"], data)
    old = list_history(data)[0].path
    whole = old.read_bytes()
    old.write_bytes(whole[: len(whole) // 2] + b"\xff" * 40)
    rows = [r for part in reader.plan(str(data)) for r in reader.raw_records(part)]
    live = [r for part in reader.plan(str(data), with_history=False) for r in reader.raw_records(part)]
    lsns = [r.lsn for r in rows]
    assert len(lsns) == len(set(lsns)), "each record once"
    assert {r.lsn for r in live} <= set(lsns), "past the damage, the compacted segment's records are read"
    assert len(rows) > len(live), "the good part of the damaged history is still read"


def test_lag_chart_of_no_commits_says_so(tmp_path: Path) -> None:
    from kcoord.pipeline import lag_report

    path = lag_report.write(lag_report.build([], []), ["history since then"], tmp_path)
    described = _described(path)
    assert described["panels"][0]["texts"] == ["no offset commits in the history read"]


def test_progress_bar_only_on_a_terminal(spark: Any) -> None:
    from kcoord.pipeline import session

    assert session.progress_wanted() is False  # pytest's stderr is not a terminal
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"


def test_since_takes_a_duration_back_from_now_or_a_utc_time() -> None:
    import argparse

    from kcoord.pipeline.cli import parse_since

    now = 1_800_000_000_000
    assert parse_since("7d", now) == now - 7 * 86_400_000
    assert parse_since("90m", now) == now - 90 * 60_000
    assert parse_since("2026-11-25T10:00", now) == parse_since("2026-11-25T10:00:00+00:00", now)
    assert parse_since("2026-11-25T10:00", now) == 1_795_600_800_000
    with pytest.raises(argparse.ArgumentTypeError):
        parse_since("last week", now)
