"""The coordinator log as typed rows, one input part per segment and one for the snapshot.

Two views (`plan(..., with_history=)`): *live* is what recovery restores (the newest snapshot and
the records after it); *with history* (the default) is every record still on disk, for the jobs
that look back in time: the history area's originals (kcoord/storage/history.py) stand in for the
compacted segments they were, and the rest of the segments are read whole (kcoord/pipeline/history.py).

Copy-on-read: the driver lists the directory once and remembers each file's size; a part reads
only that many bytes from its file (the live server only appends, and compaction swaps whole files,
so the prefix is stable) and never takes the LOCK. Finding the committed records reuses storage's
own rules (storage.recovery.committed_offsets, storage.snapshot.decode_bytes); a short read in the
*last* segment is a torn tail (skipped, as recovery does), in a sealed segment it is corruption
(PipelineError). kcoord/pipeline/columnar.py decodes the offset commits among them column-wise; every
other record takes the per-row path below.
Type 4 (topic registry) records are decoded with protocol's TopicKey/TopicValue schemas (topic,
topic_id, num_partitions); other record types (5: producer id blocks) carry type, key and tombstone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from kcoord.protocol import consumer_protocol
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages import records as schemas
from kcoord.storage import framing, recovery, snapshot
from kcoord.storage.files import base_of, decode_segment_header, list_segments, list_snapshots
from kcoord.storage.history import list_history

log = logging.getLogger(__name__)
MAX_RECORD_BYTES = framing.DEFAULT_MAX_RECORD_BYTES

# the coordinator log's record types (protocol.messages.records.RECORD_TYPES, the one table)
OFFSET_COMMIT_TYPE = schemas.OFFSET_COMMIT_RECORD_TYPE
GROUP_METADATA_TYPE = schemas.GROUP_METADATA_RECORD_TYPE
TOPIC_TYPE = schemas.TOPIC_RECORD_TYPE


class PipelineError(Exception):
    """A one-line, user-facing failure (bad directory, corrupt sealed segment)."""


@dataclass(frozen=True)
class Part:
    path: str
    size: int
    kind: str  # "segment" | "snapshot" | "history"
    is_last: bool
    min_lsn: int  # records below this are covered by the snapshot
    max_lsn: int | None = None  # records at or above this are read from another part
    # history parts: the compacted segment of the same base, read past the history's last good record
    # (a damaged or trimmed history file loses only what compaction dropped after the damage)
    fallback: str | None = None
    fallback_size: int = 0


def plan(data_dir: str, with_history: bool = True) -> list[Part]:
    """The input parts of a data directory, sized now so every part reads a consistent prefix."""
    if with_history:
        return plan_with_history(data_dir)
    return plan_live(data_dir)


def plan_live(data_dir: str) -> list[Part]:
    """What recovery restores: the newest snapshot and the records after it."""
    directory = Path(data_dir)
    if not directory.is_dir():
        raise PipelineError(f"{data_dir}: not a directory")
    segments = list_segments(directory)
    snaps = list_snapshots(directory)
    if not segments and not snaps:
        raise PipelineError(f"{data_dir}: no kcoord log (no *.log segments, no *.snap snapshot)")
    parts: list[Part] = []
    covered = 0
    snap = snapshot.load_newest(directory, framing.DEFAULT_MAX_RECORD_BYTES) if snaps else None
    if snap is not None:
        covered = snap.next_lsn
        parts.append(Part(str(snap.path), snap.path.stat().st_size, "snapshot", False, 0))
    for index, path in enumerate(segments):
        last = index == len(segments) - 1
        parts.append(Part(str(path), path.stat().st_size, "segment", last, covered))
    return parts


def plan_with_history(data_dir: str) -> list[Part]:
    directory = Path(data_dir)
    if not directory.is_dir():
        raise PipelineError(f"{data_dir}: not a directory")
    segments = {base_of(path): path for path in list_segments(directory)}
    originals = {old.base_lsn: old for old in list_history(directory)}
    snaps = list_snapshots(directory)
    if not segments and not originals and not snaps:
        raise PipelineError(f"{data_dir}: no kcoord log (no *.log segments, no *.snap snapshot)")
    parts: list[Part] = []
    lowest = min(segments.keys() | originals.keys(), default=None)
    if snaps and (lowest is None or lowest > 0):
        snap = snapshot.load_newest(directory, MAX_RECORD_BYTES)
        if snap is not None:
            parts.append(Part(str(snap.path), snap.path.stat().st_size, "snapshot", False, 0, lowest))
    last_base = max(segments, default=None)
    for base in sorted(segments.keys() | originals.keys()):
        path, old = segments.get(base), originals.get(base)
        if old is not None:
            size = path.stat().st_size if path is not None else 0
            parts.append(Part(str(old.path), old.size, "history", False, 0, None, str(path or ""), size))
        elif path is not None:
            parts.append(Part(str(path), path.stat().st_size, "segment", base == last_base, 0))
    return parts


def committed_history(part: Part) -> tuple[bytes, list[int]]:
    """A history original's committed records; past damage (or if it is gone), the compacted
    segment's records after the last good one, appended to the same buffer."""
    try:
        with open(part.path, "rb") as f:
            data = f.read(part.size)
    except FileNotFoundError:
        log.warning("history segment %s trimmed while reading: using the compacted segment", part.path)
        data = b""
    offsets: list[int] = []
    last_lsn = -1
    good = 0
    if decode_segment_header(data) is not None:
        offsets, good, last_lsn = recovery.committed_offsets(data, 0, -1, MAX_RECORD_BYTES)
    if good == len(data) and data:
        return data, offsets  # whole: it holds every record of the compacted segment
    if data:
        log.warning("history segment %s damaged at offset %d: read up to there", part.path, good)
    if not part.fallback:
        return data, offsets
    data = data[:good] if good else b""
    with open(part.fallback, "rb") as f:
        rest = f.read(part.fallback_size)
    if decode_segment_header(rest) is None:
        raise PipelineError(f"{part.fallback}: corrupt sealed segment (bad header)")
    more, end, _ = recovery.committed_offsets(rest, last_lsn + 1, last_lsn, MAX_RECORD_BYTES)
    if end < len(rest):
        raise PipelineError(f"{part.fallback}: corrupt sealed segment at offset {end}")
    return data + rest, offsets + [len(data) + offset for offset in more]


