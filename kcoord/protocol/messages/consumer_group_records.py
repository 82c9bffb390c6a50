"""The consumer protocol's group records (KIP-848), as Kafka writes them to `__consumer_offsets`
(apache/kafka group-coordinator/src/main/resources/common/message/ConsumerGroup*{Key,Value}.json).

Each key starts with its INT16 version, which is Kafka's record type: 3 ConsumerGroupMetadata
(the group epoch), 5 ConsumerGroupMemberMetadata (a member's subscription), 6
ConsumerGroupTargetAssignmentMetadata (the target's epoch), 7 ConsumerGroupTargetAssignmentMember (a
member's target), 8 ConsumerGroupCurrentMemberAssignment (a member's epochs and partitions). Values
are version 0, flexible. kcoord stores them under storage record type 0x40 + Kafka's key type
(`records.RECORD_TYPES`): its own types 4 and 5 were taken before these arrived.
Kafka 4.1 replaced ConsumerGroupPartitionMetadata (type 4) by ConsumerGroupMetadataValue's tagged
MetadataHash, which is what kcoord writes.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BYTES, INT8, INT32, INT64, NULLABLE_STRING, STRING, UUID

__all__ = [
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY",
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE",
    "CONSUMER_GROUP_MEMBER_METADATA_KEY",
    "CONSUMER_GROUP_MEMBER_METADATA_VALUE",
    "CONSUMER_GROUP_METADATA_KEY",
    "CONSUMER_GROUP_METADATA_VALUE",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE",
]


def _key(name: str, version: int, *fields: Field) -> Schema:
    return Schema(name, versions=range(version, version + 1), fields=fields)


def _value(name: str, *fields: Field) -> Schema:
    return Schema(name, versions=range(0, 1), flexible_since=0, fields=fields)


TOPIC_PARTITIONS = Schema(
    "TopicPartitions", fields=(Field("topic_id", UUID), Field("partitions", array(INT32)))
)

CONSUMER_GROUP_METADATA_KEY = _key("ConsumerGroupMetadataKey", 3, Field("group_id", STRING))
CONSUMER_GROUP_METADATA_VALUE = _value(
    "ConsumerGroupMetadataValue",
    Field("epoch", INT32),
    Field("metadata_hash", INT64, default=0, tag=0, tagged_since=0),
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = _key(
    "ConsumerGroupMemberMetadataKey", 5, Field("group_id", STRING), Field("member_id", STRING)
)
CLASSIC_PROTOCOL = Schema("ClassicProtocol", fields=(Field("name", STRING), Field("metadata", BYTES)))
CLASSIC_MEMBER_METADATA = Schema(
    "ClassicMemberMetadata",
    fields=(Field("session_timeout_ms", INT32), Field("supported_protocols", array(CLASSIC_PROTOCOL))),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = _value(
    "ConsumerGroupMemberMetadataValue",
    Field("instance_id", NULLABLE_STRING),
    Field("rack_id", NULLABLE_STRING),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", array(STRING)),
    Field("subscribed_topic_regex", NULLABLE_STRING),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("server_assignor", NULLABLE_STRING),
    # Online migration: a member speaking the classic protocol (absent, i.e. null, otherwise).
    Field("classic_member_metadata", CLASSIC_MEMBER_METADATA, default=None, tag=0, tagged_since=0),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _key(
    "ConsumerGroupTargetAssignmentMetadataKey", 6, Field("group_id", STRING)
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ConsumerGroupTargetAssignmentMetadataValue", Field("assignment_epoch", INT32)
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, Field("group_id", STRING), Field("member_id", STRING)
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ConsumerGroupTargetAssignmentMemberValue", Field("topic_partitions", array(TOPIC_PARTITIONS))
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, Field("group_id", STRING), Field("member_id", STRING)
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ConsumerGroupCurrentMemberAssignmentValue",
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", array(TOPIC_PARTITIONS)),
    Field("partitions_pending_revocation", array(TOPIC_PARTITIONS)),
)
