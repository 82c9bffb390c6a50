"""A group's configs are cluster-wide (issue 34 in cluster mode, issue 35 item 7): altered through the
group's coordinator, they are what a partition's leader that is another node applies (ShareFetch's
acquisition_lock_timeout_ms, share.auto.offset.reset=earliest delivering what was produced before the
first fetch, share.delivery.count.limit archiving a record released twice) and what DescribeConfigs
answers on every node; a third node takes an incremental alter on top of them too. Three real nodes on
a real PostgreSQL, raw wire. Before the change the leader applied the broker defaults (a lock of
30,000 ms, nothing delivered from before the first fetch, a released record delivered again) and the
other nodes answered NOT_COORDINATOR."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from kcoord.cluster.migration_group_configs import METADATA_LOCK_KEY
from kcoord.cluster.migrations import _METADATA_LOCK_KEY
from kcoord.cluster.schema import migrate
from kcoord.coordinator.groups.group_configs import GroupConfigRecord
from kcoord.coordinator.persistence.group_config_codec import group_config_to_storage
from tests.cluster.nodes import Node, init_cluster, nodes, owner_of, rpc, until
from tests.cluster.test_failover import _by_id, _settled
from tests.cluster.test_share_nodes import PARTITIONS, TOPIC, agreed_leaders, produce
from tests.server.test_share_fetch_wire import RELEASE, acks, fetch_body, offsets, share_ack, topic_id
from tests.server.wire import call, connect, create_topic

log = logging.getLogger(__name__)

TTL_MS = 1500
GROUP_RESOURCE, GROUP_CONFIG_SOURCE = 32, 8
SHARE_FETCH = 78
CONFIGS = {
    "share.auto.offset.reset": "earliest",
    "share.record.lock.duration.ms": "17000",  # within the broker's 15,000-60,000; default 30,000
    "share.delivery.count.limit": "2",  # the broker's minimum; default 5
    # read through the same settings; not observable with plain records, so described only
    "share.isolation.level": "read_committed",
    "share.partition.max.record.locks": "150",
}


def alter(node: Node, group: str, configs: dict[str, str]) -> int:
    entries = [{"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]
    body = {
        "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": entries}],
        "validate_only": False,
    }
    return int(rpc(node.address, 44, 1, body)["responses"][0]["error_code"])


def described(node: Node, group: str, keys: list[str]) -> dict[str, tuple[str, int]] | int:
    """key -> (value, source) as `node` describes the group, or its error code."""
    body = {
        "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configuration_keys": keys}],
        "include_synonyms": False,
        "include_documentation": False,
    }
    answer = rpc(node.address, 32, 4, body)["results"][0]
    if answer["error_code"]:
        return int(answer["error_code"])
    return {c["name"]: (c["value"], int(c["config_source"])) for c in answer["configs"]}


def _group_apart(cluster: list[Node], leader: int) -> tuple[str, Node]:
    """A group whose coordinator is not `leader`, and that coordinator once placement settled."""
    for i in range(200):
        group = f"apart-{i}"
        coordinator = _settled(cluster, group)
        if coordinator != leader:
            return group, _by_id(cluster, coordinator)
    raise AssertionError("no group coordinated away from the leader")


def _first_delivery(sock: socket.socket, tid: uuid.UUID, group: str) -> tuple[dict[str, Any], int]:
    """ShareFetch (a new session, then its next epochs) until records come: the answer and the next
    epoch. The new leader loads the share partition before it serves it (a fetch meanwhile finds
    nothing), hence the bounded retries."""
    epoch = [0]

    def attempt() -> dict[str, Any] | None:
        answer = call(sock, SHARE_FETCH, 1, fetch_body(tid, epoch[0], "m", group=group, wait_ms=500))
        assert answer["error_code"] == 0, answer
        epoch[0] += 1
        return answer if _ranges(answer) else None

    return until(attempt, 30, "the leader delivers what was produced before the first fetch"), epoch[0]


def _ranges(answer: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [
        (r["first_offset"], r["last_offset"], r["delivery_count"])
        for topic in answer["responses"]
        for p in topic["partitions"]
        for r in p["acquired_records"]
    ]


def test_the_leader_of_a_partition_applies_the_configs_of_a_group_another_node_coordinates(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        leader = _by_id(cluster, agreed_leaders(cluster)[0])
        group, coordinator = _group_apart(cluster, leader.node_id)
        third = next(n for n in cluster if n is not leader and n is not coordinator)
        for i in range(3):  # before the group's first fetch: only `earliest` delivers them
            produce(cluster, 0, f"early-{i}")
        # through the coordinator (the one node that took it before), then the leader applies it
        started = time.monotonic()
        assert alter(coordinator, group, CONFIGS) == 0
        took_ms = (time.monotonic() - started) * 1000
        log.warning("group config alter on three nodes answered in %.1f ms", took_ms)
        with connect(leader.address) as sock:
            tid = topic_id(sock, TOPIC)
            first, epoch = _first_delivery(sock, tid, group)
            assert first["acquisition_lock_timeout_ms"] == 17000
            assert offsets(_ranges(first)) == {0: 1, 1: 1, 2: 1}
            # share.delivery.count.limit=2: released once, delivered again; released twice, archived
            assert share_ack(sock, tid, epoch, "m", acks(0, 2, RELEASE), group=group)["error_code"] == 0
            second, epoch = _next_delivery(sock, tid, group, epoch + 1)
            assert offsets(_ranges(second)) == {0: 2, 1: 2, 2: 2}
            assert share_ack(sock, tid, epoch, "m", acks(0, 2, RELEASE), group=group)["error_code"] == 0
            produce(cluster, 0, "late")
            after, _ = _next_delivery(sock, tid, group, epoch + 1)
            assert offsets(_ranges(after)) == {3: 1}, "records released at the limit are archived"
        for node in cluster:  # answered once every live node applied it: no waiting here
            assert described(node, group, list(CONFIGS)) == {
                k: (v, GROUP_CONFIG_SOURCE) for k, v in CONFIGS.items()
            }, node.name
        # any node takes an alter, as any Kafka broker takes a GROUP resource's, on top of the group's
        # current set as every node holds it; every node agrees
        assert alter(third, group, {"share.record.lock.duration.ms": "19000"}) == 0
        for node in cluster:
            wanted = {"share.record.lock.duration.ms": "19000", "share.auto.offset.reset": "earliest"}
            assert described(node, group, list(wanted)) == {
                k: (v, GROUP_CONFIG_SOURCE) for k, v in wanted.items()
            }, node.name
        with connect(leader.address) as sock:  # a new member's session: the new lock duration
            tid = topic_id(sock, TOPIC)
            answer = call(sock, SHARE_FETCH, 1, fetch_body(tid, 0, "n", group=group, wait_ms=0))
            assert answer["acquisition_lock_timeout_ms"] == 19000
        _read_your_writes(cluster, group)


def _read_your_writes(cluster: list[Node], group: str) -> None:
    """Alters through each node in turn: each answered one is what every node describes at once; the
    time an alter took is logged (docs/cluster.md)."""
    took = []
    for i in range(9):
        value = str(20000 + i)
        started = time.monotonic()
        assert alter(cluster[i % 3], group, {"share.record.lock.duration.ms": value}) == 0
        took.append((time.monotonic() - started) * 1000)
        for node in cluster:
            seen = described(node, group, ["share.record.lock.duration.ms"])
            assert seen == {"share.record.lock.duration.ms": (value, GROUP_CONFIG_SOURCE)}, node.name
    log.warning("group config alters on three nodes: %s ms", " ".join(f"{t:.0f}" for t in sorted(took)))


def _next_delivery(sock: socket.socket, tid: uuid.UUID, group: str, epoch: int) -> tuple[dict[str, Any], int]:
    """The session's next fetches until records come (a fetch beside an acknowledgement's write may
    skip them): the answer and the epoch after it."""
    at = [epoch]

    def attempt() -> dict[str, Any] | None:
        answer = call(sock, SHARE_FETCH, 1, fetch_body(tid, at[0], "m", group=group, wait_ms=500))
        assert answer["error_code"] == 0, answer
        at[0] += 1
        return answer if _ranges(answer) else None

    return until(attempt, 30, "the leader delivers again"), at[0]


def test_a_group_config_survives_a_shard_move_a_restart_and_goes_with_the_group(
    tmp_path: Path, cluster_dsn: str
) -> None:
    """Every node lists the group's configs (ListConfigResources); kill -9 of the group's coordinator
    (its shard moves: the configs were never its), a node started afterwards (it replays them at
    start), then DeleteGroups removes them on every node, as on one."""
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], TTL_MS) as cluster:
        group = "configured"
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        owner = _by_id(cluster, _settled(cluster, group))
        survivors = [n for n in cluster if n is not owner]
        key = "consumer.heartbeat.interval.ms"
        assert alter(survivors[0], group, {key: "7000"}) == 0
        assert all(described(n, group, [key]) == {key: ("7000", GROUP_CONFIG_SOURCE)} for n in cluster)
        for node in cluster:  # ListConfigResources: every node lists it, as every Kafka broker
            listed = rpc(node.address, 74, 1, {"resource_types": [GROUP_RESOURCE]})["config_resources"]
            assert [(r["resource_name"], r["resource_type"]) for r in listed] == [(group, GROUP_RESOURCE)]
        owner.kill()
        until(lambda: owner_of(survivors[0], group) in {n.node_id for n in survivors} or None, 20, "moved")
        assert all(described(n, group, [key]) == {key: ("7000", GROUP_CONFIG_SOURCE)} for n in survivors)
        owner.start()
        assert described(owner, group, [key]) == {key: ("7000", GROUP_CONFIG_SOURCE)}
        coordinator = _by_id(cluster, _settled(cluster, group))
        commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                  "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                      {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]}  # fmt: skip
        until(lambda: rpc(coordinator.address, 8, 2, commit)["topics"][0]["partitions"][0]["error_code"] == 0
              or None, 20, "a commit makes the group")  # fmt: skip
        deleted = rpc(coordinator.address, 42, 2, {"groups_names": [group]})["results"][0]
        assert deleted["error_code"] == 0
        for node in cluster:
            value, source = described(node, group, [key])[key]  # type: ignore[index]
            assert (value, source) != ("7000", GROUP_CONFIG_SOURCE), node.name


async def test_migration_7_moves_the_shards_group_config_rows_to_the_cluster_wide_table(conn: Any) -> None:
    """A cluster that stored group configs in their shards (before migration 7): the rows move to
    kcoord_metadata, where every node follows them, and leave the shards, so no shard load applies a
    stale copy; a row a node of this version wrote there already is the newer one and stays."""
    assert METADATA_LOCK_KEY == _METADATA_LOCK_KEY  # one lock for every metadata writer
    await migrate(conn)
    old = group_config_to_storage(GroupConfigRecord("old", (("share.delivery.count.limit", "3"),)))
    kept = group_config_to_storage(GroupConfigRecord("kept", (("share.delivery.count.limit", "4"),)))
    newer = group_config_to_storage(GroupConfigRecord("kept", (("share.delivery.count.limit", "6"),)))
    insert = "INSERT INTO kcoord_record (shard, type, key, value, lsn) VALUES ($1, $2, $3, $4, $5)"
    await conn.execute(insert, 7, old.type, old.key, old.value, 1)
    await conn.execute(insert, 9, kept.type, kept.key, kept.value, 2)
    await conn.execute("SELECT kcoord_metadata_put($1::smallint[], $2::bytea[], $3::bytea[])",
                       [newer.type], [newer.key], [newer.value])  # fmt: skip
    await conn.execute("DELETE FROM kcoord_schema_version WHERE version = 7")
    assert await migrate(conn) == [7]
    rows = await conn.fetch("SELECT key, value FROM kcoord_metadata WHERE type = $1 ORDER BY seq", old.type)
    assert [(bytes(r["key"]), bytes(r["value"])) for r in rows] == [
        (newer.key, newer.value),
        (old.key, old.value),
    ]
    assert await conn.fetchval("SELECT count(*) FROM kcoord_record WHERE type = $1", old.type) == 0
