"""The nodes when PostgreSQL goes away (issue 27's database faults), on a PostgreSQL server of this
module's own (stopping the session's would break the tests sharing it):

* PostgreSQL stopped with `pg_ctl stop -m immediate` under commit and produce load by stock clients,
  then started again: the nodes answer only retriable errors meanwhile, lose nothing acknowledged and
  recover by themselves (no node is restarted); the clients resume.
* One node cut off from PostgreSQL by a black-holing TCP proxy (tests/cluster/pg_proxy.py): it stops
  answering reads and writes for its shards and partitions before its leases expire (its LeaseClock),
  the other nodes take them over, and once the proxy heals (its connections kept, or lost) it
  rejoins and gets its share back.

Recovery times are printed (`pytest -s`) and logged.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.cluster.ownership import preferred_owner
from kcoord.cluster.pg import COMMAND_TIMEOUT_S
from kcoord.cluster.placement import preferred_leader
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.events_worker import start_worker
from tests.cluster.nodes import (
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    RETRIABLE,
    Node,
    commit,
    fetch_offset,
    find_coordinator,
    init_cluster,
    nodes,
    owner_of,
    rpc,
    until,
)
from tests.cluster.pg_proxy import BlackHoleProxy
from tests.cluster.test_failover import _readyz
from tests.cluster.test_partition_nodes import (
    NOT_LEADER_OR_FOLLOWER,
    PARTITIONS,
    TOPIC,
    _batch,
    agreed_leaders,
    consume_all,
    leaders,
)
from tests.postgres import PgServer, started_server
from tests.server.wire import connect, create_topic, decode_response, read_frame, send

log = logging.getLogger(__name__)

TTL_MS = 1500
REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR = 7, 56
# What a client may see from a node while the database is away: it retries all of these.
RETRIABLE_ANY = RETRIABLE | {NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR}


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PgServer]:
    with started_server() as server:
        yield server


@pytest.fixture
async def own_dsn(own_pg: PgServer) -> AsyncIterator[str]:
    import asyncpg

    name = f"f_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(own_pg.dsn())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield own_pg.dsn(name)


def produce_body(partition: int, value: bytes) -> dict[str, Any]:
    return {
        "transactional_id": None, "acks": -1, "timeout_ms": 3000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": _batch(value)}]}],
    }  # fmt: skip


def commit_body(group: str, topic: str, offset: int) -> dict[str, Any]:
    return {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}]}],
    }  # fmt: skip


def _produce_code(node: Node, partition: int, value: bytes) -> int:
    try:
        answer = rpc(node.address, 0, 8, produce_body(partition, value))
    except OSError:
        return -1
    return int(answer["responses"][0]["partition_responses"][0]["error_code"])


def _fetch_code(node: Node, partition: int) -> int:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
        "topics": [{"topic": TOPIC, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                    "fetch_offset": 0, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    try:
        return int(rpc(node.address, 1, 11, body)["responses"][0]["partitions"][0]["error_code"])
    except OSError:
        return -1


def _first_after(events: list[dict[str, Any]], t: float) -> float | None:
    return next((e["t"] - t for e in events if "acked" in e and e["t"] > t), None)


def test_postgresql_stopped_immediately_under_client_load_and_restarted(
    tmp_path: Path, own_dsn: str, own_pg: PgServer
) -> None:
    init_cluster(own_dsn)
    with nodes(tmp_path, own_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", PARTITIONS)["error_code"] == 0
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        for topic in ("t", TOPIC):  # the consumer is assigned only partitions with a leader
            until(lambda t=topic: all(leaders(n, t) for n in cluster) or None, 30, f"{topic} led")
        group = "pg-down"
        until(lambda: all(owner_of(n, group) for n in cluster) or None, 30, "the group has an owner")
        bootstrap = ",".join(n.bootstrap for n in cluster)
        committer = start_worker(
            "tests.cluster.commit_worker",
            ["kafka-python", "classic", bootstrap, "t", group, "16"],
            tmp_path,
            "committer",
        )
        producer = start_worker(
            "tests.cluster.produce_worker", ["confluent", bootstrap, TOPIC, "16"], tmp_path, "producer"
        )

        def committing() -> bool | None:
            assert committer.poll() is None, "the committer exited early"
            return any(fetch_offset(n.address, group, "t")[1] >= 3 for n in cluster) or None

        until(committing, 60, "the stock client commits")
        own_pg.stop("immediate")
        stopped_at = time.time()
        try:
            _answers_while_down(cluster, group, TTL_MS / 1000 + 1.5)
        finally:
            own_pg.start()
        started_at = time.time()
        commits = committer.events(120)
        records = producer.events(150)
        assert all(n.alive() for n in cluster), "a node died"
        for name, events in (("commit", commits), ("produce", records)):
            resumed = _first_after(events, started_at)
            assert resumed is not None, f"no {name} acknowledged after the restart: {events[-5:]}"
            down = started_at - stopped_at
            print(f"RECOVERY {name}: PostgreSQL down {down:.2f} s, first ack {resumed:.2f} s after the start")
            log.warning("recovery %s: first ack %.2f s after PostgreSQL started", name, resumed)
        _nothing_acknowledged_lost(cluster, group, commits, records)


def _answers_while_down(cluster: list[Node], group: str, seconds: float) -> None:
    """Commits, produces and fetches sent to every node for `seconds` while PostgreSQL is down get
    only retriable refusals, and the owners and leaders fence themselves."""
    seen: Counter[tuple[str, int]] = Counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # nothing is acknowledged without the database
        for node in cluster:
            seen["commit", commit(node.address, group, "t", 10_000)] += 1
            seen["produce", _produce_code(node, 0, b"during")] += 1
            seen["fetch", _fetch_code(node, 0)] += 1
    print(f"\nanswers while PostgreSQL was down: {dict(seen)}")
    assert {code for what, code in seen if what != "fetch"} <= RETRIABLE_ANY | {-1}, seen
    assert {code for what, code in seen if what == "fetch"} <= {0} | RETRIABLE_ANY, seen
    assert ("commit", NOT_COORDINATOR) in seen  # the owner fenced itself once its lease ran out
    assert ("fetch", NOT_LEADER_OR_FOLLOWER) in seen  # so did the partitions' leaders


def _nothing_acknowledged_lost(
    cluster: list[Node], group: str, commits: list[dict[str, Any]], records: list[dict[str, Any]]
) -> None:
    # The last acked commit is the committed offset...
    last = max(e["acked"] for e in commits if "acked" in e)
    assert next(e["committed"] for e in commits if "committed" in e) == last
    assert any(fetch_offset(n.address, group, "t") == (0, last) for n in cluster)
    # ... and every acknowledged record is there, at its offset, no offset handed out twice.
    acked = [e for e in records if "acked" in e]
    assert not [e for e in records if "error" in e], [e for e in records if "error" in e][:5]
    assert max(Counter((e["p"], e["o"]) for e in acked).values()) == 1
    read = consume_all([n.bootstrap for n in cluster])
    for event in acked:
        assert read.get((event["p"], event["o"])) == str(event["acked"]).encode(), event


def _node3_things(live: list[int]) -> tuple[str, int]:
    """A group whose shard and a partition which node 3 is preferred for among `live`."""
    group = next(f"cut-{i}" for i in range(1000) if preferred_owner(shard_of(f"cut-{i}"), live) == 3)
    partition = next(p for p in range(PARTITIONS) if preferred_leader((TOPIC, p), (), live) == 3)
    return group, partition


def _commit_through(cluster: list[Node], group: str, offset: int) -> int | None:
    """Follow FindCoordinator from each node and commit at the owner: the owner's id on success."""
    for asker in cluster:
        owner = next((n for n in cluster if n.node_id == owner_of(asker, group)), None)
        if owner is None:  # none yet, or one outside `cluster`
            continue
        code = commit(owner.address, group, "t", offset)
        assert code in (0, -1, *RETRIABLE), f"commit answered {code}"
        if code == 0:
            return owner.node_id
    return None


