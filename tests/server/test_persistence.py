"""Domain records <-> storage records: struct fast path == protocol schemas, round trips, replay, dump."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kcoord import storage
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    GroupTombstone,
    MemberRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.metadata import TopicRecord, TopicTombstone
from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kcoord.coordinator.metadata.acl_store import AclRecord, AclTombstone
from kcoord.coordinator.metadata.producer_ids import ProducerIdBlock
from kcoord.coordinator.persistence import from_storage, render, to_storage
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import (
    RECORD_TYPES,
    decode_exact,
    decode_key,
    decode_value,
    encode_versioned,
)

names = st.text(min_size=0, max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@given(names, names, int32, int64, int32, names, int64)
def test_offset_commit_fast_codec_matches_the_schemas(
    group: str, topic: str, partition: int, offset: int, epoch: int, metadata: str, ts: int
) -> None:
    record = OffsetCommitRecord(group, topic, partition, offset, epoch, metadata, ts)
    stored = to_storage(record)
    key = {"group": group, "topic": topic, "partition": partition}
    value = {"offset": offset, "leader_epoch": epoch, "metadata": metadata, "commit_timestamp": ts}
    assert stored.type == 0
    assert stored.key == encode_versioned(schemas.OFFSET_COMMIT_KEY, 1, key)
    assert stored.value == encode_versioned(schemas.OFFSET_COMMIT_VALUE, 3, value)
    assert decode_key(stored.key)[1] == key
    assert decode_value(schemas.OFFSET_COMMIT_VALUE, stored.value)[1]["offset"] == offset
    assert from_storage(stored) == record


def test_every_domain_record_round_trips() -> None:
    member = MemberRecord("m-1", "static-1", "client", "/127.0.0.1", 60_000, 10_000, b"sub", b"assign")
    records = [
        OffsetCommitRecord("g", "t", 3, 42, -1, "", 1_700_000_000_000),
        OffsetCommitRecord("g", "t", 4, 7, 2, "meta", 1_700_000_000_000),
        # value v1 (explicit retention) has no leader epoch, as in Kafka
        OffsetCommitRecord("g", "t", 5, 7, -1, "m", 1_700_000_000_000, expire_timestamp_ms=1_800_000_000_000),
        OffsetTombstone("g", "t", 3),
        GroupMetadataRecord("g", "consumer", 3, "range", "m-1", 1_700_000_000_000, (member,)),
        GroupMetadataRecord("empty", "", 0, None, None, -1),
        GroupTombstone("g"),
        TopicRecord("t", uuid.uuid4(), 6),
        TopicRecord("c", uuid.uuid4(), 2, (("retention.ms", "1000"),)),
        TopicTombstone("t"),
        ProducerIdBlock(3000),
        TxnOffsetCommitRecord(7, 2, "g", "t", 3, 42, 5, "meta", 1234),
        TxnOffsetCommitRecord(2**40, 0, "g", "t", 0, 0, -1, "", -1),
        TxnOffsetTombstone(7, "g", "t", 3),
        AclRecord(
            AclBinding(
                ResourceType.TOPIC,
                "orders-",
                PatternType.PREFIXED,
                "User:alice",
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            )
        ),
        AclTombstone(
            AclBinding(
                ResourceType.GROUP,
                "g",
                PatternType.LITERAL,
                "User:*",
                "10.0.0.1",
                AclOperation.ALL,
                AclPermissionType.DENY,
            )
        ),
    ]
    for record in records:
        stored = to_storage(record)
        assert from_storage(stored) == record
        assert render(stored)
        # the one table of record types describes every record written: its schemas decode the
        # key and value exactly, and the key is written at the table's version
        kind = RECORD_TYPES[stored.type]
        assert decode_exact(kind.key, stored.key) is not None
        assert int.from_bytes(stored.key[:2], "big") == kind.key_version
        if stored.value is not None:
            assert decode_exact(kind.value, stored.value) is not None


def test_the_table_of_record_types_keeps_the_bytes_already_on_disk() -> None:
    """Producer-id blocks were written by struct before they had schemas: same bytes."""
    stored = to_storage(ProducerIdBlock(1000))
    assert (stored.type, stored.key, stored.value) == (
        5,
        b"\x00\x00",
        b"\x00\x00" + (1000).to_bytes(8, "big"),
    )
    assert sorted(RECORD_TYPES) == [
        0,
        1,
        4,
        5,
        6,
        7,
        10,  # ACL bindings (issue 25)
        0x43,
        0x45,
        0x46,
        0x47,
        0x48,  # 0x40 + KIP-848 key types
        0x4A,
        0x4B,
        0x4C,
        0x4D,
        0x4E,
        0x4F,  # 0x40 + share groups' key types (KIP-932)
        0x50,  # 0x50 + the share coordinator's record types (issue 34)
        0x51,
    ]
    assert len({kind.name for kind in RECORD_TYPES.values()}) == len(RECORD_TYPES)


def test_explicit_retention_commits_are_written_as_value_v1_like_kafka() -> None:
    stored = to_storage(OffsetCommitRecord("g", "t", 0, 1, -1, "", 5, expire_timestamp_ms=9))
    assert stored.value is not None and stored.value[:2] == b"\x00\x01"


def test_offset_commit_value_v0_from_old_logs_is_read_through_the_schemas() -> None:
    key = encode_versioned(schemas.OFFSET_COMMIT_KEY, 0, {"group": "g", "topic": "t", "partition": 1})
    value = encode_versioned(
        schemas.OFFSET_COMMIT_VALUE, 0, {"offset": 5, "metadata": "m", "commit_timestamp": 3}
    )
    assert from_storage(storage.Record(0, key, value)) == OffsetCommitRecord("g", "t", 1, 5, -1, "m", 3)


def test_unknown_record_types_and_key_versions_are_skipped() -> None:
    # (types 9 and 10 are SCRAM credentials and ACLs since issue 25: an unused type stands for the unknown)
    assert from_storage(storage.Record(0x7E, b"\x00\x00", b"")) is None
    kip848_key = b"\x00\x03" + b"\x00\x01g"
    assert from_storage(storage.Record(1, kip848_key, b"\x00\x00")) is None
