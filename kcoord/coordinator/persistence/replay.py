"""Replay: recovered storage records fed to their owners (groups and offsets, transactions, the
metadata tenant's topics, producer ids, ACLs and SCRAM credentials, the share partitions), through the
`apply` each owner sets as its runtime's (`CoordinatorRuntime.apply`)."""

from __future__ import annotations

import logging
from collections import Counter

from kcoord import storage
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.groups.records import OffsetCommitRecord, OffsetTombstone, TxnOffsetCommitRecord
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry, TopicTombstone
from kcoord.coordinator.metadata.acl_store import AclIndex, AclRecord, AclStore, AclTombstone
from kcoord.coordinator.metadata.producer_ids import ProducerIdBlock, ProducerIds
from kcoord.coordinator.metadata.scram_credentials import (
    ScramCredentialRecord,
    ScramCredentials,
    ScramCredentialTombstone,
)
from kcoord.coordinator.persistence.codec import from_storage
from kcoord.coordinator.share_partitions import SharePartitions, ShareSnapshot, ShareTombstone, ShareUpdate
from kcoord.coordinator.transactions import TransactionCoordinator, TransactionRecord

__all__ = ["Replayer"]

log = logging.getLogger("kcoord.persistence")


# -- replay -----------------------------------------------------------------------------------------
class Replayer:
    """The `apply` callback of `storage.Log.open`: feeds recovered records to their owners.

    Once `finish()` ran, later calls are ignored: live state is changed by the owners themselves.
    """

    def __init__(
        self,
        manager: GroupManager,
        topics: TopicRegistry,
        producer_ids: ProducerIds,
        transactions: TransactionCoordinator | None = None,
        acls: AclStore[AclIndex] | None = None,
        credentials: ScramCredentials | None = None,
        share_partitions: SharePartitions | None = None,
    ) -> None:
        self._share_partitions = share_partitions
        self._acls = acls  # None without an authorizer: ACL records are kept in the log, not loaded
        self._credentials = credentials
        self._manager = manager
        self._transactions = transactions
        self._topics = topics
        self._producer_ids = producer_ids
        self._counts: Counter[str] = Counter()
        self._finished = False

    def apply(self, record: storage.Record) -> None:
        if self._finished:
            return
        domain = from_storage(record)
        match domain:
            case None:
                self._counts["skipped"] += 1
                if self._counts["skipped"] == 1:
                    log.warning("skipping unknown record type=%d (further ones counted only)", record.type)
            case TopicRecord() | TopicTombstone():
                self._counts["topic"] += 1
                self._topics.apply(domain)
            case ProducerIdBlock():
                self._counts["producer_ids"] += 1
                self._producer_ids.apply(domain)
            case AclRecord() | AclTombstone() | ScramCredentialRecord() | ScramCredentialTombstone():
                self._apply_security(domain)
            case TransactionRecord() | ShareSnapshot() | ShareUpdate() | ShareTombstone():
                self._apply_optional(domain)
            case _:
                self._counts[
                    "offset"
                    if isinstance(domain, OffsetCommitRecord | OffsetTombstone | TxnOffsetCommitRecord)
                    else "group"
                ] += 1
                self._manager.apply(domain)

    def _apply_optional(
        self, domain: TransactionRecord | ShareSnapshot | ShareUpdate | ShareTombstone
    ) -> None:
        """Transactions and share-partition state: counted always, loaded when their owner is given."""
        if isinstance(domain, TransactionRecord):
            self._counts["transaction"] += 1
            if self._transactions is not None:
                self._transactions.apply(domain)
            return
        self._counts["share_state"] += 1
        if self._share_partitions is not None:
            self._share_partitions.apply(domain)

    def _apply_security(
        self, domain: AclRecord | AclTombstone | ScramCredentialRecord | ScramCredentialTombstone
    ) -> None:
        """ACL bindings (h/acl) and SCRAM credentials (h/auth): counted always, loaded when configured."""
        if isinstance(domain, AclRecord | AclTombstone):
            self._counts["acl"] += 1
            if self._acls is not None:
                self._acls.apply(domain)
            return
        self._counts["scram_credential"] += 1
        if self._credentials is not None:
            self._credentials.apply(domain)

    def finish(self) -> None:
        self._finished = True

    def summary(self) -> str:
        counts = self._counts
        return (
            f"records={sum(counts.values())} offsets={counts['offset']} groups={counts['group']} "
            f"topic_records={counts['topic']} transactions={counts['transaction']} acls={counts['acl']} "
            f"share_state={counts['share_state']} "
            f"skipped={counts['skipped']}"
        )
