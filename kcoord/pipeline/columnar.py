"""Offset commits decoded a column at a time: numpy gathers over a segment's bytes, straight to Arrow.

Most of any coordinator log is offset commits, and decoding them one record at a time in Python
(objects per record, then per-cell appends) was the `kcoord` source's whole cost. Here the only
per-record Python work is storage.recovery.committed_offsets' walk; every field of every commit is
then read with one vectorised gather per column, and strings become Arrow arrays from a gathered
buffer and its offsets (UTF-8 checked by Arrow, not by Python).

The layouts are protocol's schemas (kcoord/protocol/messages/records.py; a property test checks this
reader against them) inside storage.framing's frame (header field positions from framing):

    key   (OFFSET_COMMIT_KEY v0/v1):   i16 version | i16 n, group | i16 n, topic | i32 partition
    value (OFFSET_COMMIT_VALUE v3):    i16 3 | i64 offset | i32 leader epoch | i16 n, metadata
                                       | i64 commit timestamp          (absent: a tombstone)

A row that does not follow these layouts exactly (another record type, another value version, bad
lengths) is left to the per-row path, which decodes it with the schemas themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from kcoord.protocol.messages.records import OFFSET_COMMIT_RECORD_TYPE
from kcoord.storage import framing

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_ASSIGNED = pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))])
MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("instance_id", pa.string()),
        ("client_id", pa.string()),
        ("host", pa.string()),
        ("session_timeout", pa.int32()),
        ("rebalance_timeout", pa.int32()),
        ("topics", pa.list_(pa.string())),
        ("assigned", pa.list_(_ASSIGNED)),
    ]
)
ARROW_SCHEMA = pa.schema(
    [
        ("lsn", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("record_type", pa.int32()),
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()),
        ("generation", pa.int32()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("state_timestamp", pa.int64()),
        ("members", pa.list_(MEMBER)),
        ("topic_id", pa.string()),
        ("num_partitions", pa.int32()),
        ("tombstone", pa.bool_()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)

OFFSET_COMMIT_TYPE = OFFSET_COMMIT_RECORD_TYPE  # protocol.messages.records.RECORD_TYPES
_KEY_FIXED = 10  # i16 version + i16 group length + i16 topic length + i32 partition
_VALUE_FIXED = 24  # i16 version + i64 offset + i32 epoch + i16 metadata length + i64 timestamp
_VALUE_VERSION = 3  # the only value version decode_offset_commit_fast reads too
_NOWHERE = 0  # where a gather reads for a row already refused: the buffer's start always exists


class _Bytes:
    """One buffer's big-endian integers and byte spans, gathered at many offsets at once."""

    def __init__(self, data: bytes) -> None:
        self.u8 = np.frombuffer(data, dtype=np.uint8)

    def int_at(self, at: Ints, dtype: str) -> Ints:
        width = np.dtype(dtype).itemsize
        gathered = self.u8[at[:, None] + np.arange(width)]
        return np.ascontiguousarray(gathered).view(dtype).reshape(-1).astype(np.int64)

    def spans(self, starts: Ints, lengths: Ints, type_: pa.DataType) -> pa.Array:
        """The byte spans [start, start + length) as one Arrow (binary or string) array."""
        ends = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ends[1:])
        if ends[-1] > np.iinfo(np.int32).max:  # only a pathological log: let the per-row path say so
            raise pa.ArrowInvalid("a column of one batch over 2 GiB")
        offsets = ends.astype(np.int32)
        index = np.repeat(starts - ends[:-1], lengths) + np.arange(ends[-1])
        payload = self.u8[index]
        array = pa.Array.from_buffers(
            type_, len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(payload)]
        )
        if type_ == pa.string():
            array.validate(full=True)  # raises pa.ArrowInvalid on bytes that are not UTF-8
        return array


def offset_commits(data: bytes, offsets: Sequence[int]) -> tuple[pa.RecordBatch, list[int]]:
    """The offset-commit rows among the records at `offsets` of `data`, as one batch in
    ARROW_SCHEMA, and the offsets of every other record (for the per-row path)."""
    at = np.asarray(offsets, dtype=np.int64)
    buf = _Bytes(data)
    type_ = buf.u8[at + framing.TYPE_AT].astype(np.int64)
    mask = type_ == OFFSET_COMMIT_TYPE
    at = at[mask]
    rest = np.asarray(offsets, dtype=np.int64)[~mask]
    ok, fields = _decode(buf, at)
    others = sorted([*rest.tolist(), *at[~ok].tolist()])
    if not ok.all():
        fields = {name: column[ok] for name, column in fields.items()}
    try:
        batch = _batch(buf, fields)
    except pa.ArrowInvalid:  # e.g. a string that is not UTF-8: the schemas decide what such a row is
        return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA), sorted(offsets)
    return batch, others


