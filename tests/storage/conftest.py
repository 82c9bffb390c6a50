from __future__ import annotations

import asyncio
from pathlib import Path

from kcoord.storage import Log, LogConfig, Record
from kcoord.storage.files import list_segments

State = dict[tuple[int, bytes], bytes]


def fold(records: list[Record]) -> State:
    """Latest value per key, deletes removed: the state a log's records describe."""
    state: State = {}
    for record in records:
        if record.value is None:
            state.pop((record.type, record.key), None)
        else:
            state[(record.type, record.key)] = record.value
    return state


async def replay(directory: Path, config: LogConfig | None = None) -> State:
    records: list[Record] = []
    log = await Log.open(directory, config or LogConfig(fsync_policy="never"), records.append)
    await log.close(write_snapshot=False)
    return fold(records)


def replay_sync(directory: Path) -> State:
    return asyncio.run(replay(directory))


def segments(directory: Path) -> list[Path]:
    return list_segments(directory)
