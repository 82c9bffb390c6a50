"""How far back the records on disk reach, for the jobs' notes ("history since ...").

The `kcoord` source's view with history (reader.plan_with_history) is every record still on disk,
each once: per segment base the history area's original (kcoord/storage/history.py) when there is one,
else the segment itself, read whole. Compaction marks the segments it dropped records from
(storage.files.SEGMENT_COMPACTED); one without its original in the history lost history, so the
records are whole only after the last such segment. Retention trims the oldest originals first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from kcoord.pipeline.reader import Part, plan
from kcoord.storage import framing
from kcoord.storage.files import SEGMENT_COMPACTED, SEGMENT_HEADER_SIZE, decode_segment_header


@dataclass(frozen=True)
class Coverage:
    """From when on every record is there: `first_ms` is the first record after the last segment
    that lost records to compaction with no original in the history area (trimmed by retention, or
    compacted with no history kept); before it only the newest offsets and group state survive.
    `complete`: no such segment, the history reaches back to the log's first record."""

    first_ms: int | None
    complete: bool
    history_segments: int

    def since(self) -> str:
        if self.first_ms is None:
            return "no history kept: only the newest offsets and group state"
        first = when(self.first_ms)
        if self.complete:
            return f"history since {first} (the log's first record)"
        return (
            f"full history since {first}; before it only the newest offsets and group state "
            "(older history trimmed by retention, or not kept)"
        )


def coverage(parts: list[Part]) -> Coverage:
    """Reads only segment headers and the first record of one file."""
    start = 0
    for index, part in enumerate(parts):
        if _lossy(part):
            start = index + 1
    originals = sum(1 for part in parts if part.kind == "history")
    for part in parts[start:]:
        first = _first_record(part)
        if first is not None:
            return Coverage(first, start == 0, originals)
    return Coverage(None, start == 0, originals)


def _lossy(part: Part) -> bool:
    """A part that lost records: a compacted segment without its original, or a snapshot."""
    if part.kind == "snapshot":
        return True
    if part.kind == "history":
        return False
    try:
        with open(part.path, "rb") as f:
            header = decode_segment_header(f.read(SEGMENT_HEADER_SIZE))
    except FileNotFoundError:
        return True
    return header is not None and bool(header.flags & SEGMENT_COMPACTED)


def _first_record(part: Part) -> int | None:
    """The timestamp of a segment's first record (None if empty or unreadable)."""
    try:
        with open(part.path, "rb") as f:
            head = f.read(SEGMENT_HEADER_SIZE + framing.HEADER_SIZE)
    except FileNotFoundError:
        return None
    if decode_segment_header(head) is None or len(head) < SEGMENT_HEADER_SIZE + framing.HEADER_SIZE:
        return None
    timestamp_ms: int = framing.HEADER.unpack_from(head, SEGMENT_HEADER_SIZE)[5]
    return timestamp_ms


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
