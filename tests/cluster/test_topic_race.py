"""Two nodes creating one topic at once make one topic (Kafka's controller serialises creation:
ReplicationControlManager.createTopics answers TOPIC_ALREADY_EXISTS to the later request).

`kcoord_metadata_put` refuses a topic record whose name a live row of another topic id holds
(SQLSTATE KC003, nothing written); `MetadataLog` turns that into `TopicExists`, the registry keeps the
name pending until it reads the winner's record, CreateTopics answers TOPIC_ALREADY_EXISTS and an
auto-creating Metadata LEADER_NOT_AVAILABLE. Here: the function and the registries over a real
PostgreSQL, then two real node processes receiving the same CreateTopics and the same auto-creating
Metadata at once.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.metadata import MetadataLog
from kcoord.cluster.migrations import IDENTITY_TAKEN_SQLSTATE
from kcoord.coordinator.metadata import TopicExists, TopicRecord, TopicRegistry, TopicTombstone
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.persistence import Replayer
from kcoord.coordinator.persistence.codec import to_storage
from tests.cluster.helpers import init
from tests.cluster.nodes import Node, init_cluster, nodes, rpc, until
from tests.server.wire import call, connect
from tests.unit.conftest import Harness

TOPIC_ALREADY_EXISTS, LEADER_NOT_AVAILABLE = 36, 5
_PUT = "SELECT kcoord_metadata_put($1::smallint[], $2::bytea[], $3::bytea[], $4::bytea[])"


async def _put(pool: Any, records: Sequence[TopicRecord | TopicTombstone]) -> None:
    rows = [to_storage(r) for r in records]
    ids = [r.topic_id.bytes if isinstance(r, TopicRecord) else None for r in records]
    await pool.fetchval(_PUT, [r.type for r in rows], [r.key for r in rows], [r.value for r in rows], ids)


async def test_a_topic_record_for_a_name_another_topic_holds_is_refused_and_nothing_written(
    cluster_dsn: str,
) -> None:
    await init(cluster_dsn, 4)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=2)
    try:
        first = TopicRecord("t", uuid.uuid4(), 3)
        await _put(pool, [first])
        await _put(pool, [TopicRecord("t", first.topic_id, 5)])  # the same topic grows: allowed
        with pytest.raises(asyncpg.PostgresError) as refused:
            await _put(pool, [TopicRecord("u", uuid.uuid4(), 1), TopicRecord("t", uuid.uuid4(), 2)])
        assert refused.value.sqlstate == IDENTITY_TAKEN_SQLSTATE
        assert refused.value.detail == to_storage(first).key.hex()
        values = await pool.fetch("SELECT key, value FROM kcoord_metadata")
        assert [to_storage(TopicRecord("t", first.topic_id, 5)).value] == [bytes(v["value"]) for v in values]
        await _put(pool, [TopicTombstone("t")])  # deleted: the name is free for a new topic
        await _put(pool, [TopicRecord("t", uuid.uuid4(), 2)])
        # Records without an identity (the three-argument call, ACLs, credentials) are written as before.
        await pool.fetchval(
            "SELECT kcoord_metadata_put($1::smallint[], $2::bytea[], $3::bytea[])",
            [to_storage(first).type], [to_storage(first).key], [to_storage(first).value],
        )  # fmt: skip
    finally:
        await pool.close()


class _Node:
    """One node's registry over its own MetadataLog, following the table as a node does."""

    def __init__(self, pool: Any) -> None:
        self.log = MetadataLog(pool)
        self.topics = TopicRegistry(self.log)
        self.replayer = Replayer(Harness().mgr, self.topics, ProducerIds(self.log))  # type: ignore[arg-type]

    async def create(self, specs: list[tuple[str, int]]) -> BaseException | None:
        done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.topics.create([(name, count, {}) for name, count in specs], done.set_result)
        return await asyncio.wait_for(done, 10)

    async def catch_up(self) -> None:
        await self.log.catch_up(self.replayer.apply)


async def test_the_registry_that_loses_a_race_keeps_the_name_pending_until_it_reads_the_winner(
    cluster_dsn: str,
) -> None:
    await init(cluster_dsn, 4)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=4)
    try:
        a, b = _Node(pool), _Node(pool)
        results = await asyncio.gather(a.create([("t", 3)]), b.create([("t", 5), ("u", 2)]))
        assert sum(r is None for r in results) == 1, results
        if results[0] is None:
            winner, loser, refused = a, b, results[1]
            assert isinstance(refused, TopicExists) and refused.names == {"t"}
            assert loser.topics.describe("u") is not None  # the rest of the request is created
        else:
            winner, loser, refused = b, a, results[0]
            assert isinstance(refused, TopicExists) and refused.names == {"t"}
        assert loser.topics.get("t") is None and loser.topics.is_pending("t")
        await loser.catch_up()
        assert loser.topics.get("t") == winner.topics.get("t")
        assert not loser.topics.is_pending("t")
        # Growth and deletion keep working from either node once it has caught up.
        grown: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        loser.topics.set_partition_count([("t", 7)], grown.set_result)
        assert await grown is None
        await winner.catch_up()
        assert winner.topics.describe("t") == (loser.topics.get("t").topic_id, 7)  # type: ignore[union-attr]
        gone: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        winner.topics.delete(["t"], gone.set_result)
        assert await gone is None
        await loser.catch_up()
        assert loser.topics.get("t") is None and not loser.topics.is_pending("t")
    finally:
        await pool.close()


