"""The share-partition tenant (KIP-932): the state machine of each share partition's in-flight records
and its durable state (Kafka's SharePartition and share coordinator), pure like every coordinator tenant.

It imports no other tenant: the wiring connects the group side's ShareMemberListener to
`SharePartitions.release_member` / `delete`, and the edge calls `next_fetch_offset`, `acquire` and
`acknowledge`.
"""

from kcoord.coordinator.share_partitions.model import (
    AcknowledgeType,
    AcquiredRange,
    InFlightRange,
    LogBounds,
    PartitionAnswer,
    RecordState,
    ShareKey,
    SharePartitionView,
    ShareSettings,
    StateBatch,
)
from kcoord.coordinator.share_partitions.records import (
    ShareRecord,
    ShareSnapshot,
    ShareTombstone,
    ShareUpdate,
)
from kcoord.coordinator.share_partitions.tenant import SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT, SharePartitions

__all__ = [
    "SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT",
    "AcknowledgeType",
    "AcquiredRange",
    "InFlightRange",
    "LogBounds",
    "PartitionAnswer",
    "RecordState",
    "ShareKey",
    "SharePartitionView",
    "SharePartitions",
    "ShareRecord",
    "ShareSettings",
    "ShareSnapshot",
    "ShareTombstone",
    "ShareUpdate",
    "StateBatch",
]
