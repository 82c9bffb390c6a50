"""The share groups' records (KIP-932), as Kafka writes them to `__consumer_offsets`
(apache/kafka group-coordinator/src/main/resources/common/message/ShareGroup*{Key,Value}.json,
checked against Kafka 4.3.1's generated classes and its CoordinatorRecordType).

Each key starts with its INT16 record type: 10 ShareGroupMemberMetadata (a member's subscription),
11 ShareGroupMetadata (the group epoch and metadata hash), 12 ShareGroupTargetAssignmentMetadata
(the target's epoch), 13 ShareGroupTargetAssignmentMember (a member's target), 14
ShareGroupCurrentMemberAssignment (a member's epochs and partitions), 15
ShareGroupStatePartitionMetadata (which share partitions are initialized). Key type 9,
ShareGroupPartitionMetadata, was dropped in Kafka 4.1 for the metadata hash. Values are version 0,
flexible. kcoord stores them under storage record type 0x40 + Kafka's key type, as the consumer
protocol's (`records.RECORD_TYPES`).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT32, INT64, NULLABLE_STRING, STRING, UUID

__all__ = [
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY",
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE",
    "SHARE_GROUP_MEMBER_METADATA_KEY",
    "SHARE_GROUP_MEMBER_METADATA_VALUE",
    "SHARE_GROUP_METADATA_KEY",
    "SHARE_GROUP_METADATA_VALUE",
    "SHARE_GROUP_STATE_PARTITION_METADATA_KEY",
    "SHARE_GROUP_STATE_PARTITION_METADATA_VALUE",
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY",
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE",
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY",
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE",
]


def _key(name: str, version: int, *fields: Field) -> Schema:
    return Schema(name, versions=range(version, version + 1), fields=fields)


def _value(name: str, *fields: Field) -> Schema:
    return Schema(name, versions=range(0, 1), flexible_since=0, fields=fields)


_GROUP = Field("group_id", STRING)
_MEMBER = Field("member_id", STRING)
TOPIC_PARTITIONS = Schema(
    "TopicPartitions", fields=(Field("topic_id", UUID), Field("partitions", array(INT32)))
)
TOPIC_PARTITIONS_INFO = Schema(
    "TopicPartitionsInfo",
    fields=(Field("topic_id", UUID), Field("topic_name", STRING), Field("partitions", array(INT32))),
)
TOPIC_INFO = Schema("TopicInfo", fields=(Field("topic_id", UUID), Field("topic_name", STRING)))

SHARE_GROUP_MEMBER_METADATA_KEY = _key("ShareGroupMemberMetadataKey", 10, _GROUP, _MEMBER)
SHARE_GROUP_MEMBER_METADATA_VALUE = _value(
    "ShareGroupMemberMetadataValue",
    Field("rack_id", NULLABLE_STRING),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", array(STRING)),
)

SHARE_GROUP_METADATA_KEY = _key("ShareGroupMetadataKey", 11, _GROUP)
SHARE_GROUP_METADATA_VALUE = _value(
    "ShareGroupMetadataValue", Field("epoch", INT32), Field("metadata_hash", INT64, default=0)
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _key("ShareGroupTargetAssignmentMetadataKey", 12, _GROUP)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ShareGroupTargetAssignmentMetadataValue",
    Field("assignment_epoch", INT32),
    # Kafka 4.3's tagged AssignmentTimestamp (share.assignment.interval.ms); kcoord writes 0 (absent).
    Field("assignment_timestamp", INT64, default=0, tag=0, tagged_since=0),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _key("ShareGroupTargetAssignmentMemberKey", 13, _GROUP, _MEMBER)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ShareGroupTargetAssignmentMemberValue", Field("topic_partitions", array(TOPIC_PARTITIONS))
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _key("ShareGroupCurrentMemberAssignmentKey", 14, _GROUP, _MEMBER)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ShareGroupCurrentMemberAssignmentValue",
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", array(TOPIC_PARTITIONS)),
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = _key("ShareGroupStatePartitionMetadataKey", 15, _GROUP)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = _value(
    "ShareGroupStatePartitionMetadataValue",
    Field("initializing_topics", array(TOPIC_PARTITIONS_INFO)),
    Field("initialized_topics", array(TOPIC_PARTITIONS_INFO)),
    Field("deleting_topics", array(TOPIC_INFO)),
)
