"""How far back the records on disk reach, for the jobs' notes ("history since ...").

The `kcoord` source's view with history (reader.plan_with_history) is every record still on disk,
each once: per segment base the history area's original (storage/history.py) when there is one,
else the segment itself, read whole. Retention trims the oldest originals first, so the oldest
record left says how far back every job can see; LSN 0 means nothing was trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.reader import Part, plan
from storage import framing, snapshot
from storage.files import SEGMENT_HEADER_SIZE, decode_segment_header

_MAX = framing.DEFAULT_MAX_RECORD_BYTES


@dataclass(frozen=True)
class Coverage:
    """How far back the records on disk reach: the oldest record's LSN and time, and whether it is
    the log's very first record (LSN 0: nothing trimmed) or retention has removed older history."""

    first_lsn: int | None
    first_ms: int | None
    history_segments: int

    @property
    def complete(self) -> bool:
        return self.first_lsn == 0

    def since(self) -> str:
        if self.first_ms is None:
            return "no records"
        first = when(self.first_ms)
        if self.complete:
            return f"history since {first} (the log's first record)"
        return f"history since {first} (older history trimmed by retention or not kept)"


def coverage(parts: list[Part]) -> Coverage:
    """The oldest record of the planned parts, read from the first records of their files only."""
    originals = sum(1 for part in parts if part.kind == "history")
    for part in parts:
        first = _first_record(part)
        if first is not None:
            return Coverage(first[0], first[1], originals)
    return Coverage(None, None, originals)


def _first_record(part: Part) -> tuple[int, int] | None:
    if part.kind == "snapshot":
        snap = snapshot.decode(Path(part.path), _MAX)
        return (snap.frames[0].lsn, snap.frames[0].timestamp_ms) if snap and snap.frames else None
    try:
        with open(part.path, "rb") as f:
            head = f.read(SEGMENT_HEADER_SIZE + framing.HEADER_SIZE)
    except FileNotFoundError:
        return None
    if decode_segment_header(head) is None or len(head) < SEGMENT_HEADER_SIZE + framing.HEADER_SIZE:
        return None
    _, _, _, _, lsn, timestamp_ms, _ = framing.HEADER.unpack_from(head, SEGMENT_HEADER_SIZE)
    return lsn, timestamp_ms


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def notes(cover: Coverage, since_ms: int | None) -> list[str]:
    """What a chart and a summary say about how far back they see, and whether that is less than asked."""
    lines = [cover.since()]
    if since_ms is not None and (cover.first_ms is None or cover.first_ms > since_ms):
        lines.append(
            f"history is shorter than asked: asked from {when(since_ms)}, the oldest record kept is "
            + ("none" if cover.first_ms is None else when(cover.first_ms))
        )
    return lines


def plan_coverage(data_dir: str) -> Coverage:
    return coverage(plan(data_dir))
