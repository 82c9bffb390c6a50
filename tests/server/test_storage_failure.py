"""A real write failure under a running server: nothing undurable is acknowledged, and it recovers.

The failure is real, not injected: `prlimit` lowers the server process's RLIMIT_FSIZE so that the
kernel refuses the next append to the active segment with EFBIG (Python ignores SIGXFSZ). Storage
cuts the segment back to its last good record; OffsetCommit answers NOT_COORDINATOR (retriable, as
Kafka answers a KafkaStorageException) and the in-memory offsets keep the last acknowledged commit.
Raising the limit again lets appends go on without a restart, and a restart after SIGKILL reads back
exactly the acknowledged
commits.
"""

from __future__ import annotations

import resource
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

pytestmark = pytest.mark.server_args("--fsync", "always")

OFFSET_COMMIT, OFFSET_FETCH, METADATA = 8, 9, 3
JOIN_GROUP, SYNC_GROUP, LIST_GROUPS = 11, 14, 16
NONE, NOT_COORDINATOR = 0, 16
COMMITS = 2000  # bounded: at ~100 bytes per record the 8 KiB of headroom runs out long before


def _commit(sock: Any, offset: int) -> int:
    body = {
        "group_id": "g",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": -1,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": f"m{offset}"}
                ],
            }
        ],
    }
    response = call(sock, OFFSET_COMMIT, 3, body)
    return int(response["topics"][0]["partitions"][0]["error_code"])


def _committed(sock: Any) -> tuple[int, str]:
    response = call(
        sock, OFFSET_FETCH, 3, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}
    )
    partition = response["topics"][0]["partitions"][0]
    assert partition["error_code"] == NONE
    return partition["committed_offset"], partition["metadata"]


def _active_segment(data_dir: Path) -> Path:
    return max(data_dir.glob("*.log"), key=lambda p: p.name)


def _limit_file_size(pid: int, limit: int | None) -> None:
    """Lower (or, with None, restore) only the soft limit: raising a hard limit needs privileges."""
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard if limit is None else limit, hard))


def test_failed_appends_answer_not_coordinator_and_are_never_acknowledged(
    server: KcoordServer,
) -> None:
    data_dir = server.data_dir
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == NONE
        pid = server.pid
        size_before = _active_segment(data_dir).stat().st_size
        _limit_file_size(pid, size_before + 8192)

        acknowledged, errors = -1, []
        for offset in range(COMMITS):
            error = _commit(sock, offset)
            if error == NONE:
                assert not errors, "a commit succeeded after a failed one while the limit held"
                acknowledged = offset
            else:
                errors.append(error)
                if len(errors) == 5:
                    break
        assert acknowledged > 0, "the limit left no room for a single commit"
        assert errors == [NOT_COORDINATOR] * 5
        # The failed commits changed nothing: the group still reads the last acknowledged one.
        assert _committed(sock) == (acknowledged, f"m{acknowledged}")
        # The failed bytes were cut back: the segment never exceeds the limit's good prefix.
        assert _active_segment(data_dir).stat().st_size <= size_before + 8192
        # Other requests keep being served while storage refuses appends.
        metadata = call(sock, METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
        assert [t["name"] for t in metadata["topics"] if not t["is_internal"]] == ["t"]

        # Space comes back: appends go on without a restart.
        _limit_file_size(pid, None)
        assert _commit(sock, 100_000) == NONE
        assert _committed(sock) == (100_000, "m100000")
        server.wait_for("storage: refusing writes .*EFBIG")
    server.stop(signal.SIGKILL)

    server.start()
    with connect(server.address) as sock:
        assert _committed(sock) == (100_000, "m100000")


def test_failed_appends_before_a_crash_are_not_replayed(server: KcoordServer) -> None:
    data_dir = server.data_dir
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == NONE
        assert _commit(sock, 7) == NONE
        _limit_file_size(server.pid, _active_segment(data_dir).stat().st_size)
        assert _commit(sock, 8) == NOT_COORDINATOR
        assert _committed(sock) == (7, "m7")
    server.stop(signal.SIGKILL)

    server.start()
    with connect(server.address) as sock:
        assert _committed(sock) == (7, "m7")


def _join_and_sync(sock: Any, member_id: str = "") -> tuple[str, int, int]:
    """One member (re)joins group "s" (v3: no MEMBER_ID_REQUIRED round trip) and syncs.

    (member id, join error, sync error).
    """
    join = {
        "group_id": "s",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}],
    }
    joined = call(sock, JOIN_GROUP, 3, join)
    member = joined["member_id"]
    if joined["error_code"] != NONE:
        return member, joined["error_code"], NONE
    sync = {
        "group_id": "s",
        "generation_id": joined["generation_id"],
        "member_id": member,
        "assignments": [{"member_id": member, "assignment": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}],
    }
    return member, NONE, call(sock, SYNC_GROUP, 2, sync)["error_code"]


def test_group_metadata_that_cannot_be_stored_fails_the_sync(server: KcoordServer) -> None:
    """Kafka answers SyncGroup only once the group's metadata is durable; a failed write is retriable."""
    data_dir = server.data_dir
    with connect(server.address) as sock:
        _limit_file_size(server.pid, _active_segment(data_dir).stat().st_size)
        member, join_error, sync_error = _join_and_sync(sock)
        assert (join_error, sync_error) == (NONE, NOT_COORDINATOR)
        _limit_file_size(server.pid, None)
        # The member rejoins with its id, as a client does after a retriable sync error.
        assert _join_and_sync(sock, member) == (member, NONE, NONE)
    server.stop(signal.SIGKILL)
    server.start()
    with connect(server.address) as sock:
        groups = call(sock, LIST_GROUPS, 2, {})["groups"]
        assert [g["group_id"] for g in groups] == ["s"]
