"""The `kcoord-topic` rows as Arrow batches, and the filter pushdown: what the data directory's reader
(topic_source.py) and the cluster's (cluster_source.py) share, below both of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from kcoord.pipeline import topic_reader

__all__ = ["ARROW_SCHEMA", "BATCH_ROWS", "HEADER", "SPARK_DDL", "FilteredTopicReader", "rows_batches"]

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),  # Spark's TIMESTAMP
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(pa.field("element", HEADER))),  # Spark names list items "element"
    ]
)
SPARK_DDL = (
    "topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
BATCH_ROWS = 50_000
_OPS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
    In: "in",
}


def rows_batches(topic: str, partition: int, rows: Iterable[topic_reader.Row]) -> Iterator[pa.RecordBatch]:
    """One partition's records as Arrow batches of BATCH_ROWS rows."""
    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    offsets, timestamps, keys, values, headers = columns

    def flush() -> pa.RecordBatch:
        n = len(offsets)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.repeat(topic, n).cast(pa.string()) if n else pa.array([], pa.string()),
                pa.array([partition] * n, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(timestamps, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(headers, ARROW_SCHEMA.field("headers").type),
            ],
            schema=ARROW_SCHEMA,
        )
        for column in columns:
            column.clear()
        return batch

    for row in rows:
        offsets.append(row.offset)
        timestamps.append(row.timestamp)
        keys.append(row.key)
        values.append(row.value)
        headers.append(row.headers)
        if len(offsets) >= BATCH_ROWS:
            yield flush()
    if offsets:
        yield flush()


class FilteredTopicReader(DataSourceReader):
    """A topic reader's filter pushdown (shared by the data directory and the cluster readers)."""

    def __init__(self) -> None:
        self.bounds = topic_reader.Bounds()

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        left = []
        for f in filters:
            op = _OPS.get(type(f))
            attribute: tuple[str, ...] = getattr(f, "attribute", ())
            narrowed = None
            if op is not None and len(attribute) == 1:
                narrowed = self.bounds.narrowed(op, attribute[0], getattr(f, "value", None))
            if narrowed is None:
                left.append(f)
            else:
                self.bounds = narrowed
        return left
