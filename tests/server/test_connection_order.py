"""Kafka's per-connection guarantee (SocketServer mutes a channel while its request is in flight): a
request sees the effects of every earlier request on its connection (kcoord/broker/ordering.py).

Each case sends a write and the reads that can observe it in one `sendall` on one raw socket, so the
server receives them together, and asserts each read saw the write. The server fsyncs every write
(`--fsync always`): a write's effect lands after a file write in a thread, so a read started at
receipt would see the old state. Here the data plane, offsets and transactions, and the librdkafka
program that found it; the admin, security and group APIs in test_connection_order_admin.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import REPO, KcoordServer
from tests.server.order_wire import (
    EARLIEST,
    LATEST,
    Request,
    committed,
    fetch,
    list_offsets,
    offset_commit,
    offset_fetch,
    partition_of,
    pipelined,
    produce,
    serve,
    topic,
)
from tests.server.test_dataplane_wire import batch
from tests.server.test_transactions_wire import txn_batch
from tests.server.wire import call, connect

pytestmark = pytest.mark.timeout(120)

CLIENTS = Path(__file__).parent / "clients"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    yield from serve(tmp_path_factory)


@pytest.fixture
def sock(server: KcoordServer) -> Iterator[socket.socket]:
    with connect(server.address) as s:
        yield s


# -- the data plane ------------------------------------------------------------------------------------
def test_fetch_and_list_offsets_see_the_produce_before_them(sock: socket.socket) -> None:
    name = topic(sock, "order-produce")
    produced, fetched, latest = pipelined(
        sock, produce(name, batch(3)), fetch(name), list_offsets(name, LATEST)
    )
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    part = partition_of(fetched)
    assert (part["error_code"], part["high_watermark"]) == (ErrorCode.NONE, 3) and part["records"]
    assert partition_of(latest, "topics")["offset"] == 3


def test_a_produce_without_response_is_seen_by_the_list_offsets_after_it(sock: socket.socket) -> None:
    name = topic(sock, "order-acks0")
    (latest,) = pipelined(sock, produce(name, batch(4), acks=0), list_offsets(name, LATEST))
    assert partition_of(latest, "topics")["offset"] == 4


def test_list_offsets_and_fetch_see_the_log_start_delete_records_moved(sock: socket.socket) -> None:
    name = topic(sock, "order-delete-records")
    assert (
        pipelined(sock, produce(name, batch(5)))[0]["responses"][0]["partition_responses"][0]["base_offset"]
        == 0
    )
    deleted = {"name": name, "partitions": [{"partition_index": 0, "offset": 2}]}
    moved, earliest, fetched = pipelined(
        sock, (21, 2, {"topics": [deleted], "timeout_ms": 5000}), list_offsets(name, EARLIEST), fetch(name, 0)
    )
    assert partition_of(moved, "topics")["low_watermark"] == 2
    assert partition_of(earliest, "topics")["offset"] == 2
    assert partition_of(fetched)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_parked_fetch_does_not_see_a_produce_sent_after_it(sock: socket.socket) -> None:
    """Kafka reads the Produce only once the Fetch is answered: the Fetch waits out max_wait_ms empty."""
    name = topic(sock, "order-parked-fetch")
    fetched, produced = pipelined(sock, fetch(name, wait_ms=300), produce(name, batch(2)))
    part = partition_of(fetched)
    assert (part["error_code"], part["high_watermark"], part["records"]) == (ErrorCode.NONE, 0, b"")
    assert produced["responses"][0]["partition_responses"][0]["base_offset"] == 0


# -- offsets -------------------------------------------------------------------------------------------
def test_offset_fetch_sees_the_offset_commit_before_it(sock: socket.socket) -> None:
    name = topic(sock, "order-commit")
    commit, fetched = pipelined(sock, offset_commit("order-g1", name, 7), offset_fetch("order-g1", name))
    assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, 7)


def test_offset_fetch_sees_the_offset_delete_before_it(sock: socket.socket) -> None:
    name = topic(sock, "order-offset-delete")
    assert (
        committed(pipelined(sock, offset_commit("order-g2", name, 5), offset_fetch("order-g2", name))[1])[1]
        == 5
    )
    delete = {"group_id": "order-g2", "topics": [{"name": name, "partitions": [{"partition_index": 0}]}]}
    deleted, fetched = pipelined(sock, (47, 0, delete), offset_fetch("order-g2", name))
    assert deleted["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, -1)


def _begin(sock: socket.socket, tid: str) -> tuple[int, int]:
    """A transactional producer's id and epoch (InitProducerId v5, Transactions V1 from here on)."""
    body = {
        "transactional_id": tid,
        "transaction_timeout_ms": 60_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    answer = call(sock, 22, 5, body)
    assert answer["error_code"] == ErrorCode.NONE
    return answer["producer_id"], answer["producer_epoch"]


def _end(tid: str, pid: int, epoch: int) -> Request:
    return 26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True}


def test_offset_fetch_sees_the_offsets_a_committed_transaction_wrote(sock: socket.socket) -> None:
    name, tid, group = topic(sock, "order-txn-offsets"), "order-tid-1", "order-g3"
    pid, epoch = _begin(sock, tid)
    add = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    assert call(sock, 25, 3, add)["error_code"] == ErrorCode.NONE
    partition = {
        "partition_index": 0,
        "committed_offset": 11,
        "committed_leader_epoch": -1,
        "committed_metadata": None,
    }
    txn_commit = {
        "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": name, "partitions": [partition]}],
    }  # fmt: skip
    wrote, ended, fetched = pipelined(
        sock, (28, 3, txn_commit), _end(tid, pid, epoch), offset_fetch(group, name, require_stable=True)
    )
    assert wrote["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert ended["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, 11)


def test_end_txn_is_seen_by_describe_transactions_and_its_markers_by_a_read_committed_fetch(
    sock: socket.socket,
) -> None:
    """EndTxn is answered once its Prepare record is durable and the markers follow, in Kafka too
    (TransactionCoordinator.endTransaction): a read_committed Fetch after it waits for them."""
    name, tid = topic(sock, "order-txn"), "order-tid-2"
    pid, epoch = _begin(sock, tid)
    add = {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": name, "partitions": [0]}],
    }  # fmt: skip
    call(sock, 24, 3, add)
    (produced,) = pipelined(sock, produce(name, txn_batch(pid, epoch, 0, [b"a", b"b"]), tid=tid))
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    ended, described, fetched = pipelined(
        sock,
        _end(tid, pid, epoch),
        (65, 0, {"transactional_ids": [tid]}),
        fetch(name, committed=True, wait_ms=10_000),
    )
    assert ended["error_code"] == ErrorCode.NONE
    assert described["transaction_states"][0]["transaction_state"] in ("PrepareCommit", "CompleteCommit")
    part = partition_of(fetched)
    assert part["error_code"] == ErrorCode.NONE and part["records"] and part["last_stable_offset"] == 3


# -- the stock client that found it ---------------------------------------------------------------------
def test_librdkafka_list_offsets_right_after_delete_records_sees_the_new_start(server: KcoordServer) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(CLIENTS / "confluent_delete_then_earliest.py"),
            server.bootstrap,
            "order-rdkafka",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"low_watermark": 2, "earliest": 2}
