"""Pure classic consumer-group logic: no sockets, files, asyncio or wall clock.

Time comes from an injected `Clock`, timers from `KeyedTimers`, durability from a
`RecordLog[LogRecord]`: the shared runtime's ports (`coordinator.runtime`), which every tenant names.
`GroupManager` is the entry point.
"""

from kcoord.coordinator.groups.admin import (
    GROUP_TYPE_CLASSIC,
    GroupDescription,
    GroupListing,
    MemberDescription,
)
from kcoord.coordinator.groups.config import GroupConfig
from kcoord.coordinator.groups.manager import GroupManager, GroupSummary
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    GroupTombstone,
    LogRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetTombstone,
)
from kcoord.coordinator.groups.state import GroupState, IllegalStateTransition

__all__ = [
    "GROUP_TYPE_CLASSIC",
    "GroupConfig",
    "GroupDescription",
    "GroupListing",
    "GroupManager",
    "GroupMetadataRecord",
    "GroupState",
    "GroupSummary",
    "GroupTombstone",
    "IllegalStateTransition",
    "LogRecord",
    "MemberDescription",
    "MemberRecord",
    "OffsetCommitRecord",
    "OffsetTombstone",
]
