"""How many records each share-partition transition moved since the start, for the metrics
(`kcoord_share_records_total{transition}`, kcoord/wiring/share_metrics.py): Kafka's share-group broker
metrics count the same moves (`SharePartitionMetrics`, `ShareGroupMetrics`: records acknowledged by
type, acquisition lock timeouts, records archived at the delivery count limit).

Counted when the tenant accepts the move (acquire, a valid acknowledgement, a lock expiry), not when its
write is durable: a write that fails makes the count one move high, as Kafka's meters do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from kcoord.coordinator.share_partitions.model import AcknowledgeType, AcquiredRange, RecordState, StateBatch

__all__ = ["TRANSITIONS", "TransitionCounts"]

_BY_TYPE = {
    AcknowledgeType.GAP: "gap",
    AcknowledgeType.ACCEPT: "acknowledged",
    AcknowledgeType.RELEASE: "released",
    AcknowledgeType.REJECT: "rejected",
    AcknowledgeType.RENEW: "renewed",
}
TRANSITIONS = (
    "acquired",
    "acknowledged",
    "released",
    "rejected",
    "gap",
    "renewed",
    "lock_expired",
    "archived",
)


class TransitionCounts:
    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def acquired(self, ranges: Iterable[AcquiredRange]) -> None:
        self.counts["acquired"] += sum(r.last_offset - r.first_offset + 1 for r in ranges)

    def acknowledged(self, batches: Iterable[tuple[int, int, Sequence[int]]]) -> None:
        """Each offset under its acknowledge type (one type for the batch, or one per offset)."""
        for first, last, types in batches:
            if len(types) == 1:
                self.counts[_BY_TYPE[AcknowledgeType(types[0])]] += last - first + 1
            else:
                for kind in types:
                    self.counts[_BY_TYPE[AcknowledgeType(kind)]] += 1

    def expired(self, released: Iterable[StateBatch]) -> None:
        """Records whose acquisition lock ran out, and those of them archived at the delivery limit."""
        for batch in released:
            size = batch.last_offset - batch.first_offset + 1
            self.counts["lock_expired"] += size
            if batch.delivery_state is RecordState.ARCHIVED:
                self.counts["archived"] += size

    def released_by_member(self, batches: Iterable[StateBatch]) -> None:
        """A leaving member's records: released, or archived at the delivery count limit."""
        for batch in batches:
            size = batch.last_offset - batch.first_offset + 1
            self.counts["archived" if batch.delivery_state is RecordState.ARCHIVED else "released"] += size
