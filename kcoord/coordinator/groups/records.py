"""Domain records the group logic writes to (and replays from) the log.

They mirror Kafka's `__consumer_offsets` records (RECORDS: OffsetCommitKey/Value,
GroupMetadataKey/Value); the server maps them to and from bytes with the schemas in
`kcoord/protocol/messages/records.py` (storage record type 0 = offset commit, 1 = group metadata;
a tombstone is a record with value None). A pending transactional offset is kcoord's own record
(storage type 7, kcoord/coordinator/groups/txn_offsets.py explains why it has its own key).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.records import ConsumerRecord
from kcoord.coordinator.groups.group_configs import GroupConfigRecord
from kcoord.coordinator.groups.share.records import ShareRecord

__all__ = [
    "GroupConfigRecord",
    "GroupMetadataRecord",
    "GroupTombstone",
    "LogRecord",
    "MemberRecord",
    "OffsetCommitRecord",
    "OffsetTombstone",
    "TxnOffsetCommitRecord",
    "TxnOffsetTombstone",
]


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitRecord:
    """Key (group, topic, partition) -> OffsetCommitValue. Never mutated once made (it is shared by
    the offset store, fetch answers and the log), but not `frozen`: a frozen dataclass sets each
    field through object.__setattr__, 640 ns against 120 ns for the eight fields, once per committed
    partition and per replayed commit. `unsafe_hash` keeps it hashable like the other records.

    `leader_epoch` -1 = none; `metadata` never None (null is stored as "");
    `expire_timestamp_ms` -1 = none (only OffsetCommit v2-4 with an explicit retention sets it:
    Kafka then writes value v1, otherwise v3).
    """

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class OffsetTombstone:
    """Key (group, topic, partition) with a null value: the committed offset is deleted."""

    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """One member inside GroupMetadataValue (`subscription` = metadata for the selected protocol)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """Key (group) -> GroupMetadataValue.

    `protocol_type` "" = none (offset-only group), as in Kafka's value. `protocol_name` and
    `leader_id` are None when the group is Empty. `current_state_timestamp_ms` -1 = unknown.
    A record with members loads as Stable, without members as Empty.
    """

    group_id: str
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupTombstone:
    """Key (group) with a null value: the group is deleted."""

    group_id: str


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRecord:
    """Key (producer id, group, topic, partition) -> an offset a TxnOffsetCommit wrote and the
    producer's transaction has not yet completed (Kafka's pending transactional offset: an
    OffsetCommit record in a transactional batch). Invisible to OffsetFetch until a COMMIT marker
    copies it into the committed offsets; `metadata` never None (null is stored as "")."""

    producer_id: int
    producer_epoch: int
    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class TxnOffsetTombstone:
    """Key (producer id, group, topic, partition) with a null value: the transaction completed."""

    producer_id: int
    group_id: str
    topic: str
    partition: int


# A consumer-protocol group's records (KIP-848) are defined with that group (consumer/records.py).
LogRecord = (
    OffsetCommitRecord
    | OffsetTombstone
    | GroupMetadataRecord
    | GroupTombstone
    | ConsumerRecord
    | ShareRecord  # a share group's records (KIP-932, share/records.py)
    | TxnOffsetCommitRecord
    | TxnOffsetTombstone
    | GroupConfigRecord  # a group's own configs (group_configs.py)
)
