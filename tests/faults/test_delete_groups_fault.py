"""A DeleteGroups whose write fails (a real full tmpfs) is all or nothing: the group and its offsets
are still there, a retry once space returns deletes them, and a restart agrees (Kafka's runtime
reverts its timeline when a write fails)."""

from __future__ import annotations

from tests.faults.conftest import NONE, NOT_COORDINATOR, Tmpfs, commit, committed
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

DESCRIBE_GROUPS, DELETE_GROUPS = 15, 42
GROUP_ID_NOT_FOUND = 69
PARTITIONS = 128


def _state(sock: object, group: str) -> str:
    body = {"groups": [group], "include_authorized_operations": False}
    return str(call(sock, DESCRIBE_GROUPS, 5, body)["groups"][0]["group_state"])  # type: ignore[arg-type]


def _delete(sock: object, group: str) -> int:
    return int(call(sock, DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]["error_code"])  # type: ignore[arg-type]


def test_a_failed_delete_groups_changes_nothing(tmpfs: Tmpfs) -> None:
    server = KcoordServer(tmpfs.path / "data", "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", PARTITIONS)["error_code"] == NONE
            for partition in range(PARTITIONS):  # tombstones of more than a page: the write needs space
                assert commit(sock, 5, partition) == NONE
            filler = tmpfs.fill()
            assert _delete(sock, "g") == NOT_COORDINATOR
            assert _state(sock, "g") == "Empty" and committed(sock) == 5
            assert _delete(sock, "g") == NOT_COORDINATOR  # not GROUP_ID_NOT_FOUND: nothing was deleted
            filler.unlink()
            assert _delete(sock, "g") == NONE
            assert _delete(sock, "g") == GROUP_ID_NOT_FOUND
        server.restart()
        with connect(server.address) as sock:
            assert _state(sock, "g") == "Dead"
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))