def _send_commit(node: Node, group: str, offset: int) -> socket.socket:
    sock = connect(node.address, timeout=30)
    send(sock, 8, 2, 1, commit_body(group, "t", offset))
    return sock


def _send_produce(node: Node, partition: int, value: bytes) -> socket.socket:
    sock = connect(node.address, timeout=30)
    send(sock, 0, 8, 1, produce_body(partition, value))
    return sock


def _answer(commit_sock: socket.socket, produce_sock: socket.socket) -> tuple[int, int]:
    """The error codes of the commit and the produce sent on these sockets (each waits up to 30 s)."""
    with commit_sock, produce_sock:
        _, commit = decode_response(8, 2, read_frame(commit_sock))
        _, produce = decode_response(0, 8, read_frame(produce_sock))
    return (
        int(commit["topics"][0]["partitions"][0]["error_code"]),
        int(produce["responses"][0]["partition_responses"][0]["error_code"]),
    )


def _fence_then_takeover(
    cut_node: Node, others: list[Node], group: str, partition: int, cut_at: float
) -> tuple[float, int, float]:
    """Watch the cut-off node's reads and the others' commits together: node 3 must refuse reads
    of its group before another node commits it, refuse its partition's too (the others take that
    over only afterwards, in the test), and never serve either again.
    (seconds from the cut to the refusal, the node that took the group, seconds to its commit)"""
    served = fenced = taken_at = None
    taken: int | None = None
    deadline = time.monotonic() + 20
    while fenced is None or taken is None:
        assert time.monotonic() < deadline, f"fenced {fenced}, taken over by {taken}"
        offsets, fetch = fetch_offset(cut_node.address, group, "t")[0], _fetch_code(cut_node, partition)
        answered = time.monotonic()
        if offsets == 0 or fetch == 0:
            assert fenced is None, "node 3 served a read again after refusing"
        if offsets == 0:
            served = answered
        elif offsets == NOT_COORDINATOR and fetch == NOT_LEADER_OR_FOLLOWER and fenced is None:
            fenced = answered
        if taken is None:
            sent = time.monotonic()
            taken = _commit_through(others, group, 7)
            taken_at = sent if taken is not None else None
    assert taken_at is not None and (served is None or served < taken_at), "served after the takeover"
    return fenced - cut_at, taken, taken_at - cut_at


