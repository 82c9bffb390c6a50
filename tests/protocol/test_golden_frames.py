"""Request frames captured from real librdkafka (confluent-kafka), aiokafka and kafka-python clients
(`tests/protocol/golden/capture.py`: consumer groups of both protocols, producers and consumers, admin
calls) decode to the expected message and re-encode byte for byte; bytes a client leaves after a whole
body are ignored, as Kafka ignores them.

kafka-python has no classes for the consumer protocol's APIs (68, 69), so their requests are checked
here field by field against what librdkafka sends (test_kafka_python_crosscheck.NOT_IN_KAFKA_PYTHON).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.frames import decode_request, encode_request
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT as UNCHANGED
from kcoord.protocol.types import ZERO_UUID

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.bin"))
GROUP_APIS = {8, 9, 11, 12, 13, 14, 68, 69}


def _group_ids(body: dict[str, Any]) -> list[str]:
    """OffsetFetch v8+ batches groups (KIP-709) and ConsumerGroupDescribe lists them; every other
    group API names one group."""
    if body.get("groups"):
        return [g["group_id"] for g in body["groups"]]
    if "group_ids" in body:
        return list(body["group_ids"])
    return [body["group_id"]]


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_frame_decodes_and_reencodes_identically(path: Path) -> None:
    frame = path.read_bytes()
    header, body = decode_request(frame)
    prefix, api_key, version = path.stem.rsplit("-", 2)
    client = next(name for name in GROUP_IDS if prefix.startswith(f"{name}-") or prefix == name)
    assert (header.request_api_key, header.request_api_version) == (int(api_key), int(version[1:]))
    assert header.client_id == "golden"
    if header.request_api_key in GROUP_APIS:
        assert _group_ids(body) == [GROUP_IDS[client]]
    again = encode_request(
        header.request_api_key, header.request_api_version, header.correlation_id, body, header.client_id
    )[4:]
    trailing = frame[len(again) :]
    assert frame[: len(again)] == again
    assert trailing == TRAILING.get(path.stem, b"")


GROUP_IDS = {"librdkafka": "golden-ck", "aiokafka": "golden-aio", "kafka-python": "golden-kpy"}
# librdkafka's Metadata v12 for all topics writes a compact null array (one byte) into the 4 bytes it
# reserved for an array length, so Kafka's parser (and ours) reads the placeholder's zeros as the
# following booleans and tag count, and the last 3 bytes (auto-create true, false, no tags) are left.
TRAILING = {"librdkafka-admin-trailing-3-v12": b"\x01\x00\x00"}


def test_admin_and_data_frames_cover_what_clients_send_at_startup() -> None:
    names = {p.stem for p in GOLDEN}
    for api in ("3-v12", "trailing-3-v12", "19-v4", "32-v1", "44-v1", "21-v2"):
        assert f"librdkafka-admin-{api}" in names
    for api in ("0-v10", "1-v12", "2-v7", "22-v4"):
        assert f"librdkafka-data-{api}" in names
    assert {"aiokafka-data-0-v7", "kafka-python-data-0-v9", "kafka-python-admin-60-v1"} <= names


def test_golden_frames_cover_both_clients_group_apis() -> None:
    names = {p.stem for p in GOLDEN}
    for client in ("librdkafka", "aiokafka"):
        for api in ("11-v5", "14-v3", "13-v1"):
            assert f"{client}-{api}" in names
    for stage in ("join", "owned", "steady", "leave"):
        assert f"librdkafka-consumer-{stage}-68-v1" in names
    assert {"librdkafka-consumer-69-v0", "librdkafka-consumer-8-v9"} <= names


# -- the consumer protocol (KIP-848): librdkafka 2.16 with group.protocol=consumer -----------------

CONSUMER = "librdkafka-consumer"
# What the capture run's consumer was given by kcoord and librdkafka: its own member id (KIP-1082:
# 16 random bytes in base64, from v1 the client names itself) and the id of golden-topic.
MEMBER_ID = "oRZ8+FBERsGeBFcmRyjw2Q"
TOPIC_ID = uuid.UUID("032756b1-317e-4c9b-bbbe-20c5d2d5ce39")
HEARTBEATS = {
    # The first: epoch 0, max.poll.interval.ms as the rebalance timeout, the topic by name, an empty
    # (not null) regex, no server assignor (the coordinator's default) and nothing owned.
    "join": {
        **UNCHANGED,
        "member_epoch": 0,
        "rebalance_timeout_ms": 300_000,
        "subscribed_topic_names": ["golden-topic"],
        "subscribed_topic_regex": "",
        "topic_partitions": [],
    },
    # Right after the assignment (epoch 1, the topic's 3 partitions): what it now owns, by topic id.
    "owned": {
        **UNCHANGED,
        "member_epoch": 1,
        "topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 1, 2]}],
    },
    # A heartbeat interval later: nothing changed, so every optional field is null.
    "steady": {**UNCHANGED, "member_epoch": 1},
    # consumer.close(): epoch -1, and again nothing else.
    "leave": {**UNCHANGED, "member_epoch": -1},
}


def _decode(stem: str) -> tuple[Any, dict[str, Any]]:
    return decode_request((Path(__file__).parent / "golden" / f"{stem}.bin").read_bytes())


@pytest.mark.parametrize("stage", HEARTBEATS)
def test_librdkafka_consumer_group_heartbeat_v1_decodes_to_what_it_sent(stage: str) -> None:
    header, body = _decode(f"{CONSUMER}-{stage}-68-v1")
    assert (header.request_api_key, header.request_api_version, header.client_id) == (68, 1, "golden")
    assert body == {"group_id": "golden-ck", "member_id": MEMBER_ID, **HEARTBEATS[stage]}


def test_librdkafka_heartbeats_are_sent_in_the_order_of_their_stages() -> None:
    order = [_decode(f"{CONSUMER}-{stage}-68-v1")[0].correlation_id for stage in HEARTBEATS]
    assert order == sorted(order) and len(set(order)) == len(order)


def test_librdkafka_admin_consumer_group_describe_is_v0() -> None:
    # AdminClient.describe_consumer_groups of a consumer-protocol group: librdkafka 2.16 sends
    # ConsumerGroupDescribe at v0 although kcoord offers v0-1 (v1 only adds the members' type).
    header, body = _decode(f"{CONSUMER}-69-v0")
    assert (header.request_api_key, header.request_api_version, header.client_id) == (69, 0, "golden")
    assert body == {"group_ids": ["golden-ck"], "include_authorized_operations": False}


def test_librdkafka_offsets_of_a_consumer_protocol_member_carry_its_epoch() -> None:
    _, commit = _decode(f"{CONSUMER}-8-v9")
    assert (commit["member_id"], commit["generation_id_or_member_epoch"]) == (MEMBER_ID, 1)
    partition = commit["topics"][0]["partitions"][0]
    assert (commit["topics"][0]["name"], partition["partition_index"], partition["committed_offset"]) == (
        "golden-topic",
        0,
        5,
    )
    # The committed offsets it fetches on assignment name no member (null id, epoch -1).
    _, fetch = _decode(f"{CONSUMER}-9-v9")
    assert fetch["groups"] == [
        {
            "group_id": "golden-ck",
            "member_id": None,
            "member_epoch": -1,
            "topics": [{"name": "golden-topic", "topic_id": ZERO_UUID, "partition_indexes": [0, 1, 2]}],
        },
    ]  # fmt: skip  (v9 names topics; the id, v10's, holds its default)
    assert fetch["require_stable"] is True
    # Fetch v16 names the topic by the id the heartbeat owned it by, not by name.
    _, fetched = _decode(f"{CONSUMER}-1-v16")
    assert [(t["topic"], t["topic_id"]) for t in fetched["topics"]] == [("", TOPIC_ID)]
