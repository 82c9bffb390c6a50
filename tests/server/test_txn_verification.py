"""The transaction-verification port on a real server (in process, raw sockets): the remote implementation
asks an owner over the wire and reads its answer as the owner's own coordinator answers, and Produce and
TxnOffsetCommit ask whatever `ctx.verification` the composition root put there, once per request."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.broker.verification import Partition, TxnAnswers, TxnCheck
from kcoord.cluster.membership import ClusterView, NodeInfo
from kcoord.cluster.txn_verify import OwnerAnswers, RemoteVerification
from kcoord.coordinator.runtime import Phase
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.coordinator.transactions import offsets_partition_for
from kcoord.protocol.errors import ErrorCode
from tests.controls.conftest import Served
from tests.server.test_transactions_wire import add_partitions, init_pid, produce, txn_batch
from tests.server.wire import call, connect, create_topic

pytestmark = pytest.mark.timeout(60)

T0, T1 = ("t", 0), ("t", 1)


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "data")
    try:
        yield server
    finally:
        server.close()


def _connect(served: Served) -> socket.socket:
    assert served.app.bound is not None
    sock = connect(("127.0.0.1", served.app.bound.port))
    assert create_topic(sock, "t", 2)["error_code"] == 0
    return sock


def _remote(port: int, tid: str) -> RemoteVerification:
    view = ClusterView({1: NodeInfo(1, "127.0.0.1", port, None)}, {shard_of(tid): 1})
    return RemoteVerification(lambda shard: Phase.NOT_OWNED, lambda: view, 50)


def _ask(remote: RemoteVerification, check: TxnCheck) -> TxnAnswers:
    """The answers `remote` hands on, asked from a loop of the test's own (another node's, as it were)."""

    async def ask() -> TxnAnswers:
        got: asyncio.Future[TxnAnswers] = asyncio.get_running_loop().create_future()
        remote.answers(OwnerAnswers({}), check, "PLAINTEXT", got.set_result)
        return await asyncio.wait_for(got, 15)

    return asyncio.run(ask())


def _local(owner: Served, check: TxnCheck) -> dict[Partition, ErrorCode]:
    async def verify() -> dict[Partition, ErrorCode]:
        assert owner.app.state is not None
        ids = (check.transactional_id, check.producer_id, check.producer_epoch)
        return dict(owner.app.state.transactions.verify_partitions(*ids, check.partitions))

    return owner.run(verify())  # type: ignore[no-any-return]


def test_the_remote_verification_reads_the_owners_answer_as_its_own_coordinator_gives_it(
    owner: Served,
) -> None:
    sock = _connect(owner)
    answer = init_pid(sock, "tx")
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    assert add_partitions(sock, "tx", pid, epoch, [0]) == {0: ErrorCode.NONE}
    assert owner.app.bound is not None
    remote = _remote(owner.app.bound.port, "tx")
    check = TxnCheck("tx", pid, epoch, (T0, T1), add=False)
    asked = _ask(remote, check).verify_partitions("tx", pid, epoch, check.partitions)
    assert asked == _local(owner, check)
    assert asked[T0] is ErrorCode.NONE and asked[T1] is not ErrorCode.NONE
    fenced = TxnCheck("tx", pid, epoch - 1 if epoch else epoch + 1, (T0,), add=False)
    assert _ask(remote, fenced).verify_partitions("tx", pid, 0, (T0,)) == _local(owner, fenced)


def test_an_unreachable_owner_is_coordinator_not_available(owner: Served) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens there once closed
    answers = _ask(_remote(port, "tx"), TxnCheck("tx", 1, 0, (T0,), add=False))
    assert answers.verify_partitions("tx", 1, 0, [T0]) == {T0: ErrorCode.COORDINATOR_NOT_AVAILABLE}


class _Recording:
    """A `TxnVerification` that records what it is asked and answers with `answers`."""

    def __init__(self, answers: TxnAnswers) -> None:
        self.answers_given = answers
        self.asked: list[TxnCheck] = []

    def answers(
        self, local: TxnAnswers, check: TxnCheck, listener: str, ready: Callable[[TxnAnswers], None]
    ) -> None:
        self.asked.append(check)
        ready(self.answers_given)


def _install(owner: Served, verification: Any) -> None:
    async def install() -> None:
        assert owner.app.ctx is not None
        owner.app.ctx.verification = verification

    owner.run(install())


def test_produce_asks_the_port_once_per_request_for_its_transactional_batches(owner: Served) -> None:
    sock = _connect(owner)
    answer = init_pid(sock, "tx")
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    recording = _Recording(OwnerAnswers({T0: ErrorCode.TRANSACTION_ABORTABLE}))
    _install(owner, recording)
    assert produce(sock, 9, "tx", txn_batch(pid, epoch, 0, [b"a"])) is ErrorCode.INVALID_TXN_STATE
    assert produce(sock, 9, "tx", txn_batch(pid, epoch, 0, [b"a"], transactional=False)) is ErrorCode.NONE
    assert recording.asked == [TxnCheck("tx", pid, epoch, (T0,), add=False)]  # the plain batch asks nothing


def test_txn_offset_commit_asks_the_port_for_the_groups_offsets_partition(owner: Served) -> None:
    sock = _connect(owner)
    answer = init_pid(sock, "tx")
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    partition = offsets_partition_for("g")
    recording = _Recording(OwnerAnswers({partition: ErrorCode.PRODUCER_FENCED}))
    _install(owner, recording)
    body = {
        "transactional_id": "tx", "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                 "committed_leader_epoch": -1, "committed_metadata": None}]}],
    }  # fmt: skip
    answered = call(sock, 28, 3, body)["topics"][0]["partitions"][0]["error_code"]
    assert answered == ErrorCode.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED as the group coordinator maps it
    assert recording.asked == [TxnCheck("tx", pid, epoch, (partition,), add=False)]


def test_under_transactions_v2_the_owner_is_asked_to_add_the_partitions(owner: Served) -> None:
    sock = _connect(owner)
    answer = init_pid(sock, "tx")
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    assert owner.app.bound is not None
    check = TxnCheck("tx", pid, epoch, (T0, T1), add=True)  # AddPartitionsToTxn v5
    added: list[ErrorCode] = []
    _ask(_remote(owner.app.bound.port, "tx"), check).add_partitions_implicit(
        "tx", pid, epoch, (T0, T1), added.append
    )
    assert added == [ErrorCode.NONE]
    assert _local(owner, TxnCheck("tx", pid, epoch, (T0, T1), add=False)) == {
        T0: ErrorCode.NONE,
        T1: ErrorCode.NONE,
    }
