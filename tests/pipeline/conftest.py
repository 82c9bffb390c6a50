"""One local Spark session and one recorded data directory for every pipeline test.

The data directory is written by a real `kcoord serve` driven by real kafka-python consumers:
rebalances as members join, a member killed (SIGKILL), commits, the server killed with SIGKILL and
restarted, more commits, then a clean stop. Nothing in it is hand-built.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import (
    Workers,
    create_topic,
    partitions_of,
    unique,
    wait_for_split,
)
from tests.kcoord_process import KcoordServer

pytest.importorskip("pyspark", reason="the pipeline extra is not installed")

PARTITIONS = 4


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pipeline import session

    spark = session.start("local[2]", "kcoord-tests")
    try:
        yield spark
    finally:
        spark.stop()


def offsets_of(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """OffsetFetch of every partition of `group` through kafka-python's admin client."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pipeline-tests")
    try:
        fetched = admin.list_group_offsets(group)
        return {(tp.topic, tp.partition): meta.offset for tp, meta in fetched[group].items()}
    finally:
        admin.close()


def _commit_all(worker: Any, topic: str, base: int) -> None:
    worker.commit([(t, p, base + p, f"m{base}") for t, p in sorted(worker.assignment)])


def _drive(server: KcoordServer, tmp: Path, topic: str, group: str, history: Path | None) -> None:
    factory = Workers(server, tmp)
    try:
        expected = partitions_of(topic, PARTITIONS)
        first, second = factory.spawn("kafka-python", group, [topic]), None
        wait_for_split([first], expected)
        _commit_all(first, topic, 10)
        second = factory.spawn("kafka-python", group, [topic])
        wait_for_split([first, second], expected)
        _commit_all(first, topic, 20)
        _commit_all(second, topic, 30)
        second.kill()  # a member crash: its session expires, the group rebalances
        wait_for_split([first], expected, timeout=60)
        _commit_all(first, topic, 40)
        if history is not None:  # a live copy before restart/compaction fold the history away
            shutil.copytree(server.data_dir, history)
        server.kill()  # SIGKILL mid-life: recovery on the restart
        server.start()
        wait_for_split([first], expected, timeout=60)
        _commit_all(first, topic, 50)
        first.close()
    finally:
        factory.cleanup()


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """dir: the data dir; history: a live copy taken before the last restart; groups; offsets per group."""
    tmp = tmp_path_factory.mktemp("recorded")
    data = tmp / "data"
    server = KcoordServer(data, "--group-min-session-timeout-ms", "1000", log_path=tmp / "server.log")
    groups = [unique("pipe-a"), unique("pipe-b")]
    try:
        server.start()
        topic = unique("events")
        create_topic(server.bootstrap, topic, PARTITIONS)
        for group in groups:
            _drive(server, tmp, topic, group, tmp / "history" if group == groups[-1] else None)
        server.stop()
        server.start()  # what the coordinator itself restores from this directory
        restored = {group: offsets_of(server.bootstrap, group) for group in groups}
    finally:
        server.kill()
    return {"dir": data, "history": tmp / "history", "groups": groups, "offsets": restored, "tmp": tmp}
