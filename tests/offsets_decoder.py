"""A reader of `__consumer_offsets` written from Kafka's JSON schemas, independent of kcoord's codec.

Hand-written struct reads of apache/kafka group-coordinator/src/main/resources/common/message/
{OffsetCommitKey,OffsetCommitValue,GroupMetadataKey,GroupMetadataValue,ConsumerGroup*Key,
ConsumerGroup*Value}.json and of the magic-2 record batch (DefaultRecordBatch / DefaultRecord), with
no import from kcoord, so the tests compare kcoord's bytes against the schemas rather than against
kcoord's own encoder. The Burrow-shaped reader (tests/integration/workers/offsets_reader.py) uses it
in its own process.

Non-flexible versions: INT16-length strings (-1 = null), INT32-length bytes, INT32-count arrays.
Flexible ones: unsigned-varint length + 1 (0 = null), a tagged-field section after every struct.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

__all__ = ["BatchRecord", "Reader", "java_partition", "read_batches", "read_key", "read_value"]


class Reader:
    """A cursor over one key or value."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def int8(self) -> int:
        return int(self._take(">b"))

    def int16(self) -> int:
        return int(self._take(">h"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def uuid(self) -> uuid.UUID:
        raw = self.data[self.pos : self.pos + 16]
        self.pos += 16
        return uuid.UUID(bytes=raw)

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def string(self, flexible: bool = False) -> str | None:
        length = self.uvarint() - 1 if flexible else self.int16()
        if length < 0:
            return None
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.decode()

    def bytes_(self, flexible: bool = False) -> bytes | None:
        length = self.uvarint() - 1 if flexible else self.int32()
        if length < 0:
            return None
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw

    def count(self, flexible: bool = False) -> int:
        return self.uvarint() - 1 if flexible else self.int32()

    def tags(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = self.data[self.pos : self.pos + size]
            self.pos += size
        return out

    def done(self) -> bool:
        return self.pos == len(self.data)


# -- keys ---------------------------------------------------------------------------------------------
def read_key(key: bytes) -> tuple[int, dict[str, Any]]:
    """(key version = Kafka's record type, fields). 0/1 OffsetCommitKey, 2 GroupMetadataKey, 3
    ConsumerGroupMetadataKey, 4 ConsumerGroupPartitionMetadataKey, 5 ...MemberMetadataKey, 6
    ...TargetAssignmentMetadataKey, 7 ...TargetAssignmentMemberKey, 8 ...CurrentMemberAssignmentKey."""
    r = Reader(key)
    version = r.int16()
    fields: dict[str, Any]
    if version in (0, 1):
        fields = {"group": r.string(), "topic": r.string(), "partition": r.int32()}
    elif version in (2, 3, 4, 6):
        fields = {"group": r.string()}
    elif version in (5, 7, 8):
        fields = {"group": r.string(), "member_id": r.string()}
    else:
        raise ValueError(f"unknown key version {version}")
    if not r.done():
        raise ValueError(f"{len(key) - r.pos} trailing bytes after key v{version}")
    return version, fields


# -- values -------------------------------------------------------------------------------------------
def read_value(key_version: int, value: bytes) -> tuple[int, dict[str, Any]]:
    """(value version, fields) of the value stored under a key of `key_version`."""
    r = Reader(value)
    version = r.int16()
    reader = _VALUES.get(key_version)
    if reader is None:
        raise ValueError(f"no value schema for key version {key_version}")
    fields = reader(r, version)
    if not r.done():
        raise ValueError(f"{len(value) - r.pos} trailing bytes after value v{version} (key v{key_version})")
    return version, fields


def _offset_commit_value(r: Reader, version: int) -> dict[str, Any]:
    """OffsetCommitValue v0-4: leaderEpoch v3+, expireTimestamp v1 only; v4 flexible with the topic id
    as tagged field 0 (None when absent: Kafka leaves a zero id out)."""
    if not 0 <= version <= 4:
        raise ValueError(f"OffsetCommitValue v{version}")
    flexible = version >= 4
    out: dict[str, Any] = {"offset": r.int64(), "leader_epoch": r.int32() if version >= 3 else -1}
    out["metadata"] = r.string(flexible)
    out["commit_timestamp"] = r.int64()
    out["expire_timestamp"] = r.int64() if version == 1 else -1
    out["topic_id"] = None
    if flexible:
        tagged = r.tags()
        if 0 in tagged:
            if len(tagged[0]) != 16:
                raise ValueError(f"OffsetCommitValue v4 topic id of {len(tagged[0])} bytes")
            out["topic_id"] = uuid.UUID(bytes=bytes(tagged[0]))
    return out


def _group_metadata_value(r: Reader, version: int) -> dict[str, Any]:
    """GroupMetadataValue v0-4: currentStateTimestamp v2+; member groupInstanceId v3+, rebalanceTimeout
    v1+; v4 flexible."""
    if not 0 <= version <= 4:
        raise ValueError(f"GroupMetadataValue v{version}")
    flex = version >= 4
    out: dict[str, Any] = {
        "protocol_type": r.string(flex),
        "generation": r.int32(),
        "protocol": r.string(flex),
        "leader": r.string(flex),
        "current_state_timestamp": r.int64() if version >= 2 else -1,
    }
    members = []
    for _ in range(r.count(flex)):
        member: dict[str, Any] = {"member_id": r.string(flex)}
        member["group_instance_id"] = r.string(flex) if version >= 3 else None
        member["client_id"] = r.string(flex)
        member["client_host"] = r.string(flex)
        member["rebalance_timeout"] = r.int32() if version >= 1 else -1
        member["session_timeout"] = r.int32()
        member["subscription"] = r.bytes_(flex)
        member["assignment"] = r.bytes_(flex)
        if flex:
            r.tags()
        members.append(member)
    out["members"] = members
    if flex:
        r.tags()
    return out


def _v0(version: int, name: str) -> None:
    if version != 0:
        raise ValueError(f"{name} v{version}")


def _consumer_group_metadata_value(r: Reader, version: int) -> dict[str, Any]:
    """ConsumerGroupMetadataValue v0: Epoch; tagged MetadataHash (0), CreationTimeMs (1)."""
    _v0(version, "ConsumerGroupMetadataValue")
    epoch = r.int32()
    tags = r.tags()
    metadata_hash = struct.unpack(">q", tags[0])[0] if 0 in tags else 0
    return {"epoch": epoch, "metadata_hash": metadata_hash}


def _topic_partitions(r: Reader) -> dict[uuid.UUID, list[int]]:
    out = {}
    for _ in range(r.count(True)):
        topic_id = r.uuid()
        out[topic_id] = [r.int32() for _ in range(r.count(True))]
        r.tags()
    return out


def _member_metadata_value(r: Reader, version: int) -> dict[str, Any]:
    """ConsumerGroupMemberMetadataValue v0 (flexible); tagged ClassicMemberMetadata (0)."""
    _v0(version, "ConsumerGroupMemberMetadataValue")
    out: dict[str, Any] = {
        "instance_id": r.string(True),
        "rack_id": r.string(True),
        "client_id": r.string(True),
        "client_host": r.string(True),
        "subscribed_topic_names": [r.string(True) for _ in range(r.count(True))],
        "subscribed_topic_regex": r.string(True),
        "rebalance_timeout_ms": r.int32(),
        "server_assignor": r.string(True),
    }
    out["classic"] = 0 in r.tags()
    return out


def _target_metadata_value(r: Reader, version: int) -> dict[str, Any]:
    _v0(version, "ConsumerGroupTargetAssignmentMetadataValue")
    out = {"assignment_epoch": r.int32()}
    r.tags()
    return out


def _target_member_value(r: Reader, version: int) -> dict[str, Any]:
    _v0(version, "ConsumerGroupTargetAssignmentMemberValue")
    out = {"topic_partitions": _topic_partitions(r)}
    r.tags()
    return out


def _current_assignment_value(r: Reader, version: int) -> dict[str, Any]:
    """ConsumerGroupCurrentMemberAssignmentValue v0."""
    _v0(version, "ConsumerGroupCurrentMemberAssignmentValue")
    out: dict[str, Any] = {
        "member_epoch": r.int32(),
        "previous_member_epoch": r.int32(),
        "state": r.int8(),
        "assigned_partitions": _topic_partitions(r),
        "partitions_pending_revocation": _topic_partitions(r),
    }
    r.tags()
    return out


_VALUES = {
    0: _offset_commit_value,
    1: _offset_commit_value,
    2: _group_metadata_value,
    3: _consumer_group_metadata_value,
    5: _member_metadata_value,
    6: _target_metadata_value,
    7: _target_member_value,
    8: _current_assignment_value,
}


# -- record batches -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    producer_id: int
    transactional: bool
    control: bool


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint: (value, new position)."""
    shift = raw = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def read_batches(data: bytes) -> list[BatchRecord]:
    """Every record of the whole uncompressed magic-2 batches in `data` (a trailing partial batch,
    which a Fetch may return, is skipped as clients skip it)."""
    out: list[BatchRecord] = []
    pos = 0
    while pos + 61 <= len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break
        (magic,) = struct.unpack_from(">b", data, pos + 16)
        attributes, _, base_ts, _, producer_id, _, _, count = struct.unpack_from(">hiqqqhii", data, pos + 21)
        if magic != 2 or attributes & 0x07:
            raise ValueError(f"batch at {base_offset}: magic {magic} attributes {attributes:#x}")
        cursor = pos + 61
        for _ in range(count):
            size, cursor = _varint(data, cursor)
            record_end = cursor + size
            cursor += 1  # attributes
            ts_delta, cursor = _varint(data, cursor)
            offset_delta, cursor = _varint(data, cursor)
            key_len, cursor = _varint(data, cursor)
            key = None if key_len < 0 else data[cursor : cursor + key_len]
            cursor += max(key_len, 0)
            value_len, cursor = _varint(data, cursor)
            value = None if value_len < 0 else data[cursor : cursor + value_len]
            out.append(
                BatchRecord(
                    base_offset + offset_delta, base_ts + ts_delta, key, value, producer_id,
                    bool(attributes & 0x10), bool(attributes & 0x20),
                )
            )  # fmt: skip
            cursor = record_end
        pos = end
    return out


# -- partitions -----------------------------------------------------------------------------------------
def java_partition(group: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % partitions`, written out independently of runtime.shards:
    Java's String.hashCode over UTF-16 code units, 32-bit wrap-around, abs(MIN_VALUE) = 0."""
    h = 0
    units = group.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i : i + 2], "big")) % (1 << 32)
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % partitions