def _produce_moved(others: list[Node], partition: int, cut_at: float) -> tuple[int, float]:
    """(the new leader of `partition` among `others`, seconds from the cut to a produce through it)"""
    lead = until(lambda: _led_by(others, partition), 20, "another node leads the partition")
    leader = next(n for n in others if n.node_id == lead)
    until(lambda: _produce_code(leader, partition, b"during") == 0 or None, 20, "produce, moved")
    return lead, time.monotonic() - cut_at


def _in_flight_answered(waiting: tuple[socket.socket, socket.socket], cut_at: float) -> None:
    """The commit and produce sent to the node just after the cut are answered before the heal,
    retriable: bounded by the pool's statement timeout, then asyncpg's cancel attempt (bounded too)."""
    commit_code, produce_code = _answer(*waiting)
    answered_s = time.monotonic() - cut_at
    print(f"ANSWERED writes in flight at the cut: {commit_code}, {produce_code} ({answered_s:.3f} s)")
    assert commit_code in RETRIABLE and produce_code in RETRIABLE_ANY
    assert answered_s < 2 * COMMAND_TIMEOUT_S + 3


def _rejoined(cluster: list[Node], group: str, partition: int, http: int) -> None:
    """Node 3 (last of `cluster`) is a member again, owns its group, leads its partition, is ready."""
    node = cluster[-1]
    until(lambda: all(owner_of(n, group) == 3 for n in cluster) or None, 30, "node 3 owns it again")
    until(lambda: commit(node.address, group, "t", 8) == 0 or None, 20, "a commit on node 3")
    until(lambda: _produce_code(node, partition, b"after") == 0 or None, 30, "node 3 leads again")
    until(lambda: _readyz(http) == 200 or None, 10, "node 3 is ready again")
    assert fetch_offset(node.address, group, "t") == (0, 8)
    assert all(n.alive() for n in cluster)


