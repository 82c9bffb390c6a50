"""The log's unit: a typed key/value record, and the settings of a log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Record(NamedTuple):
    """`value is None` is a tombstone: the key is deleted.

    A NamedTuple rather than a frozen dataclass: replay creates one per record, and a tuple is
    built several times faster (frozen dataclasses set each slot through object.__setattr__).
    """

    type: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Storage settings, each named after the Kafka/Bitcask knob it mirrors."""

    fsync_policy: str = "always"  # always | interval:<ms> | never (unsafe: acks before fsync)
    segment_bytes: int = 64 * 1024 * 1024  # offsets.topic.segment.bytes is 100 MiB; smaller replays faster
    segment_ms: int = 3_600_000
    # One GroupMetadata value holds every member's subscription and assignment: a 10,000-member
    # group is a few MiB. The cap only has to make a torn length field recognisable.
    max_record_bytes: int = 16 << 20
    min_cleanable_dirty_ratio: float = 0.5  # Kafka's min.cleanable.dirty.ratio
    tombstone_retention_ms: int = 86_400_000  # Kafka's delete.retention.ms
    snapshot_every_records: int = 1_000_000
    compaction_check_interval_ms: int = 15_000  # Kafka's log.cleaner.backoff.ms
    # The history area (kcoord/storage/history.py): originals compaction replaced, for analytics only.
    # Bounded by the age of a file's newest record and by the area's total bytes; 0 keeps none.
    history_retention_ms: int = 7 * 86_400_000  # a week, like offsets.retention.minutes
    history_retention_bytes: int = 1 << 30

    def fsync_interval_ms(self) -> int | None:
        """None for `always`, -1 for `never`, else the interval."""
        policy = self.fsync_policy
        if policy == "always":
            return None
        if policy == "never":
            return -1
        if policy.startswith("interval:") and policy[9:].isdigit():
            return int(policy[9:])
        raise ValueError(f"fsync policy must be always, never or interval:<ms>, not {policy!r}")
