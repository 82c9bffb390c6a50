"""`__consumer_offsets` as a topic (issue 33 item 5) against Apache Kafka 4.3: listed by Metadata (see
test_topics.py) and readable by Fetch, a committed offset is the record Kafka writes, in the partition
of Kafka's hash of the group: OffsetCommitKey v1 and OffsetCommitValue v4 (group-coordinator's
OffsetCommitValue.json in 4.3.1: "validVersions": "0-4", flexible from 4, the topic id in tagged field
0), where the research notes (fidelity-notes) said value v3."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest
from kafka.record import MemoryRecords

from kcoord.coordinator.runtime.shards import shard_of
from tests.oracle.diff import Pair, Side, assert_same
from tests.oracle.scenario import create_on_both, topic, unique
from tests.oracle.test_classic_groups import COMMIT_V, commit
from tests.oracle.test_data_plane import FETCH_V, fetch

pytestmark = pytest.mark.xdist_group("kafka_oracle")

OFFSETS_TOPIC, OFFSETS_PARTITIONS = "__consumer_offsets", 50


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def offset_commit_key(group: str, name: str, partition: int) -> bytes:
    """OffsetCommitKey v1 (group-coordinator's OffsetCommitKey.json, the version Kafka 4 writes)."""
    return struct.pack(">h", 1) + _string(group) + _string(name) + struct.pack(">i", partition)


def records_of(side: Side, partition: int, key: bytes) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record with `key` in `__consumer_offsets`-`partition`, or the Fetch error."""
    answer = side.call(1, FETCH_V, fetch(OFFSETS_TOPIC, partition, 0))
    (part,) = answer["responses"][0]["partitions"]
    if part["error_code"] != 0:
        return [(b"error", str(part["error_code"]).encode())]
    found = []
    records = MemoryRecords(part["records"] or b"")
    while (batch := records.next_batch()) is not None:
        found += [(bytes(r.key), r.value and bytes(r.value)) for r in batch if r.key == key]
    return found


def offset_commit_value(value: bytes | None) -> Any:
    """OffsetCommitValue v3 or v4 (Kafka 4.3 writes v4: flexible, the topic id as tagged field 0) as
    fields, the broker's own commit timestamp and topic id left out; other versions as they are."""
    if value is None or value[:2] not in (b"\x00\x03", b"\x00\x04"):
        return value
    version, offset, leader_epoch = struct.unpack_from(">hqi", value)
    pos = 14
    if version == 4:  # compact string: unsigned varint length + 1 (metadata is short here: one byte)
        size, pos = value[pos] - 1, pos + 1
    else:
        (size,), pos = struct.unpack_from(">h", value, pos), pos + 2
    metadata = value[pos : pos + size].decode()
    tags = value[pos + size + 8 :]  # after the commit timestamp: v4's tagged fields
    tagged = [] if version == 3 else [f"{len(tags)} bytes of tags"]
    return {
        "version": version,
        "offset": offset,
        "leader_epoch": leader_epoch,
        "metadata": metadata,
        "tags": tagged,
    }


def test_a_commit_is_the_record_kafka_writes_to_consumer_offsets(pair: Pair) -> None:
    group, name = unique("offsets"), unique("t")
    create_on_both(pair, topic(name))
    answers = pair.ask(8, COMMIT_V, commit(group, "", -1, name))
    assert [a["topics"][0]["partitions"][0]["error_code"] for a in answers] == [0, 0]
    partition, key = shard_of(group, OFFSETS_PARTITIONS), offset_commit_key(group, name, 0)
    deadline = time.monotonic() + 30
    while not (kafka := records_of(pair.kafka, partition, key)):  # the high watermark follows the append
        assert time.monotonic() < deadline, "Kafka's commit never became readable"
        time.sleep(0.05)  # poll interval
    kcoord = records_of(pair.kcoord, partition, key)
    seen = {
        side: [(k, offset_commit_value(v)) for k, v in rows]
        for side, rows in (("kafka", kafka), ("kcoord", kcoord))
    }
    assert_same(
        [] if seen["kafka"] == seen["kcoord"] else [f"records: kafka={seen['kafka']} kcoord={seen['kcoord']}"]
    )
