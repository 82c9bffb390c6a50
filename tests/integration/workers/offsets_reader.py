"""A Burrow-shaped reader of `__consumer_offsets` with kafka-python, in its own process.

Burrow (linkedin/Burrow core/internal/consumer/kafka_client.go) consumes every partition of the
offsets topic and rebuilds each group's committed offsets from the records: key version 0/1 is an
offset commit (value v0, v1, v3, v4), key 2 group metadata (value v0-3), other key versions are
counted and skipped; a tombstone deletes (KMinion's offsetsTopic mode). It reads until every
partition reached the end offset ListOffsets gave at start (KMinion's catch-up check).

    python -m tests.integration.workers.offsets_reader BOOTSTRAP [READER_GROUP]
    python -m tests.integration.workers.offsets_reader BOOTSTRAP GROUP --pattern

With READER_GROUP it resumes from that group's committed positions and commits where it stopped.
`--pattern` instead joins GROUP subscribed to the pattern `^__consumer_offsets$` with
exclude_internal_topics=False and prints the partitions the group assigned it.
Prints one JSON line: the rebuilt offsets and groups, every record read (partition, offset, key hex)
and what the client's metadata said about the topic.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.offsets_decoder import read_key, read_value

TOPIC = "__consumer_offsets"
DEADLINE_S = 60.0


def main(bootstrap: str, reader_group: str | None) -> dict[str, Any]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=reader_group,
        exclude_internal_topics=False,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        client_id="burrow-shaped-reader",
    )
    try:
        listed = sorted(consumer.topics())
        internal = sorted(consumer._client.cluster.internal_topics)  # what Metadata flagged is_internal
        partitions = sorted(consumer.partitions_for_topic(TOPIC) or ())
        assigned = [TopicPartition(TOPIC, p) for p in partitions]
        consumer.assign(assigned)
        ends = consumer.end_offsets(assigned)
        state = _State()
        deadline = time.monotonic() + DEADLINE_S
        while any(consumer.position(tp) < ends[tp] for tp in assigned):
            if time.monotonic() > deadline:
                raise SystemExit(f"did not reach the end offsets {ends} in {DEADLINE_S} s")
            for tp, messages in consumer.poll(timeout_ms=2000).items():
                for message in messages:
                    state.record(tp.partition, message.offset, message.key, message.value)
        if reader_group is not None:
            consumer.commit({tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in assigned})
        return {
            "listed": listed,
            "internal": internal,
            "partitions": len(partitions),
            "end_offsets": {str(tp.partition): end for tp, end in ends.items() if end},
            **state.result(),
        }
    finally:
        consumer.close()


def pattern(bootstrap: str, group: str) -> dict[str, Any]:
    """A stock group consumer that opts in to internal topics subscribes to the offsets topic by
    pattern (aiokafka's and kafka-python's exclude_internal_topics tests do the same)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, exclude_internal_topics=False, enable_auto_commit=False
    )
    try:
        consumer.subscribe(pattern=f"^{TOPIC}$")
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise SystemExit(f"no assignment in {DEADLINE_S} s")
            consumer.poll(timeout_ms=2000)
        cluster = consumer._client.cluster
        return {
            "assigned": sorted(tp.partition for tp in consumer.assignment() if tp.topic == TOPIC),
            "excluded_view": sorted(cluster.topics(exclude_internal_topics=True)),
            "included_view": sorted(cluster.topics(exclude_internal_topics=False)),
        }
    finally:
        consumer.close()


class _State:
    def __init__(self) -> None:
        self.offsets: dict[str, dict[str, int]] = {}
        self.groups: dict[str, dict[str, Any]] = {}
        self.records: list[tuple[int, int, str]] = []
        self.other_keys = 0
        self.offset_values: dict[str, set[tuple[int, str | None]]] = {}  # topic -> (version, topic id)

    def record(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        assert key is not None, "every __consumer_offsets record has a key"
        self.records.append((partition, offset, key.hex()))
        version, fields = read_key(key)
        if version in (0, 1):
            where = f"{fields['topic']}:{fields['partition']}"
            if value is None:
                self.offsets.get(fields["group"], {}).pop(where, None)
                return
            value_version, data = read_value(version, value)
            assert value_version in (0, 1, 3, 4), (
                f"Burrow reads offset values v0, v1, v3, v4: {value_version}"
            )
            self.offsets.setdefault(fields["group"], {})[where] = data["offset"]
            topic_id = None if data["topic_id"] is None else str(data["topic_id"])
            self.offset_values.setdefault(fields["topic"], set()).add((value_version, topic_id))
        elif version == 2:
            if value is None:
                self.groups.pop(fields["group"], None)
                return
            value_version, data = read_value(version, value)
            assert value_version <= 3, f"Burrow reads group metadata v0-3: {value_version}"
            self.groups[fields["group"]] = {
                "protocol_type": data["protocol_type"],
                "generation": data["generation"],
                "members": len(data["members"]),
            }
        else:
            self.other_keys += 1  # KIP-848 records: Burrow warns and skips them

    def result(self) -> dict[str, Any]:
        offsets = {group: parts for group, parts in self.offsets.items() if parts}
        return {
            "offsets": offsets,
            "groups": self.groups,
            "records": self.records,
            "other_keys": self.other_keys,
            "offset_values": {topic: sorted(seen) for topic, seen in self.offset_values.items()},
        }


if __name__ == "__main__":
    if sys.argv[3:] == ["--pattern"]:
        print(json.dumps(pattern(sys.argv[1], sys.argv[2])), flush=True)
    else:
        print(json.dumps(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)), flush=True)