def _decode(buf: _Bytes, at: Ints) -> tuple[Mask, dict[str, Ints]]:
    """Every fixed field of the commits at `at`, and which of them follow the layout exactly.
    Each gather reads only where the checks before it proved there are bytes of that record."""
    length = buf.int_at(at + framing.LENGTH_AT, ">u4")
    flags = buf.u8[at + framing.FLAGS_AT]
    key_len = buf.int_at(at + framing.KEY_LEN_AT, ">u2")
    key = at + framing.HEADER_SIZE
    value = key + key_len
    value_len = at + 8 + length - value
    tombstone = (flags & framing.FLAG_TOMBSTONE) != 0
    ok = key_len >= _KEY_FIXED
    safe_key = np.where(ok, key, _NOWHERE)
    key_version = buf.int_at(safe_key, ">i2")
    group_len = buf.int_at(safe_key + 2, ">i2")
    ok &= (key_version >= 0) & (key_version <= 1) & (group_len >= 0) & (group_len <= key_len - _KEY_FIXED)
    topic_at = np.where(ok, key + 4 + group_len, _NOWHERE)
    topic_len = buf.int_at(topic_at, ">i2")
    ok &= (topic_len >= 0) & (_KEY_FIXED + group_len + topic_len == key_len)
    live = ok & ~tombstone
    ok &= tombstone | (value_len >= _VALUE_FIXED)
    safe_value = np.where(live & ok, value, _NOWHERE)
    metadata_len = buf.int_at(safe_value + 14, ">i2")
    ok &= tombstone | (
        (buf.int_at(safe_value, ">i2") == _VALUE_VERSION)
        & (metadata_len >= 0)
        & (_VALUE_FIXED + metadata_len == value_len)
    )
    live = ok & ~tombstone
    safe_value = np.where(live, value, _NOWHERE)
    safe_metadata_len = np.where(live, metadata_len, 0)
    fields = {
        "at": at,
        "lsn": buf.int_at(at + framing.LSN_AT, ">u8"),
        "timestamp_ms": buf.int_at(at + framing.TIMESTAMP_AT, ">i8"),
        "tombstone": tombstone,
        "key": key,
        "key_len": key_len,
        "group_len": group_len,
        "topic_at": topic_at,
        "topic_len": topic_len,
        "partition": buf.int_at(np.where(ok, topic_at + 2 + topic_len, _NOWHERE), ">i4"),
        "value": value,
        "value_len": np.where(tombstone, 0, value_len),
        "offset": buf.int_at(safe_value + 2, ">i8"),
        "leader_epoch": buf.int_at(safe_value + 10, ">i4"),
        "metadata_len": safe_metadata_len,
        "commit_timestamp": buf.int_at(safe_value + 16 + safe_metadata_len, ">i8"),
    }
    return ok, fields


def _batch(buf: _Bytes, f: dict[str, Ints]) -> pa.RecordBatch:
    rows = len(f["at"])
    tombstone = f["tombstone"]
    dead = pa.array(tombstone)

    def live_only(array: pa.Array) -> pa.Array:
        return pc.if_else(dead, pa.scalar(None, array.type), array) if tombstone.any() else array

    columns: dict[str, pa.Array] = {
        "lsn": pa.array(f["lsn"]),
        "timestamp_ms": pa.array(f["timestamp_ms"]),
        "record_type": pa.array(np.full(rows, OFFSET_COMMIT_TYPE, dtype=np.int32)),
        "group": buf.spans(f["key"] + 4, f["group_len"], pa.string()),
        "topic": buf.spans(f["topic_at"] + 2, f["topic_len"], pa.string()),
        "partition": pa.array(f["partition"].astype(np.int32)),
        "offset": live_only(pa.array(f["offset"])),
        "leader_epoch": live_only(pa.array(f["leader_epoch"].astype(np.int32))),
        "metadata": live_only(buf.spans(f["value"] + 16, f["metadata_len"], pa.string())),
        "commit_timestamp": live_only(pa.array(f["commit_timestamp"])),
        # v3 values carry no expire timestamp; the per-row path reports the schema's -1 as well
        "expire_timestamp": live_only(pa.array(np.full(rows, -1, dtype=np.int64))),
        "tombstone": dead,
        "key": buf.spans(f["key"], f["key_len"], pa.binary()),
        "value": live_only(buf.spans(f["value"], f["value_len"], pa.binary())),
    }
    arrays = [
        _cast(columns[field.name], field.type) if field.name in columns else pa.nulls(rows, field.type)
        for field in ARROW_SCHEMA
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _cast(array: pa.Array, type_: pa.DataType) -> pa.Array:
    return array if array.type == type_ else array.cast(type_)


def rows_batch(rows: Iterable[tuple[Any, ...]]) -> pa.RecordBatch:
    """Decoded rows (tuples in reader.COLUMNS order, ARROW_SCHEMA's) as one Arrow batch of ARROW_SCHEMA."""
    columns: list[list[Any]] = [[] for _ in ARROW_SCHEMA]
    for row in rows:
        for column, cell in zip(columns, row, strict=True):
            column.append(cell)
    arrays = [_array(column, field.type) for column, field in zip(columns, ARROW_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _array(column: list[Any], type_: pa.DataType) -> pa.Array:
    # Offset-commit rows leave half the columns empty: an all-null column costs nothing to build.
    if column.count(None) == len(column):
        return pa.nulls(len(column), type=type_)
    return pa.array(column, type=type_)
