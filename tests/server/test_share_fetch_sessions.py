"""The edge's pure parts of ShareFetch: the share session cache (ShareSessionCache, newContext,
acknowledgeSessionUpdate), what read_committed skips in the batches of a read, and the ShareFetch /
ShareAcknowledge codec against Kafka 4.3.1's own generated message classes."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.broker.share.batches import parse_batches
from kcoord.broker.share.sessions import ShareContext, ShareSessionCache, next_epoch
from kcoord.coordinator.share_partitions import AcquiredRange
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.messages.share_acknowledge import SHARE_ACKNOWLEDGE_REQUEST, SHARE_ACKNOWLEDGE_RESPONSE
from kcoord.protocol.messages.share_fetch import SHARE_FETCH_REQUEST, SHARE_FETCH_RESPONSE
from kcoord.protocol.record_batch import end_txn_marker_batch
from tests import jvm

T1, T2 = uuid.uuid4(), uuid.uuid4()


def test_the_cache_is_bounded_and_a_reopened_session_does_not_count_twice() -> None:
    """ShareSessionCache.maybeCreateSession: SHARE_SESSION_LIMIT_REACHED past max.share.sessions."""
    cache = ShareSessionCache(max_sessions=2)
    assert isinstance(cache.new_context("g", "a", 0, [(T1, 0)], [], False), ShareContext)
    assert isinstance(cache.new_context("g", "b", 0, [(T1, 0)], [], False), ShareContext)
    assert cache.new_context("g", "c", 0, [(T1, 0)], [], False) == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert isinstance(cache.new_context("g", "a", 0, [(T1, 0)], [], False), ShareContext)  # replaces a's
    cache.remove("g", "b")
    assert isinstance(cache.new_context("g", "c", 0, [(T1, 0)], [], False), ShareContext)
    cache.remove_group("g")
    assert len(cache) == 0


def test_partitions_are_added_and_forgotten_and_epochs_follow() -> None:
    cache = ShareSessionCache()
    opened = cache.new_context("g", "m", 0, [(T1, 0), (T1, 1)], [], False)
    assert isinstance(opened, ShareContext) and opened.full and opened.session.epoch == 1
    later = cache.new_context("g", "m", 1, [(T2, 0)], [(T1, 0)], True)
    assert isinstance(later, ShareContext) and not later.full
    assert list(later.session.partitions) == [(T1, 1), (T2, 0)] and later.session.epoch == 2
    assert cache.acknowledge_update("g", "m", 2) is later.session and later.session.epoch == 3
    assert cache.acknowledge_update("g", "m", 2) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    final = cache.new_context("g", "m", -1, [], [], True)
    assert isinstance(final, ShareContext) and final.final
    assert next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1  # ShareRequestMetadata.nextEpoch


def _batch(base: int, count: int, producer_id: int = -1, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, producer_id, 0 if producer_id >= 0 else -1,
                                        0 if producer_id >= 0 else -1, batch_size=1 << 30)  # fmt: skip
    for i in range(count):
        builder.append(i, 1_700_000_000_000 + i, None, b"v", [])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")  # the base offset as the log assigned it (outside the CRC)
    return bytes(data)


def test_read_committed_skips_aborted_batches_and_markers_only() -> None:
    """Producer 7 aborts (offsets 0-1, marker 4), producer 8 commits (2-3, marker 5) around them."""
    records = b"".join([
        _batch(0, 2, producer_id=7, transactional=True),
        _batch(2, 2, producer_id=8, transactional=True),
        _marker(4, producer_id=7, commit=False),
        _marker(5, producer_id=8, commit=True),
        _batch(6, 1),
    ])  # fmt: skip
    batches = parse_batches(records)
    assert batches.ranges == [(0, 1), (2, 3), (4, 4), (5, 5), (6, 6)]
    skip = batches.skip([(7, 0)])
    assert [offset for offset in range(7) if skip(offset)] == [0, 1, 4, 5]
    # the bytes sent back: from the batch of the first acquired offset to that of the last
    sliced = batches.slice([AcquiredRange(2, 3, 1), AcquiredRange(6, 6, 1)])
    assert parse_batches(sliced).ranges == [(2, 3), (4, 4), (5, 5), (6, 6)]
    assert batches.slice([]) == b""


def _marker(offset: int, producer_id: int, commit: bool) -> bytes:
    data = bytearray(end_txn_marker_batch(producer_id, 0, commit, 0, 1_700_000_000_000))
    data[0:8] = offset.to_bytes(8, "big")
    return bytes(data)


# -- the codec against Kafka 4.3's own generated classes (v2 is exercised by no Python client) ---------

REPO = Path(__file__).resolve().parents[2]
TOPIC_ID = uuid.UUID("01020304-0506-0708-1112-131415161718")
_BATCH = {"first_offset": 3, "last_offset": 5, "acknowledge_types": [1, 2, 4]}
_LEADER = {"leader_id": 0, "leader_epoch": 3}


def _partition(batches: list[dict[str, Any]]) -> dict[str, Any]:
    return {"partition_index": 2, "acknowledgement_batches": batches}


def _fetch_request(version: int) -> dict[str, Any]:
    return {
        "group_id": "g", "member_id": "m-1", "share_session_epoch": 4, "max_wait_ms": 500, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": 300, "batch_size": 100,
        "share_acquire_mode": 1 if version == 2 else 0, "is_renew_ack": version == 2,
        "topics": [{"topic_id": TOPIC_ID, "partitions": [_partition([_BATCH])]}],
        "forgotten_topics_data": [{"topic_id": TOPIC_ID, "partitions": [7, 8]}],
    }  # fmt: skip


def _fetch_response(version: int) -> dict[str, Any]:
    partition = {
        "partition_index": 2, "error_code": 0, "error_message": None, "acknowledge_error_code": 121,
        "acknowledge_error_message": None, "current_leader": _LEADER, "records": b"",
        "acquired_records": [{"first_offset": 10, "last_offset": 19, "delivery_count": 2}],
    }  # fmt: skip
    return {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
        "responses": [{"topic_id": TOPIC_ID, "partitions": [partition]}], "node_endpoints": [],
    }  # fmt: skip


def _ack_request(version: int) -> dict[str, Any]:
    batch = {"first_offset": 3, "last_offset": 3, "acknowledge_types": [3]}
    return {
        "group_id": "g", "member_id": "m-1", "share_session_epoch": 5, "is_renew_ack": version == 2,
        "topics": [{"topic_id": TOPIC_ID, "partitions": [_partition([batch])]}],
    }  # fmt: skip


def _ack_response(version: int) -> dict[str, Any]:
    partition = {"partition_index": 2, "error_code": 121, "error_message": None,
                 "current_leader": {"leader_id": 0, "leader_epoch": 0}}  # fmt: skip
    return {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "acquisition_lock_timeout_ms": 15000 if version == 2 else 0,
        "responses": [{"topic_id": TOPIC_ID, "partitions": [partition]}], "node_endpoints": [],
    }  # fmt: skip


_CASES = {
    "fetch-request": (SHARE_FETCH_REQUEST, _fetch_request),
    "fetch-response": (SHARE_FETCH_RESPONSE, _fetch_response),
    "ack-request": (SHARE_ACKNOWLEDGE_REQUEST, _ack_request),
    "ack-response": (SHARE_ACKNOWLEDGE_RESPONSE, _ack_response),
}


@pytest.fixture(scope="module")
def kafka_bodies() -> dict[str, str]:
    """The bodies Kafka 4.3.1's classes write (tests/server/clients/ShareWireCheck.java)."""
    m2 = Path.home() / ".m2" / "repository"
    jars = sorted((m2 / "org/apache/kafka/kafka-clients").glob("4.3.*/kafka-clients-4.3.*.jar"))
    slf4j = sorted((m2 / "org/slf4j/slf4j-api").glob("*/slf4j-api-*.jar"))
    if shutil.which("java") is None or not jars or not slf4j:
        pytest.skip("needs a JDK and kafka-clients 4.3 in ~/.m2 (the Kafka oracle helper's cache)")
    classpath = f"{jars[-1]}:{slf4j[-1]}"
    classes = jvm.compiled(REPO / "tests" / "server" / "clients" / "ShareWireCheck.java", classpath)
    out = subprocess.run(
        ["java", *jvm.SHORT_FLAGS, "-cp", f"{classes}:{classpath}", "ShareWireCheck"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    bodies: dict[str, str] = json.loads(out.stdout.strip().splitlines()[-1])
    return bodies


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", sorted(_CASES))
def test_bodies_match_kafkas_own_classes(kafka_bodies: dict[str, str], name: str, version: int) -> None:
    schema, message = _CASES[name]
    codec = codec_for(schema, version)
    expected = bytes.fromhex(kafka_bodies[f"{name}-v{version}"])
    assert codec.build(message(version)) == expected
    decoded = codec.parse(expected)
    assert {k: decoded[k] for k in message(version)} == message(version)
