"""ConsumerProtocol subscription/assignment bytes, as real clients write them (kafka-group-protocol.md
section 7). confluent-kafka's encoder lives inside librdkafka and cannot be called offline; its bytes
join as golden frames once the server can capture them."""

from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment as AioAssignment
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata as AioSubscription
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kcoord.protocol.consumer_protocol import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kcoord.protocol.errors import DecodeError
from tests.protocol.test_messages_roundtrip import assert_round_trip, message_strategy, present

VERSIONS = range(4)
CHECK = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _present(schema: Any, version: int, message: dict[str, Any]) -> dict[str, Any]:
    return {f.name: message[f.name] for f in schema.fields if present(f, version)}


def _kp_subscription(version: int, m: dict[str, Any]) -> KpSubscription:
    owned = [
        KpSubscription.TopicPartition(topic=p["topic"], partitions=p["partitions"])
        for p in m["owned_partitions"]
    ]
    fields = {
        "topics": m["topics"],
        "user_data": m["user_data"],
        "owned_partitions": owned,
        "generation_id": m["generation_id"],
        "rack_id": m["rack_id"],
    }
    kept = {f.name for f in CONSUMER_PROTOCOL_SUBSCRIPTION.fields if present(f, version)}
    return KpSubscription(version=version, **{k: v for k, v in fields.items() if k in kept})


def _kp_assignment(version: int, m: dict[str, Any]) -> KpAssignment:
    assigned = [
        KpAssignment.TopicPartition(topic=p["topic"], partitions=p["partitions"])
        for p in m["assigned_partitions"]
    ]
    return KpAssignment(version=version, assigned_partitions=assigned, user_data=m["user_data"])


@pytest.mark.parametrize("version", VERSIONS)
@CHECK
@given(data=st.data())
def test_subscription_round_trips(version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(CONSUMER_PROTOCOL_SUBSCRIPTION, version))
    assert_round_trip(CONSUMER_PROTOCOL_SUBSCRIPTION, version, message)
    assert decode_subscription(encode_subscription(message, version)) == (version, message)


@pytest.mark.parametrize("version", VERSIONS)
@CHECK
@given(data=st.data())
def test_assignment_round_trips(version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(CONSUMER_PROTOCOL_ASSIGNMENT, version))
    assert_round_trip(CONSUMER_PROTOCOL_ASSIGNMENT, version, message)
    assert decode_assignment(encode_assignment(message, version)) == (version, message)


@pytest.mark.parametrize("version", VERSIONS)
@CHECK
@given(data=st.data())
def test_kafka_python_subscription_bytes_decode_and_ours_decode_there(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(message_strategy(CONSUMER_PROTOCOL_SUBSCRIPTION, version))
    theirs = bytes(_kp_subscription(version, message).encode())
    got_version, decoded = decode_subscription(theirs)
    assert got_version == version
    assert _present(CONSUMER_PROTOCOL_SUBSCRIPTION, version, decoded) == _present(
        CONSUMER_PROTOCOL_SUBSCRIPTION, version, message
    )
    assert encode_subscription(message, version) == theirs
    back = KpSubscription.decode(encode_subscription(message, version))
    assert back.version == version and back.topics == message["topics"]


@pytest.mark.parametrize("version", VERSIONS)
@CHECK
@given(data=st.data())
def test_kafka_python_assignment_bytes_decode_and_ours_decode_there(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(message_strategy(CONSUMER_PROTOCOL_ASSIGNMENT, version))
    theirs = bytes(_kp_assignment(version, message).encode())
    assert decode_assignment(theirs) == (version, message)
    assert encode_assignment(message, version) == theirs
    back = KpAssignment.decode(encode_assignment(message, version))
    assert [(p.topic, p.partitions) for p in back.assigned_partitions] == [
        (p["topic"], p["partitions"]) for p in message["assigned_partitions"]
    ]


@pytest.mark.parametrize(
    "assignor",
    [
        RangePartitionAssignor,
        RoundRobinPartitionAssignor,
        StickyPartitionAssignor(),
        CooperativeStickyAssignor(),
    ],
    ids=["range", "roundrobin", "sticky", "cooperative-sticky"],
)
def test_kafka_python_assignor_metadata_decodes(assignor: Any) -> None:
    """What kafka-python really puts into JoinGroup protocols[].metadata, per assignor."""
    sent = bytes(assignor.metadata({"orders", "zahlungen-ü"}).encode())
    version, subscription = decode_subscription(sent)
    assert sorted(subscription["topics"]) == ["orders", "zahlungen-ü"]
    assert encode_subscription(subscription, version) == sent


def test_aiokafka_v0_subscription_and_assignment_decode() -> None:
    sent = AioSubscription(0, ["orders", "платежи"], b"\x00user").encode()
    assert decode_subscription(sent) == (
        0,
        {
            "topics": ["orders", "платежи"],
            "user_data": b"\x00user",
            "owned_partitions": [],
            "generation_id": -1,
            "rack_id": None,
        },
    )
    sent = AioAssignment(0, [("orders", [0, 2]), ("платежи", [1])], b"").encode()
    assert decode_assignment(sent) == (
        0,
        {
            "assigned_partitions": [
                {"topic": "orders", "partitions": [0, 2]},
                {"topic": "платежи", "partitions": [1]},
            ],
            "user_data": b"",
        },
    )


def test_newer_versions_are_read_as_their_v3_prefix() -> None:
    """Fields are only appended, so v4+ bytes start with a v3 body
    (Kafka ConsumerProtocol.checkSubscriptionVersion)."""
    v3 = {
        "topics": ["t"],
        "user_data": None,
        "owned_partitions": [{"topic": "t", "partitions": [3]}],
        "generation_id": 7,
        "rack_id": "eu-1",
    }
    future = b"\x00\x09" + encode_subscription(v3, 3)[2:] + b"\x00\x00\x00\x2a future field"
    assert decode_subscription(future) == (9, v3)
    assignment = {"assigned_partitions": [{"topic": "t", "partitions": [1]}], "user_data": b"u"}
    future = b"\x00\x04" + encode_assignment(assignment, 3)[2:] + b"\x01"
    assert decode_assignment(future) == (4, assignment)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x05a"])
def test_malformed_consumer_protocol_bytes_raise_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_subscription(data)
    with pytest.raises(DecodeError):
        decode_assignment(data)
