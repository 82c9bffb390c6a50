"""`__consumer_offsets` key/value formats (kafka-group-protocol.md section 8.2)."""

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages.records import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    VALUE_SCHEMAS,
    decode_key,
    decode_value,
    encode_versioned,
)
from kcoord.protocol.schema import Schema
from tests.protocol.test_messages_roundtrip import assert_round_trip, message_strategy

RECORD_SCHEMAS = [OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE, GROUP_METADATA_KEY, GROUP_METADATA_VALUE]
CASES = [pytest.param(s, v, id=f"{s.name}-v{v}") for s in RECORD_SCHEMAS for v in s.versions]


@pytest.mark.parametrize(("schema", "version"), CASES)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_record_round_trips(schema: Schema, version: int, data: st.DataObject) -> None:
    message: dict[str, Any] = data.draw(message_strategy(schema, version))
    assert_round_trip(schema, version, message)
    encoded = encode_versioned(schema, version, message)
    if schema in (OFFSET_COMMIT_KEY, GROUP_METADATA_KEY):
        assert decode_key(encoded) == (schema, message)
    else:
        assert decode_value(schema, encoded) == (version, message)


def test_offset_commit_key_v1_bytes_match_kafka() -> None:
    # GroupMetadataManager.offsetCommitKey: version 1, group, topic, partition.
    key = encode_versioned(OFFSET_COMMIT_KEY, 1, {"group": "g", "topic": "tö", "partition": 7})
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x03t\xc3\xb6" + b"\x00\x00\x00\x07"
    assert decode_key(key) == (OFFSET_COMMIT_KEY, {"group": "g", "topic": "tö", "partition": 7})
    assert VALUE_SCHEMAS[OFFSET_COMMIT_KEY.name] is OFFSET_COMMIT_VALUE


def test_offset_commit_value_v3_and_v1_layouts() -> None:
    value = {"offset": 42, "leader_epoch": 5, "metadata": "m", "commit_timestamp": 1000}
    assert encode_versioned(OFFSET_COMMIT_VALUE, 3, value) == (
        b"\x00\x03"
        + (42).to_bytes(8, "big")
        + (5).to_bytes(4, "big")
        + b"\x00\x01m"
        + (1000).to_bytes(8, "big")
    )
    v1 = {"offset": 42, "metadata": "", "commit_timestamp": 1000, "expire_timestamp": 2000}
    assert encode_versioned(OFFSET_COMMIT_VALUE, 1, v1) == (
        b"\x00\x01"
        + (42).to_bytes(8, "big")
        + b"\x00\x00"
        + (1000).to_bytes(8, "big")
        + (2000).to_bytes(8, "big")
    )
    with pytest.raises(ValueError):
        encode_versioned(OFFSET_COMMIT_VALUE, 3, v1)  # expire_timestamp exists in v1 only


def test_group_metadata_key_and_value_v3() -> None:
    key = encode_versioned(GROUP_METADATA_KEY, 2, {"group": "grüppe"})
    assert decode_key(key) == (GROUP_METADATA_KEY, {"group": "grüppe"})
    member = {
        "member_id": "m-1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/10.0.0.1",
        "rebalance_timeout": 300000,
        "session_timeout": 45000,
        "subscription": b"\x00\x00",
        "assignment": b"",
    }
    value = {
        "protocol_type": "consumer",
        "generation": 3,
        "protocol": "range",
        "leader": "m-1",
        "current_state_timestamp": 1700000000000,
        "members": [member],
    }
    assert decode_value(GROUP_METADATA_VALUE, encode_versioned(GROUP_METADATA_VALUE, 3, value)) == (3, value)


def test_unknown_key_versions_are_skipped_not_rejected() -> None:
    """Key versions 3+ are KIP-848 / share-group records a classic coordinator does not read."""
    assert decode_key(b"\x00\x05\x00\x01g") == (None, {})


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x01\x00\x05ab"])
def test_malformed_keys_raise_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_key(data)


def test_unknown_value_version_raises_decode_error() -> None:
    with pytest.raises(DecodeError):
        decode_value(OFFSET_COMMIT_VALUE, b"\x00\x09")
