"""Stamping a validated batch with its place in a partition (shared by the local log and the cluster's
PostgreSQL store): the base offset, the partition leader epoch and, under LogAppendTime, the broker's
time as max timestamp with the CRC computed again (Kafka's `LogValidator.assignOffsetsNonCompressed` /
`validateMessagesAndAssignOffsetsCompressed`: the batch is kept, only these header fields change)."""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c

from kcoord.partition_log.config import PartitionConfig
from kcoord.protocol.record_batch import CRC_START, TIMESTAMP_TYPE_BIT, BatchHeader

__all__ = ["Stamped", "stamp"]

_OFFSET = struct.Struct(">q")


class Stamped(NamedTuple):
    data: bytes
    max_timestamp: int
    append_time_ms: int
    """The broker's time under LogAppendTime, else -1 (Produce's log_append_time_ms)."""


def stamp(
    data: bytes,
    header: BatchHeader,
    base_offset: int,
    config: PartitionConfig,
    now_ms: int,
    leader_epoch: int = 0,
) -> Stamped:
    out = bytearray(data)
    out[0:8] = _OFFSET.pack(base_offset)
    out[12:16] = struct.pack(">i", leader_epoch)  # partitionLeaderEpoch
    max_timestamp, append_time = header.max_timestamp, -1
    if config.message_timestamp_type == "LogAppendTime":
        append_time = max_timestamp = now_ms
        struct.pack_into(">h", out, CRC_START, header.attributes | TIMESTAMP_TYPE_BIT)
        struct.pack_into(">q", out, 35, now_ms)  # maxTimestamp
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[CRC_START:])))
    return Stamped(bytes(out), max_timestamp, append_time)