def _led_by(cluster: list[Node], partition: int) -> int | None:
    """The partition's leader as the first of `cluster` names it, if it is one of `cluster`."""
    led = leaders(cluster[0])
    ids = {n.node_id for n in cluster}
    return led[partition] if led is not None and led[partition] in ids else None


@pytest.mark.parametrize("reset", [False, True], ids=["held", "reset"])
def test_a_node_cut_off_from_postgresql_fences_itself_and_rejoins_when_healed(
    tmp_path: Path, own_dsn: str, own_pg: PgServer, reset: bool
) -> None:
    """`reset`: the node's connections are lost in the partition (it must reconnect), else they
    carry on with what they held."""
    init_cluster(own_dsn)
    proxy = BlackHoleProxy(own_pg.port)
    proxy.start()
    database = own_dsn.rsplit("/", 1)[1]
    try:
        with nodes(tmp_path, own_dsn, [1, 2], TTL_MS) as cluster:
            cut_node = Node(tmp_path, 3, proxy.dsn(database), TTL_MS, "--http-listen", "127.0.0.1:0")
            cluster.append(cut_node)
            cut_node.start()
            others = cluster[:2]
            with connect(cluster[0].address) as sock:
                assert create_topic(sock, "t", 1)["error_code"] == 0
                assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
            group, partition = _node3_things([1, 2, 3])
            until(lambda: all(owner_of(n, group) == 3 for n in cluster) or None, 30, "node 3 owns the group")
            until(lambda: commit(cut_node.address, group, "t", 5) == 0 or None, 20, "a commit on node 3")
            until(lambda: _produce_code(cut_node, partition, b"before") == 0 or None, 30, "node 3 leads")

            http = int(cut_node.wait_for(r"http endpoint on \S+:(\d+)").group(1))
            assert _readyz(http) == 200
            proxy.cut()
            cut_at = time.monotonic()
            waiting = _send_commit(cut_node, group, 6), _send_produce(cut_node, partition, b"cut")

            fenced_s, taken, takeover_s = _fence_then_takeover(cut_node, others, group, partition, cut_at)
            print(f"\nFENCED node 3 cut off -> reads refused: {fenced_s:.3f} s (ttl {TTL_MS} ms)")
            assert commit(cut_node.address, group, "t", 6) == NOT_COORDINATOR
            until(lambda: _readyz(http) == 503 or None, 5, "node 3 is not ready while cut off")
            answer = find_coordinator(cut_node.address, group)  # names no stale owner
            assert (answer["error_code"], answer["node_id"]) == (COORDINATOR_NOT_AVAILABLE, -1)
            lead, moved_s = _produce_moved(others, partition, cut_at)
            _in_flight_answered(waiting, cut_at)
            print(f"TAKEOVER commit on node {taken}: {takeover_s:.3f} s, produce on {lead}: {moved_s:.3f} s")
            assert taken in (1, 2)

            proxy.heal(reset=reset)
            healed_at = time.monotonic()
            _rejoined(cluster, group, partition, http)
            rejoin_s = time.monotonic() - healed_at
            print(f"REJOIN healed -> commit and produce on node 3: {rejoin_s:.3f} s")
            log.warning("fenced %.2f s, takeover %.2f s, rejoin %.2f s", fenced_s, takeover_s, rejoin_s)
            agreed_leaders(cluster)  # settled: no leader moves under the consumer
            read = consume_all([n.bootstrap for n in cluster])
            assert {v for (p, _), v in read.items() if p == partition} == {b"before", b"during", b"after"}
    finally:
        proxy.close()