class Raw(NamedTuple):
    lsn: int
    timestamp_ms: int
    type: int
    key: bytes
    value: bytes | None


def committed(part: Part) -> tuple[bytes, list[int]]:
    """One read of a part's bytes and where each of its committed records starts, with recovery's
    rules (storage.recovery.committed_offsets) for torn tails, batches and the snapshot boundary."""
    if part.kind == "history":
        return committed_history(part)
    with open(part.path, "rb") as f:
        data = f.read(part.size)
    if part.kind == "snapshot":
        snap = snapshot.decode_bytes(Path(part.path), data, framing.DEFAULT_MAX_RECORD_BYTES)
        if snap is None:
            raise PipelineError(f"{part.path}: snapshot changed or damaged while reading")
        below = part.max_lsn
        return data, [frame.offset for frame in snap.frames if below is None or frame.lsn < below]
    header = decode_segment_header(data)
    if header is None:
        if part.is_last:
            return data, []  # torn header: recovery rewrites it empty
        raise PipelineError(f"{part.path}: corrupt sealed segment (bad header)")
    offsets, good, _ = recovery.committed_offsets(
        data, part.min_lsn, part.min_lsn - 1, framing.DEFAULT_MAX_RECORD_BYTES
    )
    if good < len(data) and not part.is_last:
        raise PipelineError(f"{part.path}: corrupt sealed segment at offset {good}")
    return data, offsets


def raw_at(data: bytes, offsets: list[int]) -> list[Raw]:
    """The records at `offsets` of `data` (found by `committed`), one object each."""
    raws: list[Raw] = []
    for offset in offsets:
        type_, lsn, timestamp_ms, key, value = framing.fields_at(data, offset)
        raws.append(Raw(lsn, timestamp_ms, type_, key, value))
    return raws


def raw_records(part: Part) -> list[Raw]:
    """The CRC-checked records of one part, one object each (the per-row path, and tests)."""
    data, offsets = committed(part)
    return raw_at(data, offsets)


