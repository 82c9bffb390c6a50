"""Cluster nodes as real processes (`python -m kcoord serve --cluster DSN --node-id N`) and the raw
wire calls the cluster tests make against them."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.ports import free_port as free_port  # re-exported: tests/cluster/test_operate.py
from tests.server.wire import call, connect

T = TypeVar("T")

NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, LOAD_IN_PROGRESS = 16, 15, 14
RETRIABLE = {NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, LOAD_IN_PROGRESS}


def init_cluster(dsn: str, num_shards: int = 50) -> None:
    done = run_command(
        [sys.executable, "-m", "kcoord", "cluster", "init", "--cluster", dsn,
         "--num-shards", str(num_shards)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


class Node(KcoordServer):
    def __init__(
        self, root: Path, node_id: int, dsn: str, ttl_ms: int, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(
            root / f"node{node_id}", "--cluster", dsn, "--node-id", str(node_id),
            "--lease-ttl-ms", str(ttl_ms), *extra, log_path=root / f"node{node_id}.log", env=env,
        )  # fmt: skip
        self.node_id = node_id
        self.name = f"node{node_id}"

    def argv(self) -> list[str]:
        argv = super().argv()
        if "--listeners" in self.extra:  # they replace --listen (the first one is the address used here)
            at = argv.index("--listen")
            del argv[at : at + 2]
        return argv


@contextmanager
def nodes(
    root: Path, dsn: str, ids: list[int], ttl_ms: int = 1500, *extra: str, env: dict[str, str] | None = None
) -> Iterator[list[Node]]:
    started: list[Node] = []
    try:
        for node_id in ids:
            node = Node(root, node_id, dsn, ttl_ms, *extra, env=env)
            started.append(node)
            node.start()
        yield started
    finally:
        for node in started:
            node.kill()


def until(what: Callable[[], T | None], timeout: float, message: str, step: float = 0.05) -> T:
    """Poll `what` (bounded) until it returns something other than None."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got is not None:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s: {message}")
        time.sleep(step)


def rpc(address: tuple[str, int], api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with connect(address, timeout=5) as sock:
        return call(sock, api_key, version, body)


def find_coordinator(address: tuple[str, int], group: str, key_type: int = 0) -> dict[str, Any]:
    return rpc(address, 10, 3, {"key": group, "key_type": key_type})


def commit(address: tuple[str, int], group: str, topic: str, offset: int, partition: int = 0) -> int:
    """OffsetCommit v2 (a simple group: generation -1): the partition's error code."""
    body = {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "committed_offset": offset, "committed_metadata": ""}]}],
    }  # fmt: skip
    try:
        answer = rpc(address, 8, 2, body)
    except OSError:
        return -1
    return int(answer["topics"][0]["partitions"][0]["error_code"])


def fetch_offset(address: tuple[str, int], group: str, topic: str, partition: int = 0) -> tuple[int, int]:
    """OffsetFetch v2: (error code, committed offset) of one partition."""
    topics = [{"name": topic, "partition_indexes": [partition]}]
    answer = rpc(address, 9, 2, {"group_id": group, "topics": topics})
    if answer["error_code"]:
        return int(answer["error_code"]), -1
    part = answer["topics"][0]["partitions"][0]
    return int(part["error_code"]), int(part["committed_offset"])


def owner_of(node: Node, group: str, key_type: int = 0) -> int | None:
    try:
        answer = find_coordinator(node.address, group, key_type)
    except OSError:
        return None
    return None if answer["error_code"] else int(answer["node_id"])
