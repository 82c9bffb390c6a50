"""`__consumer_offsets` (issue 33 item 5): the view of the coordinator log, read as a Kafka reader reads it.

Writes go through the real write path's storage adapter over a real `storage.Log` in tmp_path (so the
LSNs are the log's own), the view is read through the partition-store calls Fetch and ListOffsets
make, and every record batch, key and value is decoded by `tests/offsets_decoder.py`, written from
Kafka's JSON schemas and independent of kcoord's codec.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kcoord import storage
from kcoord.broker.topics.offsets_topic import OffsetsTopic, load_from_log
from kcoord.coordinator.groups.consumer.model import ConsumerMember
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    GroupTombstone,
    MemberRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.persistence import StorageRecordLog
from kcoord.partition_log.results import READ_COMMITTED
from tests.offsets_decoder import BatchRecord, java_partition, read_batches, read_key, read_value

_TOPIC_ID = uuid.UUID(int=7)
TOPIC_IDS = {"orders": uuid.UUID("5a1e0d3c-7f4b-4c2a-9d1e-0b6f8a2c4e11")}  # the topics that exist


def test_java_partition_matches_known_java_hashes() -> None:
    # "g1".hashCode() = 103*31 + 49 = 3242; "".hashCode() = 0; "polygenelubricants".hashCode() is
    # Integer.MIN_VALUE, which Utils.abs maps to 0.
    assert java_partition("g1", 50) == 3242 % 50
    assert java_partition("", 50) == 0
    assert java_partition("polygenelubricants", 50) == 0


class Harness:
    """A real coordinator log with the view listening on its write path."""

    def __init__(self, directory: Path, partitions: int = 50) -> None:
        self.directory = directory
        self.partitions = partitions
        self.record_log = StorageRecordLog()
        self.view = OffsetsTopic(partitions)
        self.log: Any = None

    async def open(self) -> None:
        """As the server wires it (kcoord/wiring/local_backends.py): the view is built on first read."""
        self.log = log_ = await storage.Log.open(self.directory)
        self.record_log.attach(log_)
        floor, record_log = log_.next_lsn, self.record_log

        def load(view: OffsetsTopic) -> None:
            load_from_log(view, log_, floor)
            record_log.on_durable = view.on_durable

        self.view = OffsetsTopic(self.partitions, loader=load)
        self.view.topic_ids = TOPIC_IDS.get  # as the server points it at its topic registry

    def build(self) -> None:
        """A reader's first read: the view exists from now on and hears every write live."""
        assert self.view.partition(0) is not None

    async def write(self, *records: Any) -> None:
        done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.record_log.append(records, done.set_result)
        assert await done is None

    async def close(self) -> None:
        await self.log.close()

    def read_partition(self, partition: Any, offset: int = 0) -> list[BatchRecord]:
        result = partition.read(offset, 1 << 20)
        assert result is not None
        return read_batches(result.records)

    def read(self, group: str, offset: int = 0, isolation: int = 0) -> list[BatchRecord]:
        partition = self.view.partition(java_partition(group, self.partitions))
        assert partition is not None
        result = partition.read(offset, 1 << 20, isolation)
        assert result is not None
        return read_batches(result.records)


def decoded(records: Sequence[BatchRecord]) -> list[tuple[int, dict[str, Any], Any]]:
    """(key version, key fields, (value version, value fields) or None) of each non-control record."""
    out = []
    for r in records:
        if r.control:
            continue
        assert r.key is not None
        version, key = read_key(r.key)
        out.append((version, key, None if r.value is None else read_value(version, r.value)))
    return out


def run(directory: Path, body: Any) -> None:
    async def main() -> None:
        harness = Harness(directory)
        await harness.open()
        try:
            await body(harness)
        finally:
            await harness.close()

    asyncio.run(main())


def _member(member_id: str) -> MemberRecord:
    return MemberRecord(member_id, None, "client-1", "/127.0.0.1", 30_000, 10_000, b"sub", b"assign")


