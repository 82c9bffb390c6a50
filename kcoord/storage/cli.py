"""`kcoord storage dump|verify|compact|repair --data-dir DIR`: inspect and mend a data directory.

dump and verify only read; both cover the history area too (kcoord/storage/history.py). compact and repair
take the directory lock, so they refuse to run beside a live server; compact, having no writer beside
it, seals the last segment as well, so every record is compacted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

from kcoord.storage import framing, history, snapshot
from kcoord.storage.errors import StorageError
from kcoord.storage.files import (
    SEGMENT_HEADER_SIZE,
    DirectoryLock,
    FileOps,
    base_of,
    decode_segment_header,
    list_segments,
    list_snapshots,
)
from kcoord.storage.log import Log
from kcoord.storage.records import LogConfig, Record

Render = Callable[[Record], str]


def _default_render(record: Record) -> str:
    value = "<tombstone>" if record.value is None else record.value.hex()
    return f"type={record.type} key={record.key.hex()} value={value}"


def _describe(frame: framing.Frame, render: Render) -> str:
    if frame.type == framing.TYPE_BATCH_END:
        return "batch-end"
    start = " batch-start" if frame.flags & framing.FLAG_BATCH_START else ""
    return render(Record(frame.type, frame.key, frame.value)) + start


def _check_segment(path: Path, is_last: bool) -> tuple[list[framing.Frame], str | None]:
    """(frames, problem) for one segment; problem names the offset of the first bad byte."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # a history file trimmed meanwhile
        return [], None
    header = decode_segment_header(data)
    if header is None or header.base_lsn != base_of(path):
        return [], f"{path}: bad segment header at offset 0"
    frames = list(framing.scan(data, SEGMENT_HEADER_SIZE, LogConfig().max_record_bytes))
    end = frames[-1].offset + frames[-1].size if frames else SEGMENT_HEADER_SIZE
    if end < len(data):
        kind = "torn tail" if is_last else "corruption in sealed segment"
        return frames, f"{path}: {kind} at offset {end} ({len(data) - end} bytes after the last good record)"
    return frames, None


def dump(directory: Path, render: Render) -> int:
    for snap_path in list_snapshots(directory):
        snap = snapshot.decode(snap_path, LogConfig().max_record_bytes)
        print(
            f"# snapshot {snap_path.name}: " + ("damaged" if snap is None else f"{len(snap.frames)} records")
        )
        for frame in snap.frames if snap else []:
            print(f"  lsn={frame.lsn} ts={frame.timestamp_ms} {_describe(frame, render)}")
    segments = list_segments(directory)
    for index, path in enumerate(segments):
        frames, problem = _check_segment(path, index == len(segments) - 1)
        print(f"# segment {path.name}: {len(frames)} records")
        for frame in frames:
            print(
                f"  lsn={frame.lsn} offset={frame.offset} ts={frame.timestamp_ms} {_describe(frame, render)}"
            )
        if problem:
            print(f"# {problem}")
    for old in history.list_history(directory):
        frames, problem = _check_segment(old.path, False)
        print(f"# history segment {old.path.name}: {len(frames)} records (not read by recovery)")
        for frame in frames:
            print(f"  lsn={frame.lsn} ts={frame.timestamp_ms} {_describe(frame, render)}")
        if problem:
            print(f"# {problem}")
    return 0


def _history_problems(directory: Path) -> list[str]:
    """A damaged history file stops nothing (recovery never reads it, the pipeline reads up to the
    damage), but verify names it like any other damage."""
    problems = []
    for old in history.list_history(directory):
        _frames, problem = _check_segment(old.path, False)
        if problem:
            problems.append(f"history: {problem} (ignored by recovery; the pipeline reads up to it)")
    return problems


def verify(directory: Path) -> int:
    problems = []
    segments = list_segments(directory)
    for index, path in enumerate(segments):
        _frames, problem = _check_segment(path, index == len(segments) - 1)
        if problem:
            problems.append(problem)
    for snap_path in list_snapshots(directory):
        if snapshot.decode(snap_path, LogConfig().max_record_bytes) is None:
            problems.append(f"{snap_path}: damaged snapshot (ignored at startup)")
    problems += _history_problems(directory)
    for problem in problems:
        print(problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def repair(directory: Path) -> int:
    """Cut every segment back to its last good record; the damaged bytes are kept aside in *.damaged."""
    lock = DirectoryLock(directory)
    lock.acquire()
    try:
        segments = list_segments(directory)
        for index, path in enumerate(segments):
            frames, problem = _check_segment(path, index == len(segments) - 1)
            if problem is None:
                continue
            end = frames[-1].offset + frames[-1].size if frames else SEGMENT_HEADER_SIZE
            data = path.read_bytes()
            path.with_name(path.name + ".damaged").write_bytes(data[end:])
            with open(path, "r+b") as file:
                file.truncate(end)
                os.fsync(file.fileno())
            print(f"repaired {path.name}: kept {end} bytes, moved {len(data) - end} to {path.name}.damaged")
        FileOps().fsync_dir(directory)
    finally:
        lock.release()
    return 0


async def _compact(directory: Path) -> int:
    log = await Log.open(directory, LogConfig())
    try:
        freed = await log.compact()  # the sealed segments first: on a full disk this fails untouched
        await log.seal_active()
        freed += await log.compact()
    except BaseException:
        await log.close(write_snapshot=False)  # the compaction's error is the one line to show
        raise
    await log.close()
    print(f"compacted: {freed} bytes freed")
    return 0


def main(argv: list[str] | None = None, render: Render | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kcoord storage", description=__doc__)
    parser.add_argument("command", choices=("dump", "verify", "compact", "repair"))
    parser.add_argument("--data-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    directory: Path = args.data_dir
    if not directory.is_dir():
        print(f"no data directory at {directory}", file=sys.stderr)
        return 2
    try:
        if args.command == "dump":
            return dump(directory, render or _default_render)
        if args.command == "verify":
            return verify(directory)
        if args.command == "repair":
            return repair(directory)
        return asyncio.run(_compact(directory))
    except StorageError as exc:
        print(f"kcoord storage {args.command}: {exc}", file=sys.stderr)
        return 1
