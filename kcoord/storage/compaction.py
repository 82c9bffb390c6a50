"""Compaction of sealed segments: keep each key's newest record, drop expired tombstones.

Each sealed segment is rewritten under its own name with the swap protocol Kafka's LocalLog uses:
write `<name>.cleaned`, fsync, rename to `<name>.swap`, fsync the directory, replace the original,
fsync the directory. Recovery deletes a `.cleaned` (the original is intact) and completes a `.swap`
(it is whole and fsynced). The active segment is never touched, so appends continue meanwhile.

With a history kept (both history retentions above 0), the original is not lost but moved into the
history area (kcoord/storage/history.py: a hard link made between the `.swap` and the final rename, so that
rename leaves the original there only), once per segment:
a segment whose original history already holds is an earlier compaction's output, a subset of it.
A segment that loses nothing is left as it is (no rewrite, no history copy).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kcoord.storage import framing, history
from kcoord.storage.faults import operation
from kcoord.storage.files import (
    SEGMENT_COMPACTED,
    SEGMENT_HEADER_SIZE,
    SWAP_SUFFIX,
    FileOps,
    encode_segment_header,
)
from kcoord.storage.records import LogConfig
from kcoord.storage.recovery import Entry, Key, Segment

CLEANED_SUFFIX = ".cleaned"
_GIL_SHARE_EVERY = 2048  # records, about two milliseconds of work


def share_gil(done: int) -> None:
    """Called per record by work in a worker thread: every few thousand, a short sleep hands the GIL
    to the event loop at once; otherwise the loop waits the switch interval (5 ms) each time it wakes
    while this thread runs."""
    if done % _GIL_SHARE_EVERY == 0:
        time.sleep(0.0002)


def dirty_ratio(sealed: list[Segment], active_base_lsn: int, keydir: dict[Key, Entry]) -> float:
    """dead bytes / total bytes over the sealed segments (Kafka's cleanable dirty ratio).

    Sealed segments hold exactly the LSNs below the active segment's base, so a key's newest
    record is live in them iff its LSN is below that base.
    """
    total = sum(s.size - SEGMENT_HEADER_SIZE for s in sealed)
    if total <= 0:
        return 0.0
    live = sum(entry.size for entry in keydir.values() if entry.lsn < active_base_lsn)
    return max(0.0, (total - live) / total)


@dataclass(slots=True)
class Plan:
    segments: list[Segment]
    keep_lsns: set[int]
    now_ms: int
    retention_ms: int
    outputs: list[Segment] = field(default_factory=list)
    expired_tombstones: list[tuple[Key, int]] = field(default_factory=list)
    moved_aside: list[Path] = field(default_factory=list)  # the history files this pass made

    @classmethod
    def build(cls, sealed: list[Segment], keydir: dict[Key, Entry], now_ms: int, retention_ms: int) -> Plan:
        keep: set[int] = set()
        expired: list[tuple[Key, int]] = []
        for key, entry in keydir.items():
            if entry.value is None and now_ms - entry.timestamp_ms >= retention_ms:
                expired.append((key, entry.lsn))
            else:
                keep.add(entry.lsn)
        plan = cls(list(sealed), keep, now_ms, retention_ms)
        plan.expired_tombstones = expired
        return plan


def run(plan: Plan, directory: Path, config: LogConfig, ops: FileOps) -> int:
    """Rewrite every planned segment; returns the bytes dropped from the log. Runs in a worker thread."""
    keep_history = config.history_retention_ms > 0 and config.history_retention_bytes > 0
    in_history = history.bases(directory) if keep_history else set()
    freed = 0
    for segment in plan.segments:
        kept, newest_ms = _kept(segment, plan.keep_lsns, config)
        body = encode_segment_header(segment.base_lsn, flags=SEGMENT_COMPACTED) + b"".join(kept)
        if len(body) == segment.size:  # every record kept, no batch marks: the bytes would be the same
            plan.outputs.append(segment)
            continue
        freed += segment.size - len(body)
        aside = keep_history and segment.base_lsn not in in_history
        moved = _swap_in(segment.path, body, ops, (segment.base_lsn, newest_ms) if aside else None)
        if moved is not None:
            plan.moved_aside.append(moved)
        plan.outputs.append(Segment(segment.path, segment.base_lsn, len(body)))
    if keep_history:
        history.trim(directory, plan.now_ms, config.history_retention_ms, config.history_retention_bytes, ops)
    return freed


def _kept(segment: Segment, keep_lsns: set[int], config: LogConfig) -> tuple[list[bytes | memoryview], int]:
    """The live records of `segment`, byte for byte except for batch marks, as few slices as can be,
    and the newest timestamp of all its records (what the history's retention goes by).

    Compaction breaks batches apart (their BatchEnd goes, most of their records too), so a kept
    batch start loses its flag: recovery must not wait for an end that no longer exists. Runs of
    adjacent live records are kept as one slice: fewer objects, fewer garbage-collector passes.
    """
    with operation(segment.path, "read"):
        view = memoryview(segment.path.read_bytes())[: segment.size]
    kept: list[bytes | memoryview] = []
    run_start = run_end = 0
    newest_ms = 0
    records = framing.walk(view, SEGMENT_HEADER_SIZE, config.max_record_bytes)
    for walked, (offset, size, type_, flags, lsn, timestamp_ms, _) in enumerate(records, 1):
        share_gil(walked)
        if timestamp_ms > newest_ms:
            newest_ms = timestamp_ms
        if lsn not in keep_lsns or type_ > framing.USER_TYPE_MAX:
            continue
        if flags & framing.FLAG_BATCH_START:
            kept.append(view[run_start:run_end])
            kept.append(framing.clear_flags(view[offset : offset + size], framing.FLAG_BATCH_START))
            run_start = run_end = offset + size
        elif offset == run_end:
            run_end += size
        else:
            kept.append(view[run_start:run_end])
            run_start, run_end = offset, offset + size
    kept.append(view[run_start:run_end])
    return kept, newest_ms


def _swap_in(path: Path, body: bytes, ops: FileOps, aside: tuple[int, int] | None) -> Path | None:
    """Replace `path` by `body`; with `aside` = (base LSN, newest timestamp) the original goes to the
    history area first. A crash after the move leaves only the `.swap`, which recovery completes."""
    cleaned = path.with_name(path.name + CLEANED_SUFFIX)
    swap = path.with_name(path.name + SWAP_SUFFIX)
    ops.write_new_file(cleaned, body)  # a failed write removes `cleaned`: the segment stays as it was
    with operation(swap, "rename"):
        os.replace(cleaned, swap)
    with operation(path.parent, "fsync_dir"):  # fatal if it fails; recovery completes the .swap
        ops.fsync_dir(path.parent)
    moved = history.move_aside(path, *aside, ops) if aside is not None else None
    with operation(path, "rename"):
        os.replace(swap, path)
    with operation(path.parent, "fsync_dir"):
        ops.fsync_dir(path.parent)
    return moved
