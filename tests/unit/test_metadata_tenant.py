"""The metadata tenant (topics, producer ids, ACLs, SCRAM credentials) writes through the one write path:
each store's writes go through its `CoordinatorRuntime.run`, whose `apply` is the store's replay path.
A durable write is applied through that `apply` before it is answered; a failed append applies nothing
and answers the error (Kafka's controller managers: a change exists once its records are committed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.coordinator.metadata import (
    AclStore,
    ProducerIdBlock,
    ProducerIds,
    ScramCredentials,
    TopicExists,
    TopicRecord,
    TopicRegistry,
)
from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kcoord.coordinator.metadata.acl_store import AclRecord
from kcoord.coordinator.metadata.producer_ids import BLOCK_SIZE
from kcoord.coordinator.metadata.scram_credentials import ScramCredentialRecord
from kcoord.coordinator.metadata.scram_formatter import salted_password
from kcoord.coordinator.runtime import CoordinatorRuntime
from kcoord.protocol.errors import ErrorCode

R = TypeVar("R")
OnDone = Callable[[BaseException | None], None]

READ_T = AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*", AclOperation.READ,
                    AclPermissionType.ALLOW)  # fmt: skip


class HeldLog(Generic[R]):
    """A RecordLog whose appends settle when the test says: durable, or failed with an error."""

    def __init__(self) -> None:
        self.batches: list[list[R]] = []
        self._held: list[OnDone] = []

    def append(self, records: Sequence[R], on_done: OnDone) -> None:
        self.batches.append(list(records))
        self._held.append(on_done)

    def settle(self, error: BaseException | None = None) -> None:
        held, self._held = self._held, []
        for on_done in held:
            on_done(error)


class Tenant(Protocol[R]):
    runtime: CoordinatorRuntime[R]

    def apply(self, record: R) -> None: ...


def spy(store: Tenant[Any]) -> list[object]:
    """Record what the runtime applies, then apply it through the store's own replay path: a store
    that applied a write itself, beside the runtime, would change state with nothing recorded here."""
    assert store.runtime.apply == store.apply  # the runtime's apply is the store's replay path
    applied: list[object] = []

    def apply(record: Any) -> None:
        applied.append(record)
        store.apply(record)

    store.runtime.apply = apply
    return applied


# -- topics (ReplicationControlManager) ------------------------------------------------------------------
def test_a_topic_is_created_through_the_runtime_and_visible_only_once_durable() -> None:
    log: HeldLog[Any] = HeldLog()
    registry = TopicRegistry(log)
    applied = spy(registry)
    answers: list[BaseException | None] = []
    (record,) = registry.create([("t", 3, {})], answers.append)
    assert registry.get("t") is None and registry.is_pending("t") and answers == []
    log.settle()
    assert applied == log.batches[0] == [record] and registry.get("t") == record
    assert answers == [None] and not registry.is_pending("t")


def test_a_failed_topic_write_applies_nothing_and_answers_the_error() -> None:
    log: HeldLog[Any] = HeldLog()
    registry = TopicRegistry(log)
    applied = spy(registry)
    answers: list[BaseException | None] = []
    registry.create([("t", 3, {})], answers.append)
    failure = OSError("disk full")
    log.settle(failure)
    assert applied == [] and registry.get("t") is None and not registry.is_pending("t")
    assert answers == [failure] and registry.version == 0


def test_a_topic_refused_as_another_topics_applies_nothing_and_stays_pending_until_its_record() -> None:
    log: HeldLog[Any] = HeldLog()
    registry = TopicRegistry(log)
    applied = spy(registry)
    answers: list[BaseException | None] = []
    registry.create([("t", 3, {})], answers.append)
    log.settle(TopicExists(["t"]))
    assert applied == [] and registry.get("t") is None and registry.is_pending("t")
    assert isinstance(answers[0], TopicExists) and answers[0].names == {"t"}
    winner = TopicRecord("t", log.batches[0][0].topic_id, 5)
    registry.apply(winner)  # the other node's record, read from the cluster
    assert registry.get("t") == winner and not registry.is_pending("t")


# -- producer ids (ProducerIdControlManager) -------------------------------------------------------------
def test_a_producer_id_block_is_written_through_the_runtime_and_waited_for_only_when_new() -> None:
    log: HeldLog[ProducerIdBlock] = HeldLog()
    ids = ProducerIds(log)
    applied = spy(ids)
    got: list[tuple[int | None, BaseException | None]] = []
    ids.allocate(lambda pid, error: got.append((pid, error)))
    ids.allocate(lambda pid, error: got.append((pid, error)))
    assert got == [] and log.batches == [[ProducerIdBlock(BLOCK_SIZE)]]
    log.settle()
    assert applied == [ProducerIdBlock(BLOCK_SIZE)] and got == [(0, None), (1, None)]
    ids.allocate(lambda pid, error: got.append((pid, error)))  # ids left: no write, answered at once
    assert got[-1] == (2, None) and len(log.batches) == 1


def test_a_failed_producer_id_block_applies_nothing_and_fails_the_waiting_allocations() -> None:
    log: HeldLog[ProducerIdBlock] = HeldLog()
    ids = ProducerIds(log)
    applied = spy(ids)
    got: list[tuple[int | None, BaseException | None]] = []
    ids.allocate(lambda pid, error: got.append((pid, error)))
    failure = OSError("disk full")
    log.settle(failure)
    assert applied == [] and got == [(None, failure)]
    ids.allocate(lambda pid, error: got.append((pid, error)))  # the same block is written again
    assert log.batches[1] == [ProducerIdBlock(BLOCK_SIZE)]
    log.settle()
    assert got[-1] == (0, None)


def test_a_replayed_block_is_spent_and_the_next_allocation_takes_a_new_one() -> None:
    log: HeldLog[ProducerIdBlock] = HeldLog()
    ids = ProducerIds(log)
    ids.apply(ProducerIdBlock(BLOCK_SIZE))  # recovery: an earlier run may have handed these out
    got: list[tuple[int | None, BaseException | None]] = []
    ids.allocate(lambda pid, error: got.append((pid, error)))
    assert got == [] and log.batches == [[ProducerIdBlock(2 * BLOCK_SIZE)]]
    log.settle()
    assert got == [(BLOCK_SIZE, None)]


# -- ACLs (AclControlManager) ----------------------------------------------------------------------------
def test_acls_are_written_through_the_runtime_and_reach_the_authorizer_once_durable() -> None:
    log: HeldLog[Any] = HeldLog()
    acls = AclStore(StandardAuthorizer(), log)
    applied = spy(acls)
    answers: list[Any] = []
    acls.create([READ_T], answers.append)
    assert acls.authorizer.acls() == [] and answers == []
    log.settle()
    assert applied == [AclRecord(READ_T)] and acls.authorizer.acls() == [READ_T] and answers == [[None]]


def test_a_failed_acl_write_applies_nothing_and_answers_the_error() -> None:
    log: HeldLog[Any] = HeldLog()
    acls = AclStore(StandardAuthorizer(), log)
    applied = spy(acls)
    answers: list[Any] = []
    acls.create([READ_T], answers.append)
    log.settle(OSError("disk full"))
    assert applied == [] and acls.authorizer.acls() == []
    assert answers == [["Unknown error while trying to create ACL: disk full"]]


# -- SCRAM credentials (ScramControlManager) -------------------------------------------------------------
def _upsert(name: str) -> dict[str, Any]:
    salted = salted_password("SCRAM-SHA-256", "pw", b"salt", 4096)
    return {"name": name, "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": salted}


def test_a_credential_is_written_through_the_runtime_and_usable_once_durable() -> None:
    log: HeldLog[Any] = HeldLog()
    table = ScramCredentials(log)
    applied = spy(table)
    answers: list[Any] = []
    table.alter([], [_upsert("bob")], answers.append)
    assert table.lookup("bob", "SCRAM-SHA-256") is None and answers == []
    log.settle()
    (record,) = applied
    assert isinstance(record, ScramCredentialRecord) and applied == log.batches[0]
    assert table.lookup("bob", "SCRAM-SHA-256") == record.credential
    assert answers == [[{"user": "bob", "error_code": 0, "error_message": None}]]


def test_a_failed_credential_write_applies_nothing_and_answers_the_error() -> None:
    log: HeldLog[Any] = HeldLog()
    table = ScramCredentials(log)
    applied = spy(table)
    answers: list[Any] = []
    table.alter([], [_upsert("bob")], answers.append)
    log.settle(OSError("disk full"))
    assert applied == [] and table.lookup("bob", "SCRAM-SHA-256") is None
    assert answers == [
        [{"user": "bob", "error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": "disk full"}]
    ]


def test_bootstrapped_credentials_go_through_the_runtime_too() -> None:
    log: HeldLog[Any] = HeldLog()
    table = ScramCredentials(log)
    applied = spy(table)
    answers: list[Any] = []
    table.bootstrap({"admin": b"pw"}, 4096, answers.append)
    assert len(table) == 0 and answers == []
    log.settle()
    assert len(applied) == 2 and len(table) == 2 and answers == [[{"user": "admin", "error": None}] * 2]
    assert table.lookup("admin", "SCRAM-SHA-512") is not None