async def test_a_stale_copy_cannot_overwrite_a_topic_recreated_elsewhere(cluster_dsn: str) -> None:
    await init(cluster_dsn, 4)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=4)
    try:
        a, b = _Node(pool), _Node(pool)
        assert await a.create([("t", 1)]) is None
        await b.catch_up()
        gone: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        a.topics.delete(["t"], gone.set_result)
        assert await gone is None
        assert await a.create([("t", 4)]) is None
        grown: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        b.topics.set_partition_count([("t", 2)], grown.set_result)  # b still has the deleted topic
        assert isinstance(await grown, TopicExists)
        await b.catch_up()
        assert b.topics.get("t") == a.topics.get("t") and not b.topics.is_pending("t")
    finally:
        await pool.close()


# -- real node processes ------------------------------------------------------------------------------
TTL_MS = 1500
ROUNDS = 4  # names raced per test: each round is one simultaneous pair of requests


def _at_once(nodes: list[Node], api_key: int, version: int, bodies: list[dict[str, Any]]) -> list[Any]:
    """Send `bodies[i]` to `nodes[i]`, all released together once every connection is open."""
    barrier = threading.Barrier(len(nodes))
    answers: list[Any] = [None] * len(nodes)

    def one(i: int) -> None:
        with connect(nodes[i].address, timeout=10) as sock:
            barrier.wait(timeout=10)
            answers[i] = call(sock, api_key, version, bodies[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(nodes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert all(a is not None for a in answers), answers
    return answers


def _described(node: Node, name: str) -> tuple[uuid.UUID, int] | None:
    """(topic id, partition count) in `node`'s Metadata v10 without auto-creation, None if absent."""
    body = {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}  # fmt: skip
    topic = rpc(node.address, 3, 10, body)["topics"][0]
    return None if topic["error_code"] else (topic["topic_id"], len(topic["partitions"]))


def _settled(cluster: list[Node], name: str) -> tuple[uuid.UUID, int]:
    """The topic once every node describes it the same way."""

    def agreed() -> tuple[uuid.UUID, int] | None:
        seen = {_described(node, name) for node in cluster}
        return seen.pop() if len(seen) == 1 and None not in seen else None

    return until(agreed, 15, f"every node describes {name} the same way", step=0.1)


def _create_topics(name: str, partitions: int) -> dict[str, Any]:
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    return {"topics": [topic], "timeout_ms": 5000, "validate_only": False}


def test_two_nodes_given_the_same_create_topics_at_once_make_one_topic(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn, 8)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        for round_ in range(ROUNDS):
            name = f"race-{round_}"
            answers = [
                a["topics"][0]
                for a in _at_once(cluster, 19, 7, [_create_topics(name, 3), _create_topics(name, 5)])
            ]
            assert sorted(a["error_code"] for a in answers) == [0, TOPIC_ALREADY_EXISTS], answers
            won = next(a for a in answers if a["error_code"] == 0)
            assert _settled(cluster, name) == (won["topic_id"], won["num_partitions"])


def test_two_nodes_auto_creating_the_same_topic_at_once_make_one_topic(
    tmp_path: Path, cluster_dsn: str
) -> None:
    """The nodes' default partition counts differ, so a second copy would show; the loser answers
    LEADER_NOT_AVAILABLE (Kafka's AutoTopicCreationManager turns TOPIC_ALREADY_EXISTS into it) and
    the topic itself once it has read the winner's record."""
    init_cluster(cluster_dsn, 8)
    with (
        nodes(tmp_path, cluster_dsn, [1], TTL_MS, "--num-partitions", "2") as first,
        nodes(tmp_path, cluster_dsn, [2], TTL_MS, "--num-partitions", "4") as second,
    ):
        cluster = first + second
        for round_ in range(ROUNDS):
            name = f"auto-{round_}"
            version = (1, 10)[round_ % 2]  # v1 auto-creates always; v10 when allowed, and names the id
            body: dict[str, Any] = {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]}
            if version >= 4:
                body |= {"allow_auto_topic_creation": True, "include_topic_authorized_operations": False}
            topics = [a["topics"][0] for a in _at_once(cluster, 3, version, [body, body])]
            assert {t["error_code"] for t in topics} <= {0, LEADER_NOT_AVAILABLE}, topics
            served = [t for t in topics if t["error_code"] == 0]
            assert served, topics
            topic_id, count = _settled(cluster, name)
            assert {len(t["partitions"]) for t in served} == {count}, (topics, count)
            if version >= 10:
                assert {t["topic_id"] for t in served} == {topic_id}


class _HeldLog:
    """A TopicLog whose appends wait until the test settles them."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[BaseException | None], None]] = []

    def append(self, records: Sequence[Any], on_done: Callable[[BaseException | None], None]) -> None:
        self.waiting.append(on_done)


def test_a_winner_read_while_the_refused_write_was_in_flight_leaves_the_name_settled() -> None:
    """The winner's record can be applied (catch-up) before the refusal arrives: it will not come
    again, so the name must not stay pending."""
    held = _HeldLog()
    topics = TopicRegistry(held)
    results: list[BaseException | None] = []
    topics.create([("t", 3, {}), ("u", 1, {})], results.append)
    winner = TopicRecord("t", uuid.uuid4(), 5)
    topics.apply(winner)
    held.waiting.pop()(TopicExists(["t"]))
    assert topics.get("t") == winner and not topics.is_pending("t")
    held.waiting.pop()(None)  # "u" written again on its own, and created
    assert isinstance(results[0], TopicExists) and results[0].names == {"t"}
    assert topics.describe("u") is not None and not held.waiting
