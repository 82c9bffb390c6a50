"""A storage fault under transactions (issue 24 item 7): fsync EIO (the FUSE passthrough) while a
transaction ends follows the storage-fault policy (no acknowledgement, exit 75) and loses no
acknowledged transaction: after a restart every EndTxn that was answered NONE is committed, its
records readable under read_committed, and the unanswered one is in a state recovery can finish."""

from __future__ import annotations

import socket

from kcoord.protocol.errors import ErrorCode
from tests.faults.conftest import EXIT_STORAGE_FATAL, NONE, FuseFs
from tests.integration.conftest import wait_until
from tests.kcoord_process import KcoordServer
from tests.server.test_transactions_wire import (
    TOPIC,
    add_partitions,
    describe,
    end_txn,
    fetch_committed,
    init_pid,
    produce,
    txn_batch,
)
from tests.server.wire import connect, create_topic


def _transaction(sock: socket.socket, tid: str, values: list[bytes]) -> tuple[int, int]:
    init = init_pid(sock, tid, version=4)
    pid, epoch = init["producer_id"], init["producer_epoch"]
    assert add_partitions(sock, tid, pid, epoch, [0]) == {0: ErrorCode.NONE}
    assert produce(sock, 9, tid, txn_batch(pid, epoch, 0, values)) == ErrorCode.NONE
    return pid, epoch


def test_fsync_eio_while_a_transaction_ends_loses_no_acknowledged_commit(fusefs: FuseFs) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, TOPIC, 1)["error_code"] == NONE
            pid, epoch = _transaction(sock, "acked", [b"a1", b"a2"])
            assert end_txn(sock, "acked", pid, epoch, True)["error_code"] == ErrorCode.NONE
            second = _transaction(sock, "unacked", [b"u1"])
            fusefs.fail("fsync")
            try:
                answer = end_txn(sock, "unacked", *second, True)["error_code"]
                assert answer != ErrorCode.NONE, "an EndTxn acknowledged while fsync fails"
            except (ConnectionError, OSError):
                pass  # the server halted before answering
        assert server.proc is not None
        assert server.proc.wait(5) == EXIT_STORAGE_FATAL
        fusefs.fail("fsync", on=False)

        server.start()
        with connect(server.address) as sock:
            assert describe(sock, "acked")["transaction_state"] == "CompleteCommit"
            # the unacknowledged one: never durable (Ongoing, aborted later at its timeout), or its
            # PrepareCommit was on disk after all and recovery finished it
            state = describe(sock, "unacked")["transaction_state"]
            assert state in ("Ongoing", "PrepareCommit", "CompleteCommit"), state
            if state != "Ongoing":
                wait_until(lambda: describe(sock, "unacked")["transaction_state"] == "CompleteCommit", 10, "")
            read = fetch_committed(sock)
            values = [bytes(v) for v in _values(read["records"])]
            assert values[:2] == [b"a1", b"a2"], "the acknowledged commit is readable"
            assert values[2:] == ([] if state == "Ongoing" else [b"u1"])
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))


def _values(records: bytes | None) -> list[bytes]:
    from kcoord.protocol.record_batch import iter_records, read_header

    out: list[bytes] = []
    data = records or b""
    pos = 0
    while pos + 61 <= len(data):
        header = read_header(data, pos)
        batch = data[pos : pos + header.size]
        if not header.is_control:
            out.extend(r.value or b"" for r in iter_records(batch))
        pos += header.size
    return out
