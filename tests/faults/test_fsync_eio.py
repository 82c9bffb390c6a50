"""fsync EIO (a FUSE passthrough) under commit load: nothing acknowledged while it fails, exit 75
within 1 s, and a restart on the same directory has every acknowledged commit and verifies."""

from __future__ import annotations

import sys
import time

from tests.faults.conftest import EXIT_STORAGE_FATAL, NONE, NOT_COORDINATOR, FuseFs, commit, committed
from tests.kcoord_fork import run_command
from tests.kcoord_process import KcoordServer
from tests.server.wire import connect, create_topic


def test_fsync_eio_exits_with_the_documented_code_and_loses_nothing(fusefs: FuseFs) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            acked = -1
            for i in range(20):
                assert commit(sock, i) == NONE
                acked = i
            fusefs.fail("fsync")
            failed_at = time.monotonic()
            try:
                code = commit(sock, 100)
                assert code == NOT_COORDINATOR, "no acknowledgement while fsync fails"
            except (ConnectionError, OSError, AssertionError) as exc:
                if isinstance(exc, AssertionError) and "acknowledgement" in str(exc):
                    raise
        assert server.proc is not None
        returncode = server.proc.wait(5)
        assert returncode == EXIT_STORAGE_FATAL
        assert time.monotonic() - failed_at < 1.5
        assert (
            server.count(r"CRITICAL .*fatal storage fault: fsync failed on .*\.log with EIO \(errno 5\)") == 1
        )
        fusefs.fail("fsync", on=False)

        server.start()
        with connect(server.address) as sock:
            assert committed(sock) == acked
        server.stop()
        verify = run_command(
            [sys.executable, "-m", "kcoord", "storage", "verify", "--data-dir", str(server.data_dir)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))


def test_write_eio_is_transient_and_loses_nothing(fusefs: FuseFs) -> None:
    server = KcoordServer(fusefs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            assert commit(sock, 1) == NONE
            fusefs.fail("write")
            assert [commit(sock, 2 + i) for i in range(5)] == [NOT_COORDINATOR] * 5
            assert committed(sock) == 1 and server.alive()
            fusefs.fail("write", on=False)
            assert commit(sock, 10) == NONE
        server.stop(9)
        server.start()
        with connect(server.address) as sock:
            assert committed(sock) == 10
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))
