"""Share groups' records as `__consumer_offsets` shows them: Kafka's keys 10-15 with value v0."""

from __future__ import annotations

import struct

from kcoord.coordinator.persistence import to_storage
from kcoord.coordinator.persistence.offsets_topic_records import OffsetsRecord, offsets_records
from tests.unit.share_groups.conftest import Node


def test_share_records_show_with_kafkas_key_types() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    node.hb("m1", -1)
    stored = [to_storage(r) for r in node.log.records]  # type: ignore[arg-type]
    shown = offsets_records(stored, 50, live=True)
    assert all(isinstance(r, OffsetsRecord) for r in shown)
    types = [struct.unpack_from(">h", r.key)[0] for r in shown if isinstance(r, OffsetsRecord)]
    # the join, the initialization, the leave
    assert types == [10, 11, 13, 12, 14, 15, 15, 11, 14, 13, 10, 11]
    values = [r.value for r in shown if isinstance(r, OffsetsRecord)]
    assert all(v is None or v[:2] == b"\x00\x00" for v in values)
