"""The values the share-partition tenant takes and answers (KIP-932).

Names are Kafka's (`SharePartition.java`'s RecordState, `ShareFetchResponse`'s AcquiredRecords,
`ShareSnapshotValue`'s StateBatch). Everything is keyed by (group id, topic id, partition), never by a
node: in cluster mode a share partition's state follows its topic partition's leader.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from kcoord.protocol.errors import ErrorCode

__all__ = [
    "AcknowledgeType",
    "AcquiredRange",
    "InFlightRange",
    "LogBounds",
    "PartitionAnswer",
    "RecordState",
    "ShareKey",
    "SharePartitionView",
    "ShareSettings",
    "StateBatch",
]

ShareKey = tuple[str, UUID, int]
"""(group id, topic id, partition): one share partition (Kafka's SharePartitionKey)."""

PartitionAnswer = Callable[[dict[tuple[UUID, int], ErrorCode]], None]
"""The answer of `reset` / `delete`: an error (NONE when done) per (topic id, partition) touched."""


class RecordState(enum.IntEnum):
    """A record's delivery state (SharePartition.RecordState; the values are the persisted ones)."""

    AVAILABLE = 0
    """May be acquired by the next fetch."""
    ACQUIRED = 1
    """Held by one member under an acquisition lock until acknowledged, released or expired."""
    ACKNOWLEDGED = 2
    """Accepted: delivery complete."""
    ARCHIVED = 4
    """Rejected, a gap, past the delivery count limit, or below the start offset: never delivered again."""


class AcknowledgeType(enum.IntEnum):
    """ShareFetch/ShareAcknowledge acknowledge_types values (AcknowledgeType.java)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(frozen=True, slots=True)
class ShareSettings:
    """What governs one share partition, resolved by the caller from the group's configs and the
    broker flags (Kafka's GroupConfig share.* keys over ShareGroupConfig group.share.*)."""

    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str
    """"latest" | "earliest" | "by_duration:PnDTnHnMn.nS" (an ISO-8601 duration)."""
    isolation_level: int
    """0 read_uncommitted, 1 read_committed."""


@dataclass(frozen=True, slots=True)
class LogBounds:
    """The topic partition's log as the edge sees it now, for initialisation and fetching."""

    log_start: int
    high_watermark: int
    last_stable: int
    offset_for_timestamp: Callable[[int], int | None]
    """The first offset whose timestamp is >= the given epoch ms, None when there is none."""


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """One acquired_records entry of ShareFetch's answer: offsets first..last acquired by the member,
    each delivered for the `delivery_count`-th time."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range of records sharing a state (ShareSnapshotValue/ShareUpdateValue StateBatches).
    ACQUIRED is never persisted: Kafka writes acquired records as AVAILABLE (acquisition is in memory)."""

    first_offset: int
    last_offset: int
    delivery_state: RecordState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class InFlightRange:
    """A range of in-flight records with one state, for describe and the inspector."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str | None
    """The member holding them (ACQUIRED only)."""
    lock_deadline_ms: int | None
    """When their acquisition lock expires (ACQUIRED only)."""


@dataclass(frozen=True, slots=True)
class SharePartitionView:
    """One share partition as it is now (describe, DescribeShareGroupOffsets, the inspector)."""

    group_id: str
    topic_id: UUID
    partition: int
    start_offset: int
    """SPSO: the first offset not yet finalised (ACKNOWLEDGED or ARCHIVED)."""
    end_offset: int
    """The next offset past the in-flight window (Kafka's endOffset + 1 once records were fetched)."""
    state_epoch: int
    records: tuple[InFlightRange, ...]

    @property
    def delivery_complete_count(self) -> int:
        """Records at or past the start offset already ACKNOWLEDGED or ARCHIVED (KIP-1226's count,
        which DescribeShareGroupOffsets v1's lag subtracts)."""
        return sum(
            r.last_offset - r.first_offset + 1
            for r in self.records
            if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        )
