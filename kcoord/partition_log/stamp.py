"""Stamping a validated batch with its place in a partition (shared by the local log and the cluster's
PostgreSQL store): the base offset, the partition leader epoch and, under LogAppendTime, the broker's
time as max timestamp with the CRC computed again (Kafka's `LogValidator.assignOffsetsNonCompressed` /
`validateMessagesAndAssignOffsetsCompressed`: the batch is kept, only these header fields change; the
batch format's `with_place` writes them, from the header validation read)."""

from __future__ import annotations

from typing import NamedTuple

from kcoord.partition_log.config import PartitionConfig
from kcoord.protocol.record_batch import BatchHeader, with_place

__all__ = ["Stamped", "stamp"]


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
    if config.message_timestamp_type == "LogAppendTime":
        return Stamped(with_place(data, header, base_offset, leader_epoch, now_ms), now_ms, now_ms)
    return Stamped(with_place(data, header, base_offset, leader_epoch, None), header.max_timestamp, -1)
