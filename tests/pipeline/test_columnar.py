"""The column-wise offset-commit reader gives exactly the rows the per-row schema path gives.

Segments are framed by storage.framing from the server's own record encoding
(coordinator.persistence.to_storage); no Spark is needed.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.coordinator.groups.records import OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.metadata import TopicRecord
from kcoord.coordinator.persistence import to_storage
from kcoord.pipeline import columnar, reader, source
from kcoord.storage import framing
from kcoord.storage.files import encode_segment_header

names = st.text(min_size=0, max_size=12)
ints32 = st.integers(-(2**31), 2**31 - 1)
ints64 = st.integers(-(2**63), 2**63 - 1)
commits = st.builds(
    OffsetCommitRecord,
    names,
    names,
    ints32,
    ints64,
    ints32,
    st.text(max_size=20),
    ints64,
    st.just(-1) | ints64,  # an expire timestamp is stored as value v1: the per-row path's
)
records = st.lists(
    commits
    | st.builds(OffsetTombstone, names, names, ints32)
    | st.builds(TopicRecord, st.text(min_size=1, max_size=8), st.builds(uuid.uuid4), st.integers(1, 9)),
    max_size=40,
)


def _segment(tmp: Path, items: list[object], as_batch: bool = False) -> reader.Part:
    frames = []
    for lsn, item in enumerate(items):
        stored = to_storage(item)  # type: ignore[arg-type]
        flags = framing.FLAG_BATCH_START if as_batch and lsn == 0 else 0
        frames.append(
            framing.encode(stored.type, flags, lsn, 1_700_000_000_000 + lsn, stored.key, stored.value)
        )
    if as_batch:
        frames.append(framing.encode(framing.TYPE_BATCH_END, 0, len(items), 0, b"", b""))
    path = tmp / "00000000000000000000.log"
    path.write_bytes(encode_segment_header(0) + b"".join(frames))
    return reader.Part(str(path), path.stat().st_size, "segment", True, 0)


def _both(part: reader.Part) -> tuple[pa.Table, pa.Table]:
    columnwise = pa.Table.from_batches(list(source.part_batches(part)), schema=source.ARROW_SCHEMA)
    per_row = pa.Table.from_batches(
        list(source.to_batches(reader.raw_records(part))), schema=source.ARROW_SCHEMA
    )
    return columnwise.sort_by("lsn"), per_row


@settings(max_examples=150, deadline=None)
@given(items=records, as_batch=st.booleans())
def test_columnwise_rows_equal_the_per_row_schema_path(
    tmp_path_factory: object, items: list[object], as_batch: bool
) -> None:
    tmp = tmp_path_factory.mktemp("seg")  # type: ignore[attr-defined]
    columnwise, per_row = _both(_segment(tmp, items, as_batch))
    assert columnwise.num_rows == len(items)
    for name in source.ARROW_SCHEMA.names:
        assert columnwise.column(name).to_pylist() == per_row.column(name).to_pylist(), name


def test_commits_are_decoded_columnwise_and_other_records_are_handed_back(tmp_path: Path) -> None:
    items = [
        OffsetCommitRecord("g-é", "orders", 3, 42, 7, "meta", 1_700_000_000_123),
        TopicRecord("orders", uuid.uuid4(), 4),
        OffsetTombstone("g", "orders", 9),
        OffsetCommitRecord("g", "orders", 1, 5, -1, "", 5, expire_timestamp_ms=99),  # value v1
    ]
    data, offsets = reader.committed(_segment(tmp_path, items))
    batch, others = columnar.offset_commits(data, offsets)
    assert batch.column("group").to_pylist() == ["g-é", "g"]
    assert batch.column("offset").to_pylist() == [42, None]
    assert batch.column("expire_timestamp").to_pylist() == [-1, None]
    assert others == [offsets[1], offsets[3]]


def test_a_group_that_is_not_utf8_leaves_the_chunk_to_the_per_row_path(tmp_path: Path) -> None:
    good = to_storage(OffsetCommitRecord("g", "t", 0, 1, -1, "", 5))
    bad_key = struct.pack(">hh", 1, 1) + b"\xff" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 0)
    frames = [
        framing.encode(0, 0, 0, 1, good.key, good.value),
        framing.encode(0, 0, 1, 1, bad_key, good.value),
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(encode_segment_header(0) + b"".join(frames))
    data, offsets = reader.committed(reader.Part(str(path), path.stat().st_size, "segment", True, 0))
    batch, others = columnar.offset_commits(data, offsets)
    assert batch.num_rows == 0 and others == offsets
