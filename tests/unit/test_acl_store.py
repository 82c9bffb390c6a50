"""AclStore: CreateAcls / DeleteAcls change the authorizer only once their records are durable; replaying
the records rebuilds the same ACLs (AclControlManager.createAcls / deleteAcls semantics)."""

from __future__ import annotations

from typing import Any

from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.broker.security.principal import ANONYMOUS
from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kcoord.coordinator.metadata.acl_store import AclRecord, AclStore, AclTombstone
from tests.unit.fakes import MemoryRecordLog

READ_T = AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:ANONYMOUS", "*", AclOperation.READ,
                    AclPermissionType.ALLOW)  # fmt: skip
READ_G = AclBinding(ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:*", "*", AclOperation.READ,
                    AclPermissionType.ALLOW)  # fmt: skip
EMPTY = AclBinding(ResourceType.TOPIC, "", PatternType.LITERAL, "User:a", "*", AclOperation.READ,
                   AclPermissionType.ALLOW)  # fmt: skip
EVERY_TOPIC = AclBindingFilter(ResourceType.TOPIC, None, PatternType.ANY, None, None, AclOperation.ANY,
                               AclPermissionType.ANY)  # fmt: skip


def store() -> tuple[AclStore, MemoryRecordLog]:
    log = MemoryRecordLog()
    return AclStore(StandardAuthorizer(), log), log  # type: ignore[arg-type]


def test_created_acls_apply_once_durable_and_replay_to_the_same_set() -> None:
    acls, log = store()
    log.hold = True
    answers: list[Any] = []
    acls.create([READ_T, READ_G, EMPTY], answers.append)
    assert answers == [] and not acls.authorizer.authorize(
        ANONYMOUS, "/1.2.3.4", AclOperation.READ, ResourceType.TOPIC, "t"
    )
    log.release()
    assert answers == [[None, None, "Invalid empty resource name"]]
    assert acls.authorizer.authorize(ANONYMOUS, "/1.2.3.4", AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    acls.create([READ_T], answers.append)  # already there: success, nothing written
    assert answers[-1] == [None] and len(log.batches) == 1
    replayed, _ = store()
    for record in log.records:
        assert isinstance(record, AclRecord | AclTombstone)
        replayed.apply(record)
    assert replayed.authorizer.acls() == acls.authorizer.acls() == [READ_T, READ_G]


def test_deleted_acls_are_tombstoned_and_a_failed_write_changes_nothing() -> None:
    acls, log = store()
    acls.create([READ_T, READ_G], lambda _: None)
    log.fail_with = OSError("disk")
    failed: list[Any] = []
    acls.delete([EVERY_TOPIC], failed.append)
    assert failed[0][0][0].startswith("Unknown error") and len(acls.authorizer) == 2
    log.fail_with = None
    deleted: list[Any] = []
    acls.delete([EVERY_TOPIC], deleted.append)
    assert deleted == [[(None, [READ_T])]] and acls.authorizer.acls() == [READ_G]
    replayed, _ = store()
    for record in log.records:
        assert isinstance(record, AclRecord | AclTombstone)
        replayed.apply(record)
    assert replayed.authorizer.acls() == [READ_G]