def test_classic_group_and_offsets_are_kafkas_records_in_the_groups_partition(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.write(GroupMetadataRecord("g1", "consumer", 3, "range", "m-1", 1_000, (_member("m-1"),)))
        await h.write(
            OffsetCommitRecord("g1", "orders", 0, 42, 5, "meta", 2_000),
            OffsetCommitRecord("g1", "orders", 1, 7, -1, "", 2_000),
        )
        got = decoded(h.read("g1"))
        assert got[0][0] == 2 and got[0][1] == {"group": "g1"}
        version, value = got[0][2]
        assert version == 3
        assert value["protocol_type"] == "consumer" and value["generation"] == 3
        assert value["protocol"] == "range" and value["leader"] == "m-1"
        assert value["current_state_timestamp"] == 1_000
        assert value["members"][0]["member_id"] == "m-1"
        assert value["members"][0]["rebalance_timeout"] == 30_000
        assert value["members"][0]["subscription"] == b"sub"
        assert [(v, k) for v, k, _ in got[1:]] == [
            (1, {"group": "g1", "topic": "orders", "partition": 0}),
            (1, {"group": "g1", "topic": "orders", "partition": 1}),
        ]
        # Kafka 4.3's OffsetCommitValue v4, the topic's id in tagged field 0
        assert got[1][2] == (
            4,
            {
                "offset": 42,
                "leader_epoch": 5,
                "metadata": "meta",
                "commit_timestamp": 2_000,
                "expire_timestamp": -1,
                "topic_id": TOPIC_IDS["orders"],
            },
        )
        # every other partition is empty
        for index in range(50):
            if index != java_partition("g1", 50):
                partition = h.view.partition(index)
                assert partition is not None and h.read_partition(partition) == []

    run(tmp_path, body)


def test_an_offset_of_an_unknown_topic_is_v4_without_a_topic_id(tmp_path: Path) -> None:
    """Kafka leaves the tagged topic id out when it is zero (no such topic in its metadata)."""

    async def body(h: Harness) -> None:
        await h.write(OffsetCommitRecord("g2", "gone", 3, 9, -1, "", 1_000))
        ((version, key, value),) = decoded(h.read("g2"))
        assert (version, key) == (1, {"group": "g2", "topic": "gone", "partition": 3})
        assert value[0] == 4 and value[1]["topic_id"] is None and value[1]["offset"] == 9
        (record,) = h.read("g2")
        assert record.value is not None and record.value.endswith(b"\x00")  # an empty tagged section

    run(tmp_path, body)


def test_offsets_are_the_logs_positions_and_survive_a_restart(tmp_path: Path) -> None:
    seen: dict[str, list[tuple[int, bytes | None, bytes | None]]] = {}

    async def before(h: Harness) -> None:
        h.build()  # a reader is there from the start: it sees the replaced record too
        await h.write(OffsetCommitRecord("g1", "t", 0, 1, -1, "", 1))
        await h.write(OffsetCommitRecord("other", "t", 0, 1, -1, "", 1))  # another partition's record
        await h.write(
            OffsetCommitRecord("g1", "t", 0, 2, -1, "", 2), OffsetCommitRecord("g1", "t", 1, 9, -1, "", 2)
        )
        records = h.read("g1")
        # the write of two records is followed by its batch-end record in the log: positions, not counts
        assert [r.offset for r in records] == [0, 2, 3]
        partition = h.view.partition(java_partition("g1", 50))
        assert partition is not None and partition.high_watermark == 4
        seen["before"] = [(r.offset, r.key, r.value) for r in records]

    async def after(h: Harness) -> None:
        records = h.read("g1")
        # the newest record of each key keeps its offset; the replaced one is compacted away
        assert [(r.offset, r.key, r.value) for r in records] == seen["before"][1:]
        partition = h.view.partition(java_partition("g1", 50))
        # every partition ends at the log's next position (the batch end at 4 made it 5): never
        # below an offset a reader was handed before the restart
        assert partition is not None and partition.high_watermark == h.log.next_lsn == 5
        empty = h.view.partition((java_partition("g1", 50) + 1) % 50)
        assert empty is not None and empty.high_watermark == 5 and h.read_partition(empty) == []
        # a reader that had consumed up to 3 resumes after it: nothing is read twice
        assert h.read("g1", offset=4) == []
        await h.write(OffsetCommitRecord("g1", "t", 0, 3, -1, "", 3))
        assert [r.offset for r in h.read("g1", offset=4)] == [h.log.next_lsn - 1]

    run(tmp_path, before)
    run(tmp_path, after)


def test_the_view_built_on_first_read_holds_earlier_and_in_flight_writes_once(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.write(OffsetCommitRecord("g1", "t", 0, 1, -1, "", 1))  # before anyone read the topic
        assert h.record_log.on_durable is None  # nothing is paid on the write path until then
        in_flight: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        h.record_log.append([OffsetCommitRecord("g1", "t", 1, 2, -1, "", 2)], in_flight.set_result)
        assert [r.offset for r in h.read("g1")] == [0]  # built now: the durable write only
        assert await in_flight is None
        assert [r.offset for r in h.read("g1")] == [0, 1]  # the write in flight then arrives once

    run(tmp_path, body)


def test_deletions_are_tombstones(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.write(GroupMetadataRecord("g1", "consumer", 1, "range", "m", 1, (_member("m"),)))
        await h.write(OffsetCommitRecord("g1", "t", 0, 5, -1, "", 1))
        await h.write(OffsetTombstone("g1", "t", 0))  # OffsetDelete
        await h.write(GroupTombstone("g1"))  # DeleteGroups
        got = decoded(h.read("g1"))
        assert got[-2] == (1, {"group": "g1", "topic": "t", "partition": 0}, None)
        assert got[-1] == (2, {"group": "g1"}, None)

    run(tmp_path, body)


def test_consumer_protocol_records_are_kafka_4s(tmp_path: Path) -> None:
    member = ConsumerMember(
        "m-1",
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=("t",),
        server_assignor="uniform",
        rebalance_timeout_ms=300_000,
        member_epoch=4,
        previous_member_epoch=3,
        assigned={_TOPIC_ID: frozenset({0, 1})},
    )

    async def body(h: Harness) -> None:
        await h.write(
            ConsumerGroupEpoch("cg", 4, 1234),
            ConsumerMemberSubscription("cg", "m-1", member),
            ConsumerTargetMember("cg", "m-1", {_TOPIC_ID: frozenset({0, 1})}),
            ConsumerTargetEpoch("cg", 4),
            ConsumerMemberAssignment("cg", "m-1", member),
        )
        got = decoded(h.read("cg"))
        assert [(v, k) for v, k, _ in got] == [
            (3, {"group": "cg"}),
            (5, {"group": "cg", "member_id": "m-1"}),
            (7, {"group": "cg", "member_id": "m-1"}),
            (6, {"group": "cg"}),
            (8, {"group": "cg", "member_id": "m-1"}),
        ]
        assert got[0][2] == (0, {"epoch": 4, "metadata_hash": 1234})
        subscription = got[1][2][1]
        assert (
            subscription["subscribed_topic_names"] == ["t"] and subscription["server_assignor"] == "uniform"
        )
        assert subscription["rebalance_timeout_ms"] == 300_000 and subscription["classic"] is False
        assert got[2][2] == (0, {"topic_partitions": {_TOPIC_ID: [0, 1]}})
        assert got[3][2] == (0, {"assignment_epoch": 4})
        current = got[4][2][1]
        assert (current["member_epoch"], current["previous_member_epoch"]) == (4, 3)
        assert current["assigned_partitions"] == {_TOPIC_ID: [0, 1]}

    run(tmp_path, body)


def test_transactional_offsets_are_a_producers_batch_ended_by_its_marker(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.write(TxnOffsetCommitRecord(77, 2, "g1", "t", 0, 10, -1, "m", 5))
        partition = h.view.partition(java_partition("g1", 50))
        assert partition is not None
        (pending,) = h.read("g1")
        assert pending.transactional and pending.producer_id == 77 and not pending.control
        assert pending.key is not None and pending.value is not None
        assert read_key(pending.key) == (1, {"group": "g1", "topic": "t", "partition": 0})
        # v4 without a topic id: Kafka's TxnOffsetCommit offsets carry none
        assert read_value(1, pending.value) == (
            4,
            {
                "offset": 10,
                "leader_epoch": -1,
                "metadata": "m",
                "commit_timestamp": 5,
                "expire_timestamp": -1,
                "topic_id": None,
            },
        )
        # read committed stops before the open transaction
        assert partition.last_stable_offset == pending.offset
        assert h.read("g1", isolation=READ_COMMITTED) == []
        # COMMIT: the marker batch writes the committed offset and the pending key's tombstone
        await h.write(OffsetCommitRecord("g1", "t", 0, 10, -1, "m", 5), TxnOffsetTombstone(77, "g1", "t", 0))
        records = h.read("g1")
        marker = records[-1]
        assert marker.control and marker.transactional and marker.producer_id == 77
        assert marker.key == b"\x00\x00\x00\x01"  # ControlRecordType COMMIT, version 0
        assert partition.last_stable_offset == partition.high_watermark
        committed = partition.read(0, 1 << 20, READ_COMMITTED)
        assert committed is not None and committed.aborted_transactions == []

    run(tmp_path, body)


def test_an_aborted_transaction_is_listed_for_read_committed_readers(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        h.build()
        await h.write(TxnOffsetCommitRecord(88, 0, "g1", "t", 0, 10, -1, "", 5))
        await h.write(TxnOffsetTombstone(88, "g1", "t", 0))  # ABORT: only the tombstone
        partition = h.view.partition(java_partition("g1", 50))
        assert partition is not None
        records = h.read("g1")
        assert records[-1].control and records[-1].key == b"\x00\x00\x00\x00"  # ABORT
        result = partition.read(0, 1 << 20, READ_COMMITTED)
        assert result is not None and result.aborted_transactions == [(88, records[0].offset)]

    run(tmp_path, body)


def test_list_offsets_lookups(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.write(OffsetCommitRecord("g1", "t", 0, 1, -1, "", 1))
        await h.write(OffsetCommitRecord("g1", "t", 1, 1, -1, "", 1))
        partition = h.view.partition(java_partition("g1", 50))
        assert partition is not None
        first, second = h.read("g1")
        assert partition.log_start_offset == 0
        assert partition.offset_for_timestamp(second.timestamp) in {
            (first.offset, first.timestamp),
            (second.offset, second.timestamp),
        }
        assert partition.offset_for_timestamp(second.timestamp + 60_000) is None
        assert partition.read(partition.high_watermark + 1, 100) is None  # OFFSET_OUT_OF_RANGE

    run(tmp_path, body)


def test_writes_are_refused_as_on_kafkas_internal_topics() -> None:
    view = OffsetsTopic(3)
    partition = view.partition(0)
    assert partition is not None and view.partition(3) is None
    refused = partition.validate(b"", 0)
    assert getattr(refused, "error_code", None) is not None
    assert refused.error_code.name == "INVALID_TOPIC_EXCEPTION"  # type: ignore[union-attr]
    assert "Cannot append to internal topic __consumer_offsets" in refused.message  # type: ignore[union-attr]


def test_the_partition_count_is_offsets_topic_num_partitions(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, partitions=7)
        await h.open()
        try:
            await h.write(OffsetCommitRecord("some-group", "t", 0, 1, -1, "", 1))
            assert h.view.num_partitions == 7
            assert len(h.read("some-group")) == 1
        finally:
            await h.close()

    asyncio.run(main())
