"""Process lifecycle: SIGTERM/SIGINT shutdown, restart durability of topics, `kcoord storage dump`."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kcoord import storage
from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.persistence import to_storage
from tests.kcoord_fork import DISABLE_ENV, ForkedProcess
from tests.kcoord_process import REPO, KcoordServer
from tests.server.wire import call, connect, create_topic, decode_response, is_closed, read_frame, send

METADATA, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 3, 19, 20, 37


def _create(address: tuple[str, int], name: str, partitions: int) -> None:
    with connect(address) as sock:
        assert create_topic(sock, name, partitions)["error_code"] == 0


def _topics(address: tuple[str, int]) -> dict[str, int]:
    with connect(address) as sock:
        response = call(sock, METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
    return {t["name"]: len(t["partitions"]) for t in response["topics"]}


@pytest.mark.parametrize("start", ["fresh-interpreter", "forked"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_cleanly_with_a_snapshot(tmp_path: Path, sig: int, start: str) -> None:
    """Also the entry point itself, `python -m kcoord serve` in an interpreter of its own, as users start
    it; the rest of the suite forks its servers from a warm interpreter (tests/kcoord_fork.py)."""
    env = {DISABLE_ENV: "1"} if start == "fresh-interpreter" else {}
    proc = KcoordServer(tmp_path / "data", env=env)
    proc.start()
    try:
        _create(proc.address, "snap", 2)
        idle = connect(proc.address)  # an open idle connection must not block shutdown
        assert proc.stop(sig) == 0
        idle.close()
    finally:
        proc.kill()
    assert list((tmp_path / "data").glob("*.snap")), "clean shutdown writes a snapshot"
    assert any("stopped" in line for line in proc.lines)
    assert isinstance(proc.proc, ForkedProcess) == (start == "forked")


async def _write_offsets(data_dir: Path, commits: int) -> None:
    """A data dir holding `commits` offset commits, written with storage directly (fast, no fsync)."""
    log = await storage.Log.open(data_dir, storage.LogConfig(fsync_policy="never"))
    for start in range(0, commits, 1000):
        records = [
            to_storage(OffsetCommitRecord(f"g{i % 100}", "t", i // 100, i, -1, "", 1_700_000_000_000))
            for i in range(start, start + 1000)
        ]
        await asyncio.gather(*(log.append([record]) for record in records))
    await log.close(write_snapshot=False)


def test_listener_opens_only_after_recovery(tmp_path: Path) -> None:
    """Clients are refused until every record is loaded: a connection accepted earlier would sit in
    the kernel's backlog and be answered from half-loaded state once the loop is free again."""
    data_dir = tmp_path / "data"
    asyncio.run(_write_offsets(data_dir, 100_000))
    with socket.socket() as probe:  # a free port, so connects can start before the server says where
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first_connect: list[float] = []
    stop = threading.Event()

    def connect_until_accepted() -> None:
        while not stop.is_set():
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    first_connect.append(time.monotonic())
                    return
            time.sleep(0.002)

    prober = threading.Thread(target=connect_until_accepted, daemon=True)
    prober.start()
    proc = KcoordServer(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        proc.start()
        listening_seen = time.monotonic()  # just after the "listening on" line arrived
        recovered = proc.wait_for(r"recovered data_dir=.* seconds=(\d+\.\d+)")
        prober.join(10)
    finally:
        stop.set()
        proc.kill()
    recovery_s = float(recovered.group(1))
    assert recovery_s >= 0.2, f"recovery took {recovery_s}s: too short to tell early from late listening"
    assert first_connect, "never connected"
    # An early listener would have accepted `recovery_s` before the "listening on" line.
    assert first_connect[0] > listening_seen - recovery_s / 2


def test_topics_and_partition_counts_survive_sigkill(tmp_path: Path) -> None:
    proc = KcoordServer(tmp_path / "data", "--fsync", "always")
    proc.start()
    try:
        _create(proc.address, "keep", 3)
        _create(proc.address, "gone", 1)
        _create(proc.address, "grown", 1)
        with connect(proc.address) as sock:
            body = {"topics": [{"name": "grown", "count": 6, "assignments": None}], "timeout_ms": 1000}
            assert call(sock, CREATE_PARTITIONS, 1, body)["results"][0]["error_code"] == 0
            deleted = call(sock, DELETE_TOPICS, 1, {"topic_names": ["gone"], "timeout_ms": 1000})
            assert deleted["responses"][0]["error_code"] == 0
        before = _topics(proc.address)
        proc.kill()
        proc.start()
        assert _topics(proc.address) == before == {"keep": 3, "grown": 6}
    finally:
        proc.kill()


def test_storage_dump_renders_topic_records(tmp_path: Path) -> None:
    proc = KcoordServer(tmp_path / "data")
    proc.start()
    try:
        _create(proc.address, "dumped", 2)
        assert proc.stop() == 0
    finally:
        proc.kill()
    out = subprocess.run(
        [sys.executable, "-m", "kcoord", "storage", "dump", "--data-dir", str(tmp_path / "data")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "topic name=dumped partitions=2" in out.stdout


def test_env_vars_configure_the_server(tmp_path: Path) -> None:
    proc = KcoordServer(tmp_path / "data", env={"KCOORD_NUM_PARTITIONS": "3", "KCOORD_NODE_ID": "7"})
    proc.start()
    try:
        with connect(proc.address) as sock:
            response = call(
                sock, METADATA, 4, {"topics": [{"name": "env"}], "allow_auto_topic_creation": True}
            )
        assert [b["node_id"] for b in response["brokers"]] == [7]
        assert len(response["topics"][0]["partitions"]) == 3
    finally:
        proc.kill()


OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, DESCRIBE_GROUPS = 8, 9, 11, 15


def test_committed_offsets_and_groups_survive_sigkill(tmp_path: Path) -> None:
    proc = KcoordServer(tmp_path / "data", "--fsync", "always")
    proc.start()
    try:
        _create(proc.address, "off", 2)
        commit = {
            "group_id": "keeper",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "off",
                    "partitions": [
                        {"partition_index": 1, "committed_offset": 42, "committed_metadata": "meta"}
                    ],
                }
            ],
        }
        with connect(proc.address) as sock:
            response = call(sock, OFFSET_COMMIT, 2, commit)
            assert response["topics"][0]["partitions"][0]["error_code"] == 0
        proc.kill()
        proc.start()
        fetch = {"group_id": "keeper", "topics": [{"name": "off", "partition_indexes": [0, 1]}]}
        with connect(proc.address) as sock:
            fetched = call(sock, OFFSET_FETCH, 2, fetch)
        partitions = fetched["topics"][0]["partitions"]
        assert [(p["partition_index"], p["committed_offset"], p["metadata"]) for p in partitions] == [
            (0, -1, ""),
            (1, 42, "meta"),
        ]
    finally:
        proc.kill()


def _wait_for_group_state(address: tuple[str, int], group_id: str, state: str) -> None:
    """Poll DescribeGroups (bounded) until the group reaches `state`."""
    with connect(address) as sock:
        for attempt in range(200):
            described = call(sock, DESCRIBE_GROUPS, 0, {"groups": [group_id]}, correlation_id=attempt)
            if described["groups"][0]["group_state"] == state:
                return
            time.sleep(0.01)  # polling interval of a bounded loop, not a fixed wait
    raise AssertionError(f"group {group_id} never reached {state}")


def test_sigterm_answers_a_parked_join_then_exits_0(tmp_path: Path) -> None:
    # A long initial rebalance delay parks the first JoinGroup in the delayed-join purgatory.
    proc = KcoordServer(tmp_path / "data", "--group-initial-rebalance-delay-ms", "60000")
    proc.start()
    try:
        join = {
            "group_id": "parked",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 60_000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}],
        }
        with connect(proc.address) as sock:
            send(sock, JOIN_GROUP, 3, 9, join)  # v3: no MEMBER_ID_REQUIRED round trip
            _wait_for_group_state(proc.address, "parked", "PreparingRebalance")
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGTERM)
            correlation_id, body = decode_response(JOIN_GROUP, 3, read_frame(sock))
            assert (correlation_id, body["error_code"]) == (9, 16)  # NOT_COORDINATOR: rediscover, retry
            assert is_closed(sock)
        # The first SIGTERM's exit: stop() would send another if the shutdown were still running (a
        # loaded machine), and a second SIGTERM during shutdown is not this test's question.
        assert proc.proc.wait(30) == 0
    finally:
        proc.kill()