COLUMNS = (
    "lsn",
    "timestamp_ms",
    "record_type",
    "group",
    "topic",
    "partition",
    "offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp",
    "expire_timestamp",
    "generation",
    "protocol_type",
    "protocol",
    "leader",
    "state_timestamp",
    "members",
    "topic_id",
    "num_partitions",
    "tombstone",
    "key",
    "value",
)  # fmt: skip  (the order of kcoord/pipeline/source.py's ARROW_SCHEMA)


def decode_row_tuple(raw: Raw) -> tuple[Any, ...]:
    """One row as a tuple in COLUMNS order; offset commits (most of any log) by struct."""
    if raw.type == OFFSET_COMMIT_TYPE:
        fast = schemas.decode_offset_commit_fast(raw.key, raw.value)
        if fast is not None:
            if fast.tombstone:
                return (
                    raw.lsn, raw.timestamp_ms, raw.type, fast.group, fast.topic, fast.partition,
                    None, None, None, None, None, None, None, None, None, None, None, None, None,
                    True, raw.key, None,
                )  # fmt: skip
            return (
                raw.lsn, raw.timestamp_ms, raw.type, fast.group, fast.topic, fast.partition,
                fast.offset, fast.leader_epoch, fast.metadata, fast.commit_timestamp, -1,
                None, None, None, None, None, None, None, None, False, raw.key, raw.value,
            )  # fmt: skip
    row = decode_row(raw)
    return tuple(row.get(name) for name in COLUMNS)


def decode_row(raw: Raw) -> dict[str, Any]:
    """One typed row; record values decoded with protocol's schemas (topic records left opaque)."""
    row: dict[str, Any] = {
        "lsn": raw.lsn,
        "timestamp_ms": raw.timestamp_ms,
        "record_type": raw.type,
        "tombstone": raw.value is None,
        "key": raw.key,
        "value": raw.value,
    }
    if raw.type == TOPIC_TYPE:
        return _topic_row(row, raw)
    if raw.type not in (OFFSET_COMMIT_TYPE, GROUP_METADATA_TYPE):
        return row
    schema, key = schemas.decode_key(raw.key)
    if schema is None:
        return row
    row["group"] = key["group"]
    if schema is schemas.OFFSET_COMMIT_KEY:
        row["topic"], row["partition"] = key["topic"], key["partition"]
        if raw.value is not None:
            _, value = schemas.decode_value(schemas.OFFSET_COMMIT_VALUE, raw.value)
            row.update(
                offset=value["offset"],
                leader_epoch=value["leader_epoch"],
                metadata=value["metadata"],
                commit_timestamp=value["commit_timestamp"],
                expire_timestamp=value["expire_timestamp"],
            )
    elif raw.value is not None:
        _, value = schemas.decode_value(schemas.GROUP_METADATA_VALUE, raw.value)
        row.update(
            generation=value["generation"],
            protocol_type=value["protocol_type"],
            protocol=value["protocol"],
            leader=value["leader"],
            state_timestamp=value["current_state_timestamp"],
            members=[_member(m, value["protocol_type"]) for m in value["members"]],
        )
    return row


def _topic_row(row: dict[str, Any], raw: Raw) -> dict[str, Any]:
    row["topic"] = schemas.decode_exact(schemas.TOPIC_KEY, raw.key)["name"]
    if raw.value is not None:
        value = schemas.decode_exact(schemas.TOPIC_VALUE, raw.value)
        row.update(topic_id=str(value["topic_id"]), num_partitions=value["num_partitions"])
    return row


def _member(member: Any, protocol_type: str) -> dict[str, Any]:
    topics: list[str] = []
    assigned: list[dict[str, Any]] = []
    if protocol_type == "consumer":
        try:
            if member["subscription"]:
                topics = list(consumer_protocol.decode_subscription(member["subscription"])[1]["topics"])
            if member["assignment"]:
                _, assignment = consumer_protocol.decode_assignment(member["assignment"])
                assigned = [
                    {"topic": tp["topic"], "partitions": list(tp["partitions"])}
                    for tp in assignment["assigned_partitions"]
                ]
        except DecodeError:
            pass  # a client's own bytes that do not follow the consumer protocol: leave them undecoded
    return {
        "member_id": member["member_id"],
        "instance_id": member["group_instance_id"],
        "client_id": member["client_id"],
        "host": member["client_host"],
        "session_timeout": member["session_timeout"],
        "rebalance_timeout": member["rebalance_timeout"],
        "topics": topics,
        "assigned": assigned,
    }
