"""Pure classic consumer-group logic: no sockets, files, asyncio or wall clock.

Time comes from an injected `Clock`, timers from `KeyedTimers`, durability from the `RecordLog`
port (`coordinator.groups.ports`). `GroupManager` is the entry point.
"""

from kcoord.coordinator.groups.admin import (
    GROUP_AUTHORIZED_OPERATIONS,
    GROUP_TYPE_CLASSIC,
    GroupDescription,
    GroupListing,
    MemberDescription,
)
from kcoord.coordinator.groups.clock import Clock, FakeClock
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
from kcoord.coordinator.groups.timers import FakeTimers, KeyedTimers

__all__ = [
    "GROUP_AUTHORIZED_OPERATIONS",
    "GROUP_TYPE_CLASSIC",
    "Clock",
    "FakeClock",
    "FakeTimers",
    "GroupConfig",
    "GroupDescription",
    "GroupListing",
    "GroupManager",
    "GroupMetadataRecord",
    "GroupState",
    "GroupSummary",
    "GroupTombstone",
    "IllegalStateTransition",
    "KeyedTimers",
    "LogRecord",
    "MemberDescription",
    "MemberRecord",
    "OffsetCommitRecord",
    "OffsetTombstone",
]
