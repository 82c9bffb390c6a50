"""The share records in the coordinator log: Kafka 4.3's `__share_group_state` layouts, under storage
types 0x50 / 0x51, through the one record codec (kcoord/coordinator/persistence/codec.py)."""

from __future__ import annotations

import struct
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from kcoord.coordinator.persistence.codec import from_storage, render, to_storage
from kcoord.coordinator.share_partitions import (
    RecordState,
    ShareSnapshot,
    ShareTombstone,
    ShareUpdate,
    StateBatch,
)
from kcoord.protocol.messages.records import RECORD_TYPES

batches = st.lists(
    st.builds(
        StateBatch,
        st.integers(0, 2**40),
        st.integers(0, 2**40),
        st.sampled_from([RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED]),
        st.integers(0, 2**15 - 1),
    ),
    max_size=4,
).map(tuple)
keys = st.tuples(st.text(max_size=20), st.uuids(), st.integers(0, 2**31 - 1))
i32 = st.integers(-(2**31), 2**31 - 1)
snapshots = st.builds(
    lambda k, *v: ShareSnapshot(*k, *v), keys, i32, i32, i32, st.integers(-1, 2**62), batches,
    st.integers(-1, 2**62), st.integers(-1, 2**62), i32,
)  # fmt: skip
updates = st.builds(lambda k, *v: ShareUpdate(*k, *v), keys, i32, i32, st.integers(-1, 2**62), batches, i32)
tombstones = st.builds(lambda k, u: ShareTombstone(*k, update=u), keys, st.booleans())


@given(st.one_of(snapshots, updates, tombstones))
def test_every_share_record_round_trips_through_the_log_codec(record: object) -> None:
    stored = to_storage(record)  # type: ignore[arg-type]
    assert stored.type in RECORD_TYPES
    assert from_storage(stored) == record
    assert render(stored).startswith(("share_snapshot", "share_update"))


def test_keys_carry_kafkas_record_type_as_their_version() -> None:
    topic = UUID(int=1)
    snapshot = to_storage(ShareSnapshot("g", topic, 3, 0, 0, 0, 5, ()))
    update = to_storage(ShareUpdate("g", topic, 3, 0, 0, 5, ()))
    assert (snapshot.type, update.type) == (0x50, 0x51)
    assert struct.unpack_from(">h", snapshot.key) == (0,) and struct.unpack_from(">h", update.key) == (1,)
    # ShareSnapshotKey: group (int16 length + utf-8), topic id (16 bytes), partition (int32)
    assert snapshot.key == b"\x00\x00" + b"\x00\x01g" + topic.bytes + b"\x00\x00\x00\x03"
    assert update.key[2:] == snapshot.key[2:]


def test_a_delete_tombstones_both_keys() -> None:
    topic = UUID(int=1)
    a, b = to_storage(ShareTombstone("g", topic, 0)), to_storage(ShareTombstone("g", topic, 0, update=True))
    assert (a.value, b.value) == (None, None)
    assert {a.type, b.type} == {0x50, 0x51}
