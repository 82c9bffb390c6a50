"""The history area: sealed segments that compaction replaced, moved aside whole for analytics.

    DATA_DIR/history/<base_lsn, 20 digits>.<newest record's timestamp_ms>.log

Compaction keeps only each key's newest record, which is right for recovery and wrong for anyone
asking how offsets moved or when a group rebalanced. So the original of a segment that compaction
rewrites is not deleted but moved into `history/`: a hard link there and a directory fsync, then the
compaction's rename over the segment leaves the original under that name only (never copied, never
rewritten; its bytes, header and CRCs are exactly the segment's). The name carries the newest
record's timestamp so retention decides from a directory listing, without reading a file.

Kafka has no such area (its cleaner deletes the segments it replaced: core/.../log/LogCleaner.scala
Cleaner.cleanSegments -> UnifiedLog.replaceSegments); this is kcoord's own (docs/storage-format.md
"History").

Rules: recovery never reads it (a missing, trimmed or corrupt history changes nothing the server
restores); only the first original of a segment goes there (a later compaction of the already
compacted segment drops a subset of what history holds); retention removes the oldest files first,
by the age of their newest record and by the total bytes of the area.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from kcoord.storage.faults import StorageFault, operation
from kcoord.storage.files import SEGMENT_SUFFIX, FileOps
from kcoord.storage.records import LogConfig

log = logging.getLogger(__name__)

HISTORY_DIR = "history"


@dataclass(frozen=True, slots=True)
class HistorySegment:
    path: Path
    base_lsn: int
    newest_ms: int
    size: int


def history_dir(directory: Path) -> Path:
    return directory / HISTORY_DIR


def history_name(base_lsn: int, newest_ms: int) -> str:
    return f"{base_lsn:020d}.{newest_ms}{SEGMENT_SUFFIX}"


def parse(path: Path) -> HistorySegment | None:
    """The segment a history file name describes; None for a name that is not ours (left alone)."""
    parts = path.name.split(".")
    if len(parts) != 3 or "." + parts[2] != SEGMENT_SUFFIX or not parts[0].isdigit():
        return None
    if not parts[1].lstrip("-").isdigit():
        return None
    try:
        size = path.stat().st_size
    except FileNotFoundError:  # trimmed meanwhile
        return None
    return HistorySegment(path, int(parts[0]), int(parts[1]), size)


def list_history(directory: Path) -> list[HistorySegment]:
    """The history segments of a data directory, oldest (lowest base LSN) first; [] without a history."""
    area = history_dir(directory)
    if not area.is_dir():
        return []
    found = (parse(path) for path in area.glob("*" + SEGMENT_SUFFIX))
    return sorted((h for h in found if h is not None), key=lambda h: h.base_lsn)


def bases(directory: Path) -> set[int]:
    return {h.base_lsn for h in list_history(directory)}


def move_aside(path: Path, base_lsn: int, newest_ms: int, ops: FileOps) -> Path | None:
    """Give the sealed segment `path` a second name in the history area (a hard link: the same inode,
    nothing copied); the caller's rename of the compacted segment over `path` then leaves the
    original only there. Done after the `.swap` is durable and before that rename, so a failure here
    leaves the segment as it was: the history is best effort (None: this original is not kept)."""
    area = history_dir(path.parent)
    target = area / history_name(base_lsn, newest_ms)
    try:
        if not area.is_dir():
            area.mkdir(exist_ok=True)
            with operation(path.parent, "fsync_dir"):  # fatal if it fails, like every directory fsync
                ops.fsync_dir(path.parent)
        os.link(path, target)
    except FileExistsError:
        pass  # a crash after the link and before the rename: the same original, already kept
    except StorageFault:
        raise
    except OSError as exc:
        log.warning("history: %s not kept (compaction goes on without it): %s", path.name, exc)
        return None
    with operation(area, "fsync_dir"):
        ops.fsync_dir(area)
    return target


def expired(segments: list[HistorySegment], now_ms: int, retention_ms: int, retention_bytes: int) -> int:
    """How many of `segments` (oldest first) retention removes: every one whose newest record is
    older than `retention_ms`, then the oldest until the rest fit in `retention_bytes`."""
    count = 0
    while count < len(segments) and now_ms - segments[count].newest_ms > retention_ms:
        count += 1
    total = sum(h.size for h in segments[count:])
    while count < len(segments) and total > retention_bytes:
        total -= segments[count].size
        count += 1
    return count


def trim(directory: Path, now_ms: int, retention_ms: int, retention_bytes: int, ops: FileOps) -> int:
    """Delete what retention removes; returns the bytes deleted. A failure is logged, never raised:
    the history is for analytics, and the next check tries again."""
    try:
        segments = list_history(directory)
    except OSError as exc:
        log.warning("history retention could not list %s: %s", history_dir(directory), exc)
        return 0
    doomed = segments[: expired(segments, now_ms, retention_ms, retention_bytes)]
    deleted = 0
    for segment in doomed:
        try:
            segment.path.unlink(missing_ok=True)
            deleted += segment.size
        except OSError as exc:
            log.warning("history retention could not delete %s: %s", segment.path, exc)
    if doomed:
        try:
            ops.fsync_dir(history_dir(directory))
        except OSError as exc:
            log.warning("history retention: fsync of %s failed: %s", history_dir(directory), exc)
        log.info("history retention removed %d segments (%d bytes)", len(doomed), deleted)
    return deleted


def apply_retention(directory: Path, config: LogConfig, ops: FileOps, now_ms: int) -> int:
    """`trim` with the log's settings; a retention of 0 keeps no history, so whatever an earlier run
    kept goes too."""
    keep = config.history_retention_ms > 0 and config.history_retention_bytes > 0
    retention_ms = config.history_retention_ms if keep else -1
    return trim(directory, now_ms, retention_ms, max(config.history_retention_bytes, 0), ops)
