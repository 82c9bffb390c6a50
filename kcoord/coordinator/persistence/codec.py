"""The record codec: domain records <-> storage records (key and value bytes), and their rendering.

The storage record types, their key and value schemas and the versions written are one table,
`protocol.messages.records.RECORD_TYPES` (the log's user owns types 0-0x7F):
* 0 OffsetCommit: key = OffsetCommitKey v1, value = OffsetCommitValue v3 (v1 when the commit carried
  an explicit expire timestamp), as Kafka writes them to `__consumer_offsets`;
* 1 GroupMetadata: key = GroupMetadataKey v2, value = GroupMetadataValue v3;
* 4 Topic: the topic registry's own record (`kcoord/coordinator/metadata/topic_records.py`);
* 5 ProducerIds: the end of the newest producer id block (`kcoord/coordinator/metadata/producer_ids.py`);
* 6 Transaction: TransactionLogKey v0 / TransactionLogValue v0-1 (`txn_codec`).
* 7 TxnOffsetCommit: a pending transactional offset (`txn_offset_codec.py`).
* 10 Acl: an ACL binding, keyed by the binding (`kcoord/coordinator/metadata/acl_store.py`).
* 9 ScramCredential: a user's SCRAM credential (`kcoord/coordinator/metadata/scram_credentials.py`).
* 11 GroupConfig: a group's own configs (`group_config_codec.py`).
* 0x50 ShareSnapshot, 0x51 ShareUpdate: the share partitions' state (`share_state_codec.py`).
Every key and value starts with its INT16 version; a None value is a tombstone.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kcoord import storage
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.coordinator.groups.records import (
    GroupConfigRecord,
    GroupMetadataRecord,
    GroupTombstone,
    LogRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.metadata import TopicRecord, TopicTombstone
from kcoord.coordinator.metadata.acl_store import AclRecord, AclTombstone
from kcoord.coordinator.metadata.producer_ids import (
    PRODUCER_IDS_RECORD_TYPE,
    ProducerIdBlock,
    decode_block_value,
    encode_block_key,
    encode_block_value,
)
from kcoord.coordinator.metadata.scram_credentials import (
    SCRAM_CREDENTIAL_RECORD_TYPE,
    ScramCredentialRecord,
    ScramCredentialTombstone,
    decode_credential,
    encode_credential,
    render_credential,
)
from kcoord.coordinator.metadata.topic_records import (
    TOPIC_RECORD_TYPE,
    decode_topic_key,
    decode_topic_value,
    encode_topic_key,
    encode_topic_value,
)
from kcoord.coordinator.persistence import group_config_codec as group_configs
from kcoord.coordinator.persistence.acl_codec import (
    ACL_RECORD_TYPE,
    acl_record_from_storage,
    acl_to_storage,
    render_acl,
)
from kcoord.coordinator.persistence.consumer_codec import (
    CONSUMER_RECORD_TYPES,
    consumer_from_storage,
    consumer_to_storage,
    render_consumer,
)
from kcoord.coordinator.persistence.share_state_codec import (
    SHARE_RECORD_TYPES,
    render_share_record,
    share_record_from_storage,
    share_record_to_storage,
)
from kcoord.coordinator.persistence.txn_codec import (
    TRANSACTION_TYPE,
    render_transaction,
    transaction_from_storage,
    transaction_to_storage,
)
from kcoord.coordinator.persistence.txn_offset_codec import (
    TXN_OFFSET_RECORD_TYPE,
    render_txn_offset,
    txn_offset_from_storage,
    txn_offset_to_storage,
)
from kcoord.coordinator.share_partitions import ShareSnapshot, ShareTombstone, ShareUpdate
from kcoord.coordinator.transactions.records import TransactionRecord
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import (
    decode_key,
    decode_offset_commit_fast,
    decode_value,
    encode_versioned,
)

__all__ = ["GROUP_METADATA_TYPE", "OFFSET_COMMIT_TYPE", "AnyRecord", "from_storage", "render", "to_storage"]

OFFSET_COMMIT_TYPE = schemas.OFFSET_COMMIT_RECORD_TYPE
GROUP_METADATA_TYPE = schemas.GROUP_METADATA_RECORD_TYPE
AnyRecord = (
    LogRecord
    | TopicRecord
    | TopicTombstone
    | ProducerIdBlock
    | TransactionRecord
    | AclRecord
    | AclTombstone
    | ScramCredentialRecord
    | ScramCredentialTombstone
    | ShareSnapshot
    | ShareUpdate
    | ShareTombstone
)


# -- encoding ---------------------------------------------------------------------------------------
# Offset commits are the hot record (every commit, every replay), so OffsetCommitKey v1 and
# OffsetCommitValue v3 have hand-written struct codecs; tests/server/test_persistence.py checks them
# byte for byte against protocol's schemas. Everything else goes through the schemas.
_H = struct.Struct(">h")
_KEY_HEAD = struct.Struct(">hh")  # version, group length
_KEY_TAIL = struct.Struct(">i")  # partition
_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader_epoch, metadata length
_V3_TAIL = struct.Struct(">q")  # commit_timestamp
_SHORT_MAX = 0x7FFF


def _offset_key(group_id: str, topic: str, partition: int) -> bytes:
    group, name = group_id.encode(), topic.encode()
    if len(group) > _SHORT_MAX or len(name) > _SHORT_MAX:  # let the schema codec report it
        fields = {"group": group_id, "topic": topic, "partition": partition}
        return encode_versioned(schemas.OFFSET_COMMIT_KEY, schemas.OFFSET_COMMIT_KEY_VERSION, fields)
    return b"".join(
        (_KEY_HEAD.pack(1, len(group)), group, _H.pack(len(name)), name, _KEY_TAIL.pack(partition))
    )


def _group_key(group_id: str) -> bytes:
    version = schemas.GROUP_METADATA_KEY_VERSION
    return encode_versioned(schemas.GROUP_METADATA_KEY, version, {"group": group_id})


def _offset_value(r: OffsetCommitRecord) -> bytes:
    if r.expire_timestamp_ms != -1:  # Kafka writes v1 only for commits with an explicit retention
        fields = {
            "offset": r.offset,
            "metadata": r.metadata,
            "commit_timestamp": r.commit_timestamp_ms,
            "expire_timestamp": r.expire_timestamp_ms,
        }
        return encode_versioned(schemas.OFFSET_COMMIT_VALUE, 1, fields)
    metadata = r.metadata.encode()
    if len(metadata) > _SHORT_MAX:
        fields = {
            "offset": r.offset,
            "leader_epoch": r.leader_epoch,
            "metadata": r.metadata,
            "commit_timestamp": r.commit_timestamp_ms,
        }
        return encode_versioned(schemas.OFFSET_COMMIT_VALUE, schemas.OFFSET_COMMIT_VALUE_VERSION, fields)
    head = _V3_HEAD.pack(3, r.offset, r.leader_epoch, len(metadata))
    return b"".join((head, metadata, _V3_TAIL.pack(r.commit_timestamp_ms)))


def _group_value(r: GroupMetadataRecord) -> bytes:
    members = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms,
            "session_timeout": m.session_timeout_ms,
            "subscription": m.subscription,
            "assignment": m.assignment,
        }
        for m in r.members
    ]
    fields = {
        "protocol_type": r.protocol_type,
        "generation": r.generation_id,
        "protocol": r.protocol_name,
        "leader": r.leader_id,
        "current_state_timestamp": r.current_state_timestamp_ms,
        "members": members,
    }
    return encode_versioned(schemas.GROUP_METADATA_VALUE, schemas.GROUP_METADATA_VALUE_VERSION, fields)


_ENCODERS: dict[type, Callable[[Any], storage.Record]] = {
    TransactionRecord: transaction_to_storage,
    TxnOffsetCommitRecord: txn_offset_to_storage,
    TxnOffsetTombstone: txn_offset_to_storage,
    AclRecord: acl_to_storage,
    AclTombstone: acl_to_storage,
    ScramCredentialRecord: lambda record: _credential_to_storage(record),
    ScramCredentialTombstone: lambda record: _credential_to_storage(record),
    GroupConfigRecord: group_configs.group_config_to_storage,
    **dict.fromkeys((ShareSnapshot, ShareUpdate, ShareTombstone), share_record_to_storage),
}


def _credential_to_storage(record: ScramCredentialRecord | ScramCredentialTombstone) -> storage.Record:
    return storage.Record(SCRAM_CREDENTIAL_RECORD_TYPE, *encode_credential(record))


def to_storage(record: AnyRecord) -> storage.Record:
    """One domain record as a storage record."""
    match record:
        case OffsetCommitRecord():
            key = _offset_key(record.group_id, record.topic, record.partition)
            return storage.Record(OFFSET_COMMIT_TYPE, key, _offset_value(record))
        case OffsetTombstone():
            return storage.Record(
                OFFSET_COMMIT_TYPE, _offset_key(record.group_id, record.topic, record.partition), None
            )
        case GroupMetadataRecord():
            return storage.Record(GROUP_METADATA_TYPE, _group_key(record.group_id), _group_value(record))
        case GroupTombstone():
            return storage.Record(GROUP_METADATA_TYPE, _group_key(record.group_id), None)
        case TopicRecord():
            return storage.Record(
                TOPIC_RECORD_TYPE, encode_topic_key(record.name), encode_topic_value(record)
            )
        case TopicTombstone():
            return storage.Record(TOPIC_RECORD_TYPE, encode_topic_key(record.name), None)
        case ProducerIdBlock():
            return storage.Record(PRODUCER_IDS_RECORD_TYPE, encode_block_key(), encode_block_value(record))
        case (
            TransactionRecord()
            | TxnOffsetCommitRecord()
            | TxnOffsetTombstone()
            | AclRecord()
            | AclTombstone()
            | ScramCredentialRecord()
            | ScramCredentialTombstone()
            | GroupConfigRecord()
            | ShareSnapshot()
            | ShareUpdate()
            | ShareTombstone()
        ):
            return _ENCODERS[type(record)](record)  # record types with a codec module of their own
        case (
            ConsumerGroupEpoch()
            | ConsumerTargetEpoch()
            | ConsumerTargetMember()
            | ConsumerMemberSubscription()
            | ConsumerMemberAssignment()
        ):
            return consumer_to_storage(record)
    raise TypeError(f"not a domain record: {record!r}")


# -- decoding ---------------------------------------------------------------------------------------
def _fast_offset(key: bytes, value: bytes | None) -> LogRecord | None:
    """OffsetCommitKey v0/v1 with value v3 (or a tombstone) by struct; None = use the schemas."""
    fast = decode_offset_commit_fast(key, value)
    if fast is None:
        return None
    if fast.tombstone:
        return OffsetTombstone(fast.group, fast.topic, fast.partition)
    return OffsetCommitRecord(
        fast.group, fast.topic, fast.partition, fast.offset, fast.leader_epoch, fast.metadata,
        fast.commit_timestamp,
    )  # fmt: skip


def _offset_from_storage(k: dict[str, Any], value: bytes | None) -> LogRecord:
    if value is None:
        return OffsetTombstone(k["group"], k["topic"], k["partition"])
    _, v = decode_value(schemas.OFFSET_COMMIT_VALUE, value)
    return OffsetCommitRecord(
        group_id=k["group"],
        topic=k["topic"],
        partition=k["partition"],
        offset=v["offset"],
        leader_epoch=v["leader_epoch"],
        metadata=v["metadata"] or "",
        commit_timestamp_ms=v["commit_timestamp"],
        expire_timestamp_ms=v["expire_timestamp"],
    )


def _group_from_storage(k: dict[str, Any], value: bytes | None) -> LogRecord:
    if value is None:
        return GroupTombstone(k["group"])
    version, v = decode_value(schemas.GROUP_METADATA_VALUE, value)
    members = tuple(
        MemberRecord(
            member_id=m["member_id"],
            group_instance_id=m["group_instance_id"],
            client_id=m["client_id"],
            client_host=m["client_host"],
            # v0 has no rebalance timeout: Kafka uses the session timeout.
            rebalance_timeout_ms=m["rebalance_timeout"] if version >= 1 else m["session_timeout"],
            session_timeout_ms=m["session_timeout"],
            subscription=m["subscription"],
            assignment=m["assignment"],
        )
        for m in v["members"]
    )
    return GroupMetadataRecord(
        group_id=k["group"],
        protocol_type=v["protocol_type"] or "",
        generation_id=v["generation"],
        protocol_name=v["protocol"],
        leader_id=v["leader"],
        current_state_timestamp_ms=v["current_state_timestamp"],
        members=members,
    )


# Record types whose own codec module decodes them whole.
_DECODERS: dict[int, Callable[[storage.Record], AnyRecord]] = {
    **dict.fromkeys(CONSUMER_RECORD_TYPES, consumer_from_storage),
    TRANSACTION_TYPE: transaction_from_storage,
    TXN_OFFSET_RECORD_TYPE: txn_offset_from_storage,
    ACL_RECORD_TYPE: acl_record_from_storage,
    SCRAM_CREDENTIAL_RECORD_TYPE: lambda record: decode_credential(record.key, record.value),
    group_configs.GROUP_CONFIG_RECORD_TYPE: group_configs.group_config_from_storage,
    **dict.fromkeys(SHARE_RECORD_TYPES, share_record_from_storage),
}


def from_storage(record: storage.Record) -> AnyRecord | None:
    """The domain record, or None for a record kind we do not know (the caller skips it)."""
    if record.type == TOPIC_RECORD_TYPE:
        name = decode_topic_key(record.key)
        return TopicTombstone(name) if record.value is None else decode_topic_value(name, record.value)
    if record.type == PRODUCER_IDS_RECORD_TYPE and record.value is not None:
        return decode_block_value(record.value)
    if (decoder := _DECODERS.get(record.type)) is not None:
        return decoder(record)
    if record.type not in (OFFSET_COMMIT_TYPE, GROUP_METADATA_TYPE):
        return None
    if record.type == OFFSET_COMMIT_TYPE:
        try:
            fast = _fast_offset(record.key, record.value)
        except (struct.error, UnicodeDecodeError):
            fast = None  # malformed: the schema codec raises the precise DecodeError
        if fast is not None:
            return fast
    schema, key = decode_key(record.key)
    if schema is schemas.OFFSET_COMMIT_KEY and record.type == OFFSET_COMMIT_TYPE:
        return _offset_from_storage(key, record.value)
    if schema is schemas.GROUP_METADATA_KEY and record.type == GROUP_METADATA_TYPE:
        return _group_from_storage(key, record.value)
    return None  # KIP-848 / share-group keys, or a key under the wrong type: not ours to read


def render(record: storage.Record) -> str:
    """One line per record for `kcoord storage dump`: known types decoded through protocol/."""
    try:
        domain = from_storage(record)
    except (ValueError, KeyError, struct.error) as exc:  # what a bad key/value raises in the codecs
        return f"type={record.type} undecodable ({exc}) key={record.key.hex()}"
    if domain is None:
        value = "tombstone" if record.value is None else f"value={record.value.hex()}"
        return f"type={record.type} key={record.key.hex()} {value}"
    return _render_domain(domain)


def _render_domain(domain: AnyRecord) -> str:
    match domain:
        case OffsetCommitRecord():
            return (
                f"offset_commit group={domain.group_id} topic={domain.topic} partition={domain.partition} "
                f"offset={domain.offset} leader_epoch={domain.leader_epoch} metadata={domain.metadata!r} "
                f"commit_timestamp={domain.commit_timestamp_ms} expire_timestamp={domain.expire_timestamp_ms}"
            )
        case OffsetTombstone():
            where = f"group={domain.group_id} topic={domain.topic} partition={domain.partition}"
            return f"offset_commit {where} tombstone"
        case GroupMetadataRecord():
            members = ",".join(m.member_id for m in domain.members)
            return (
                f"group_metadata group={domain.group_id} protocol_type={domain.protocol_type!r} "
                f"generation={domain.generation_id} protocol={domain.protocol_name} "
                f"leader={domain.leader_id} "
                f"state_timestamp={domain.current_state_timestamp_ms} members=[{members}]"
            )
        case GroupTombstone():
            return f"group_metadata group={domain.group_id} tombstone"
        case TopicRecord():
            return f"topic name={domain.name} partitions={domain.num_partitions} topic_id={domain.topic_id}"
        case TopicTombstone():
            return f"topic name={domain.name} tombstone"
        case ProducerIdBlock():
            return f"producer_ids block_end={domain.block_end}"
        case TransactionRecord() | TxnOffsetCommitRecord() | TxnOffsetTombstone():
            return (
                render_transaction(domain)
                if isinstance(domain, TransactionRecord)
                else render_txn_offset(domain)
            )
    renderer = _RENDERERS.get(type(domain))
    return render_consumer(domain) if renderer is None else renderer(domain)  # type: ignore[arg-type]


_RENDERERS: dict[type, Callable[[Any], str]] = {  # codec modules of their own; the rest: consumer records
    AclRecord: render_acl, AclTombstone: render_acl, GroupConfigRecord: group_configs.render_group_config,
    ScramCredentialRecord: render_credential, ScramCredentialTombstone: render_credential,
    ShareSnapshot: render_share_record, ShareUpdate: render_share_record, ShareTombstone: render_share_record,
}  # fmt: skip
