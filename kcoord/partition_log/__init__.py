"""Partition logs: the records of kcoord's topics, stored as Kafka record batches (the data plane).

Its own room (imports protocol for the batch format and storage for its error type; imported by
coordinator): the coordinator log in `storage/` is a generic key/value log, while this is Kafka's
offset-addressed log with its own validation, producer state and retention (docs/architecture.md).
"""

from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.log import READ_COMMITTED, READ_UNCOMMITTED, AppendResult, PartitionLog, ReadResult
from kcoord.partition_log.logs import PartitionLogs
from kcoord.partition_log.producers import ProducerStateRow
from kcoord.partition_log.results import NotLeader
from kcoord.partition_log.segment import CorruptSegment
from kcoord.partition_log.validation import AppendError, DuplicateAppend, ValidatedAppend

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "AppendError",
    "AppendResult",
    "CorruptSegment",
    "DuplicateAppend",
    "NotLeader",
    "PartitionConfig",
    "PartitionLog",
    "PartitionLogs",
    "ProducerStateRow",
    "ReadResult",
    "ValidatedAppend",
]
