"""What a test reads back: a topic's records, a group's committed offsets, a group (fixtures.md's views).

Records are read from the partition logs as a consumer reading uncommitted would see them, with
control batches left out and each record of an aborted transaction marked `"aborted": true` (its
transaction's ABORT marker follows it in the same partition, as Kafka's consumer learns from the
aborted-transactions list). Groups reuse the HTTP inspector's decoding (kcoord/wiring/group_views.py).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.consumer.model import ConsumerGroup
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.partition_log.port import PartitionStore
from kcoord.protocol.record_batch import iter_records, read_end_txn_marker, read_header
from kcoord.wiring.controls.names import ControlError
from kcoord.wiring.group_views import _assignment, _named, find_group

__all__ = ["committed_view", "group_view", "records_view"]

READ_BYTES = 1 << 20


def records_view(topics: TopicRegistry, data: TopicData, topic: str) -> list[dict[str, Any]]:
    record = topics.get(topic)
    if record is None:
        raise ControlError(404, f"no topic {topic}")
    out: list[dict[str, Any]] = []
    for partition in range(record.num_partitions):
        plog = data.logs.get(topic, partition)
        if plog is not None:
            out.extend(_partition_records(plog, partition))
    return out


def _batches(plog: PartitionStore) -> list[bytes]:
    batches, offset = [], plog.log_start_offset
    while offset < plog.high_watermark:
        read = plog.read(offset, READ_BYTES)
        if read is None or not read.records:
            break
        buf, pos = read.records, 0
        while pos < len(buf):
            header = read_header(buf, pos)
            if header.last_offset >= offset:
                batches.append(bytes(buf[pos : pos + header.size]))
            pos += header.size
            offset = max(offset, header.last_offset + 1)
    return batches


def _partition_records(plog: PartitionStore, partition: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    open_txns: dict[int, list[dict[str, Any]]] = {}  # producer id -> its records since its last marker
    start = plog.log_start_offset
    for batch in _batches(plog):
        header = read_header(batch)
        if header.is_control:
            marker = read_end_txn_marker(batch)
            for entry in open_txns.pop(header.producer_id, []):
                if marker is not None and not marker.commit:
                    entry["aborted"] = True
            continue
        for rec in iter_records(batch):
            if rec.offset < start:
                continue
            entry = {
                "partition": partition,
                "offset": rec.offset,
                "key": rec.key,
                "value": rec.value,
                "headers": [[name, value] for name, value in rec.headers],
                "timestamp": rec.timestamp,
                "aborted": False,
            }
            out.append(entry)
            if header.is_transactional:
                open_txns.setdefault(header.producer_id, []).append(entry)
    return out


def committed_view(manager: GroupManager, group_id: str) -> list[dict[str, Any]]:
    """The group's stable committed offsets (pending transactional ones are not in this store)."""
    offsets = manager.committed_offsets(group_id)
    return [
        {"topic": topic, "partition": partition, "offset": rec.offset, "metadata": rec.metadata}
        for (topic, partition), rec in sorted(offsets.items())
    ]


def group_view(manager: GroupManager, group_id: str) -> dict[str, Any]:
    group = find_group(manager, group_id)
    if group is None or group.state.value == "Dead":
        raise ControlError(404, f"no group {group_id}")
    if isinstance(group, ConsumerGroup):
        return {
            "group_id": group.group_id,
            "protocol": "consumer",
            "state": group.state.value,
            "generation": group.group_epoch,
            "protocol_type": "consumer",
            "protocol_name": manager.consumer_assignor(group),
            "leader": None,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "assignment": _named(manager, m.assigned),
                }
                for m in group.members.values()
            ],
        }
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    return {
        "group_id": group.group_id,
        "protocol": "classic",
        "state": group.state.value,
        "generation": group.generation_id,
        "protocol_type": group.protocol_type,
        "protocol_name": group.protocol_name,
        "leader": group.leader_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "assignment": _assignment(m.assignment).get("partitions", {}) if consumer else {},
            }
            for m in group.members.values()
        ],
    }
