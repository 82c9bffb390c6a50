"""The columnar row path of the `kcoord` source agrees with the schema-decoded rows (no Spark needed)."""

from __future__ import annotations

from kcoord.coordinator.groups.records import OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.persistence import to_storage
from kcoord.pipeline import reader, source


def _raw(record: OffsetCommitRecord | OffsetTombstone, lsn: int) -> reader.Raw:
    stored = to_storage(record)
    return reader.Raw(lsn, 1_700_000_000_000 + lsn, stored.type, stored.key, stored.value)


def test_columns_follow_the_arrow_schema() -> None:
    assert tuple(source.ARROW_SCHEMA.names) == reader.COLUMNS


def test_struct_decoded_offset_commits_equal_the_schema_decoded_rows() -> None:
    raws = [
        _raw(OffsetCommitRecord("g-é", "orders", 3, 42, 7, "meta", 1_700_000_000_123), 1),
        _raw(OffsetCommitRecord("g", "t", 0, 0, -1, "", 5), 2),
        _raw(OffsetTombstone("g", "t", 9), 3),
    ]
    for raw in raws:
        row = reader.decode_row(raw)
        assert reader.decode_row_tuple(raw) == tuple(row.get(name) for name in reader.COLUMNS)
    [batch] = list(source.to_batches(raws))
    assert batch.num_rows == 3
    assert batch.column("offset").to_pylist() == [42, 0, None]
    assert batch.column("group").to_pylist() == ["g-é", "g", "g"]
