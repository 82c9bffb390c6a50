"""Offset retention (KIP-211) and the cleanup of Empty groups without offsets (Kafka's
`cleanupGroupMetadata` / OffsetMetadataManager.cleanupExpiredOffsets), plus DeleteTopics."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.group_configs import config_tombstones
from kcoord.coordinator.groups.records import GroupTombstone, LogRecord, OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.groups.runtime import Runtime, Undo, Write
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE
from kcoord.coordinator.groups.timers import EXPIRE_OFFSETS_KEY

__all__ = ["Retention"]

log = logging.getLogger("coordinator.groups")

BaseTimestamp = Callable[[OffsetCommitRecord], int]


def _commit_timestamp(record: OffsetCommitRecord) -> int:
    return record.commit_timestamp_ms


def expiration_base(group: Group | None) -> BaseTimestamp | None:
    """Kafka's offsetExpirationCondition: which timestamp retention counts from, or None = never.

    * simple (offset-only) group: each offset's commit timestamp;
    * Empty group with a protocol: the time it became Empty (else the commit timestamp);
    * Stable consumer group with known subscriptions: commit timestamp, for unsubscribed topics only;
    * anything else (rebalancing, non-consumer protocols in Stable): never.
    """
    if group is None or group.protocol_type is None:
        return _commit_timestamp
    if group.state is GroupState.EMPTY:
        became_empty = group.state_timestamp_ms
        return _commit_timestamp if became_empty is None else (lambda _r: became_empty)
    if (
        group.state is GroupState.STABLE
        and group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
    ):
        return _commit_timestamp
    return None


class Retention:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def schedule(self) -> None:
        self.rt.timers.schedule(
            EXPIRE_OFFSETS_KEY, self.rt.config.offsets_retention_check_interval_ms, self.expire_offsets
        )

    def expire_offsets(self) -> None:
        """One retention pass: tombstones for expired offsets, then drop Empty groups left without
        offsets. One write: if it fails, the runtime puts the dropped groups back (Kafka's runtime
        reverts the whole expiry write) and they stay until a pass succeeds."""
        self.schedule()
        now = self.rt.now_ms()
        expired: list[LogRecord] = []  # applied once durable
        groups: list[LogRecord] = []  # applied now
        undo: list[Undo] = []
        for group_id in set(self.rt.groups) | set(self.rt.offsets.group_ids()):
            group = self.rt.groups.get(group_id)
            tombstones = self._expired(group_id, group, now)
            expired.extend(tombstones)
            if group is not None and self._is_deletable(group, len(tombstones)):
                log.info("group_id=%s is Empty without offsets: deleting it", group_id)
                tombstone = GroupTombstone(group_id)  # always, as Kafka's Java coordinator
                self.rt.apply_live(tombstone, undo)
                groups.append(tombstone)
                expired.extend(config_tombstones(self.rt.group_configs, group_id))  # once durable
        if expired or groups:
            log.info("offset expiry: %d records", len(expired) + len(groups))
            self.rt.run(Write([*expired, *groups], self._log_failure, durable=expired, undo=undo))

    def _expired(self, group_id: str, group: Group | None, now: int) -> list[OffsetTombstone]:
        base = expiration_base(group)
        if base is None:
            return []
        retention = self.rt.config.offsets_retention_ms
        pending_txn = self.rt.offsets.txn.pending_partitions(group_id)  # in flight too
        out = []
        for (topic, partition), record in self.rt.offsets.of_group(group_id).items():
            if group is not None and group.is_subscribed_to(topic):
                continue
            if self.rt.offsets.is_pending(group_id, topic, partition):
                continue
            if (topic, partition) in pending_txn:
                continue  # not while a transaction has an offset for it (cleanupExpiredOffsets)
            if _is_expired(record, base, now, retention):
                out.append(OffsetTombstone(group_id, topic, partition))
        return out

    def _is_deletable(self, group: Group, num_expired: int) -> bool:
        # Unlike Kafka, keep a group whose MEMBER_ID_REQUIRED member is about to rejoin (compat.md).
        if group.state is not GroupState.EMPTY or group.pending_members:
            return False
        # Kafka keeps a group while a commit to it is in flight.
        if self.rt.offsets.has_pending(group.group_id):
            return False
        # Nor while a transaction is open in it (cleanupExpiredOffsets; Kafka checks this only for a
        # group with committed offsets, we for every group: compat-txn-offsets.md).
        if self.rt.offsets.txn.has_open(group.group_id):
            return False
        return num_expired == len(self.rt.offsets.of_group(group.group_id))

    def delete_topics(self, topic_names: Iterable[str]) -> None:
        """DeleteTopics deletes the committed offsets of the topics in every group."""
        records: list[LogRecord] = list(self.rt.offsets.tombstones_for_topics(topic_names))
        if records:
            self.rt.run(Write(records, self._log_failure))

    @staticmethod
    def _log_failure(error: BaseException | None) -> None:
        if error is not None:
            log.warning("failed to write offset tombstones: %r", error)


def _is_expired(record: OffsetCommitRecord, base: BaseTimestamp, now: int, retention_ms: int) -> bool:
    if record.expire_timestamp_ms != -1:
        return now >= record.expire_timestamp_ms  # explicit retention (OffsetCommit v2-4)
    return now - base(record) >= retention_ms
