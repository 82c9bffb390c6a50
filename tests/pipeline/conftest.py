"""One local Spark session per xdist worker and the recorded data directories every pipeline test reads
(built once per run and shared by the workers: tests/built_once.py).

The data directory is written by a real `kcoord serve` driven by real kafka-python consumers:
rebalances as members join, a member killed (SIGKILL), commits, the server killed with SIGKILL and
restarted, more commits, then a clean stop. `produced` adds topic data: confluent-kafka producers
(one per compression codec) write a topic, a consuming group commits after every poll, a slow group
commits a fixed offset, more records arrive, and the server is killed with SIGKILL. Nothing in
either is hand-built.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import built_once
from tests.integration.conftest import (
    Producers,
    Workers,
    create_topic,
    partitions_of,
    unique,
    wait_for_split,
    wait_until,
)
from tests.kcoord_fork import run_command
from tests.kcoord_process import KcoordServer

pytest.importorskip("pyspark", reason="the pipeline extra is not installed")

PARTITIONS = 4


# The JVMs of the suite's Spark: C1 only and the serial collector. Their jobs read a few thousand rows,
# so C2's compilations and the parallel collector's threads are CPU spent for nothing while six xdist
# workers share two cores: a session's start plus a few jobs took 23 s of CPU instead of 38. Nor is
# the bytecode of Spark's own jars verified as it loads (a diagnostic switch, so it needs the unlock
# before it): a session's start and first job took 9.1 s of CPU instead of 10.2.
JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
)
# Spark settings of the suite's sessions: one task thread (local[1]: a second only adds a second Python
# worker process on the same two cores) and one shuffle partition (the jobs' aggregates are a few hundred
# rows). Neither adaptive execution nor whole-stage code generation: on a few hundred rows re-planning
# each stage after its shuffle, and compiling every stage's generated Java with Janino and then with C1,
# cost more CPU than they save: a session's start and three jobs (offsets collected, offsets.run,
# lag.run), four runs each taken in turn, the driver JVM 9.3-10.1 CPU-s (mean 9.6) instead of 9.7-11.8
# (10.7), its C1 compiler threads 1.0 instead of 1.6-1.8. They change how Spark runs a plan, not what it
# answers; users keep Spark's defaults.
FAST_SQL = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"}
TEST_SPARK = {"spark.sql.shuffle.partitions": "1", "spark.driver.extraJavaOptions": JVM_OPTIONS, **FAST_SQL}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session per xdist worker, shared by every pipeline module."""
    from kcoord.pipeline import session

    spark = session.start("local[1]", "kcoord-tests", settings=TEST_SPARK)
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture(scope="session")
def spark_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment for `kcoord pipeline` subprocesses and standalone daemons: the same JVM options
    and FAST_SQL through a spark-defaults.conf (the driver and a cluster's executors) and
    SPARK_DAEMON_JAVA_OPTS (a standalone master and its workers)."""
    conf = tmp_path_factory.mktemp("spark-conf")
    defaults = {
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        **FAST_SQL,
    }
    (conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in defaults.items()))
    return {**os.environ, "SPARK_CONF_DIR": str(conf), "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS}


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
    """dir: the data dir; history: a live copy taken before the last restart; groups; offsets per group.
    Built once per run (tests/built_once.py)."""
    return built_once.once(tmp_path_factory, "recorded", _record)


def _record(tmp: Path) -> dict[str, Any]:
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


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TOPIC_PARTITIONS = 3


def _produce(factory: Producers, topic: str, count: int, codec: str) -> list[tuple[int, int, str, str]]:
    producer = factory.spawn("confluent-kafka", topic, count, keys=7, compression=codec)
    acked = producer.wait_finished(120)
    assert not producer.failures and len(acked) == count, (producer.failures[:3], len(acked))
    return acked


def _ends(acked: list[tuple[int, int, str, str]]) -> dict[int, int]:
    ends = {p: 0 for p in range(TOPIC_PARTITIONS)}
    for partition, offset, _, _ in acked:
        ends[partition] = max(ends[partition], offset + 1)
    return ends


@pytest.fixture(scope="session")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """dir; topic; acked (partition, offset, key, value) of every record; ends (log end per partition)
    before and after the second round; groups reader/slow; offsets per group as a restarted server
    fetches them. Built once per run (tests/built_once.py)."""
    return built_once.once(tmp_path_factory, "produced", _produce_all)


def _produce_all(tmp: Path) -> dict[str, Any]:
    server = KcoordServer(tmp / "data", "--group-min-session-timeout-ms", "1000", log_path=tmp / "server.log")
    producers, workers = Producers(server, tmp), Workers(server, tmp)
    topic, reader, slow = unique("topic-data"), unique("lag-reader"), unique("lag-slow")
    try:
        server.start()
        create_topic(server.bootstrap, topic, TOPIC_PARTITIONS)
        acked = [row for codec in CODECS for row in _produce(producers, topic, 120, codec)]
        first_ends = _ends(acked)
        consumer = workers.spawn("confluent-kafka", reader, [topic], consume=True)

        def committed_all() -> bool:
            done: dict[int, int] = {}
            for event in consumer.events_named("committed"):
                for _, p, o in event["offsets"]:
                    done[p] = max(done.get(p, 0), o)
            return all(done.get(p, 0) == end for p, end in first_ends.items())

        wait_until(committed_all, 90, "the reading group to commit everything produced")
        consumer.close()
        laggard = workers.spawn("kafka-python", slow, [topic])
        wait_for_split([laggard], partitions_of(topic, TOPIC_PARTITIONS))
        laggard.commit([(topic, p, 3, "slow") for p in range(TOPIC_PARTITIONS)])
        laggard.close()
        time.sleep(0.05)  # the second round's CreateTimes are later than every commit above
        acked += _produce(producers, topic, 90, "lz4")
        server.kill()  # SIGKILL: the pipeline reads what recovery would find
        server.start()
        offsets = {group: offsets_of(server.bootstrap, group) for group in (reader, slow)}
    finally:
        producers.cleanup()
        workers.cleanup()
        server.kill()
    return {
        "dir": tmp / "data",
        "topic": topic,
        "acked": acked,
        "first_ends": first_ends,
        "ends": _ends(acked),
        "reader": reader,
        "slow": slow,
        "offsets": offsets,
        "tmp": tmp,
    }


HISTORY_PARTITIONS = 2
STEADY_COMMITS = 15


def _storage_cli(command: str, data: Path) -> None:
    import sys

    from tests.kcoord_process import REPO

    done = run_command(
        [sys.executable, "-m", "kcoord", "storage", command, "--data-dir", str(data)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _simple_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A simple group (no members, generation -1) commits, as kafka-python's assign() + commit() does."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        tps = {TopicPartition(topic, p): OffsetAndMetadata(o, "simple", -1) for p, o in offsets.items()}
        consumer.assign(list(tps))
        consumer.commit(tps)
    finally:
        consumer.close()


@pytest.fixture(scope="session")
def kept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Issue 28's directory: a consumer that commits 15 times, a member joining and leaving (three
    generations), a simple group committing past the log end; stopped cleanly (snapshot), compacted
    offline (the originals go to the history area), started and stopped cleanly again.

    dir: that data directory; before: a copy taken at the first clean stop, before any compaction
    (every record the clients caused); ends: log end per partition; steady/simple: the groups.
    Built once per run (tests/built_once.py)."""
    return built_once.once(tmp_path_factory, "kept", _keep)


def _keep(tmp: Path) -> dict[str, Any]:
    data = tmp / "data"
    server = KcoordServer(data, "--group-min-session-timeout-ms", "1000", log_path=tmp / "server.log")
    producers, workers = Producers(server, tmp), Workers(server, tmp)
    topic, steady, simple = unique("hist-events"), unique("hist-steady"), unique("hist-simple")
    try:
        server.start()
        create_topic(server.bootstrap, topic, HISTORY_PARTITIONS)
        producer = producers.spawn("confluent-kafka", topic, 1500, keys=50)
        acked = producer.wait_finished(120)
        assert not producer.failures and len(acked) == 1500, (producer.failures[:3], len(acked))
        ends = _ends_of(acked, HISTORY_PARTITIONS)
        first = workers.spawn("kafka-python", steady, [topic])
        wait_for_split([first], partitions_of(topic, HISTORY_PARTITIONS))
        for i in range(1, STEADY_COMMITS + 1):  # every 100 records consumed, a commit
            first.commit([(topic, p, min(ends[p], i * 100 * ends[p] // 1500), f"c{i}") for p in ends])
        second = workers.spawn("kafka-python", steady, [topic])
        wait_for_split([first, second], partitions_of(topic, HISTORY_PARTITIONS))
        second.close()  # LeaveGroup: a third generation
        wait_for_split([first], partitions_of(topic, HISTORY_PARTITIONS), timeout=60)
        first.close()
        _simple_commit(server.bootstrap, simple, topic, {0: ends[0] + 870})
        assert server.stop() == 0
        shutil.copytree(data, tmp / "before")
        _storage_cli("compact", data)
        server.start()
        assert server.stop() == 0
    finally:
        producers.cleanup()
        workers.cleanup()
        server.kill()
    return {"dir": data, "before": tmp / "before", "ends": ends, "steady": steady, "simple": simple,
            "topic": topic, "tmp": tmp}  # fmt: skip


def _ends_of(acked: list[tuple[int, int, str, str]], partitions: int) -> dict[int, int]:
    ends = {p: 0 for p in range(partitions)}
    for partition, offset, _, _ in acked:
        ends[partition] = max(ends[partition], offset + 1)
    return ends


@pytest.fixture(scope="session")
def pg_produced(pg_server: Any, produced: dict[str, Any]) -> dict[str, Any]:
    """`produced` copied into a cluster's PostgreSQL (tests/pipeline/pg_cluster.py: coordinator records
    through ShardRecordLog, partitions' batches byte for byte); dsn: that database."""
    from tests.pipeline import pg_cluster

    return {**produced, "dsn": pg_cluster.run(pg_cluster.copy_data_dir(pg_server, produced["dir"]))}
