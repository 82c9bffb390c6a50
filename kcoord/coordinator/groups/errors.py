"""Kafka error codes used by the group logic.

`protocol.errors.ErrorCode` is the project's one enum; until it lands this module falls back to a
local copy of the codes the group logic uses (values from docs/kafka-group-protocol.md §9). A unit
test checks that whichever enum is active has every name below with these values.
"""

from __future__ import annotations

import enum

__all__ = ["APPEND_FAILED", "GROUP_ERROR_CODES", "ErrorCode"]

# name -> Kafka error code (Errors.java): every code the group logic produces.
GROUP_ERROR_CODES = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_METADATA_TOO_LARGE": 12,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "ILLEGAL_GENERATION": 22,
    "INCONSISTENT_GROUP_PROTOCOL": 23,
    "INVALID_GROUP_ID": 24,
    "UNKNOWN_MEMBER_ID": 25,
    "INVALID_SESSION_TIMEOUT": 26,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_COMMIT_OFFSET_SIZE": 28,
    "NON_EMPTY_GROUP": 68,
    "GROUP_ID_NOT_FOUND": 69,
    "MEMBER_ID_REQUIRED": 79,
    "GROUP_MAX_SIZE_REACHED": 81,
    "FENCED_INSTANCE_ID": 82,
    "GROUP_SUBSCRIBED_TO_TOPIC": 86,
    "UNSTABLE_OFFSET_COMMIT": 88,
}

try:
    from kcoord.protocol.errors import ErrorCode
except ImportError:  # kcoord/protocol/errors.py not written yet
    ErrorCode = enum.IntEnum("ErrorCode", GROUP_ERROR_CODES)  # type: ignore[misc,no-redef]

# What a group or offset write answers when the log refused it (a storage fault: a full disk, an I/O
# error). Kafka's GroupCoordinatorService.handleOperationException maps KAFKA_STORAGE_ERROR (and
# NOT_LEADER_OR_FOLLOWER) to NOT_COORDINATOR; clients then look the coordinator up again and retry.
APPEND_FAILED = ErrorCode.NOT_COORDINATOR
