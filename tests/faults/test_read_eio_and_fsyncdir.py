"""EIO on reads and failed directory fsyncs (a FUSE passthrough): both are fatal, as Kafka takes a
log directory offline on an IOException and halts when it was the only one.

* recovery that cannot read its own files exits 75 with one CRITICAL line, not 1 with a traceback;
* a Fetch or ListOffsets that cannot read a partition's segment answers KAFKA_STORAGE_ERROR, then the server
  exits 75 (Kafka: ReplicaManager.readFromLog -> LogDirFailureChannel -> halt);
* a partition's first segment is acknowledged only once its directory entry is durable: a failed
  fsync of the directory is fatal and nothing is acknowledged.
A restart without the fault has every acknowledged record.
"""

from __future__ import annotations

import pytest

from tests.faults.conftest import EXIT_STORAGE_FATAL, KAFKA_STORAGE_ERROR, NONE, FuseFs, commit, committed
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, fetch, list_offset, produce
from tests.server.wire import connect, create_topic

EIO_LINE = r"\(EIO, errno 5\)"
TIMESTAMP = 1_700_000_000_000  # batch()'s first record


def _exit_code(server: KcoordServer) -> int:
    assert server.proc is not None
    return server.proc.wait(10)


def test_eio_while_recovering_exits_75_with_one_line(fusefs: FuseFs) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            for i in range(5):
                assert commit(sock, i) == NONE
        server.stop(9)  # no snapshot: the next start must read the segments
        fusefs.fail("read")
        with pytest.raises(AssertionError, match="exited=True"):
            server.start(timeout=20)
        assert _exit_code(server) == EXIT_STORAGE_FATAL
        line = rf"CRITICAL .*startup failed, fatal storage fault: read of .*\.log failed: .*{EIO_LINE}"
        assert server.count(line) == 1
        assert server.count("Traceback") == 0

        fusefs.fail("read", on=False)
        server.start()
        with connect(server.address) as sock:
            assert committed(sock) == 4
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))


@pytest.mark.parametrize("api", ["fetch", "list_offsets"])
def test_eio_reading_a_segment_answers_kafka_storage_error_then_exits_75(fusefs: FuseFs, api: str) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            assert produce(sock, "t", 0, batch(5))["error_code"] == NONE
            stored = fetch(sock, "t", 0, 0)["records"]
            assert stored
            fusefs.fail("read")
            if api == "fetch":
                answer = fetch(sock, "t", 0, 0)
                assert answer["error_code"] == KAFKA_STORAGE_ERROR and not answer["records"]
            else:  # a timestamp lookup reads the batch
                answer = list_offset(sock, "t", 0, TIMESTAMP + 2)
                assert answer["error_code"] == KAFKA_STORAGE_ERROR
        assert _exit_code(server) == EXIT_STORAGE_FATAL
        assert server.count(r"CRITICAL .*fatal storage fault: read failed on .*\.log with EIO") == 1

        fusefs.fail("read", on=False)
        server.start()
        with connect(server.address) as sock:
            assert fetch(sock, "t", 0, 0)["records"] == stored
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))


def test_a_failed_directory_fsync_is_fatal_and_acknowledges_nothing(fusefs: FuseFs) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "old", 1)["error_code"] == NONE
            assert produce(sock, "old", 0, batch(3))["error_code"] == NONE
            assert create_topic(sock, "new", 1)["error_code"] == NONE
            fusefs.fail("fsyncdir")
            # the partition's first segment file is created now: its directory must be fsynced
            assert produce(sock, "new", 0, batch(3))["error_code"] == KAFKA_STORAGE_ERROR
        assert _exit_code(server) == EXIT_STORAGE_FATAL
        assert server.count(r"CRITICAL .*fatal storage fault: fsync_dir failed on .*new-0 with EIO") == 1

        fusefs.fail("fsyncdir", on=False)
        server.start()
        with connect(server.address) as sock:
            assert fetch(sock, "old", 0, 0)["records"]
            assert fetch(sock, "new", 0, 0)["high_watermark"] == 0  # nothing acknowledged, nothing kept
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))
