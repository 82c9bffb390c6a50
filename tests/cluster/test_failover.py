"""Nodes as real processes on one PostgreSQL: routing, kill -9 failover, SIGSTOP fencing, joining.

Every node is `python -m kcoord serve --cluster DSN --node-id N` with a short lease (1.5 s); the
requests are raw Kafka wire calls through our codec (the stock clients are in test_clients.py).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.conftest import PgServer
from tests.cluster.nodes import (
    NOT_COORDINATOR,
    RETRIABLE,
    Node,
    commit,
    fetch_offset,
    init_cluster,
    nodes,
    owner_of,
    rpc,
    until,
)
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO
from tests.server.wire import call, connect, create_topic, decode_response, read_frame, send

log = logging.getLogger(__name__)

TTL_MS = 1500


def _ready(node: Node, group: str) -> int:
    """The owner node id of `group` as `node` sees it, once the shard has one."""
    return until(lambda: owner_of(node, group), 20, f"{group} has an owner seen by {node.name}")


def _settled(cluster: list[Node], group: str) -> int:
    """The owner of `group` once placement settled: every live node names the preferred owner
    (rendezvous over the live nodes), so the shard does not move again during the test."""
    live = [n for n in cluster if n.alive()]
    preferred = preferred_owner(shard_of(group), [n.node_id for n in live])

    def agreed() -> int | None:
        return preferred if all(owner_of(n, group) == preferred for n in live) else None

    return until(agreed, 20, f"every node names node {preferred} for {group}")


def _by_id(cluster: list[Node], node_id: int) -> Node:
    return next(n for n in cluster if n.node_id == node_id)


def _fetch_owner(cluster: list[Node], group: str) -> int | None:
    for node in cluster:
        error, offset = fetch_offset(node.address, group, "t")
        if error == 0:
            return offset
    return None


def _readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _commit_until_ok(cluster: list[Node], group: str, topic: str, offset: int, timeout: float) -> Node:
    """Follow FindCoordinator until a commit succeeds (what a client does on NOT_COORDINATOR)."""

    def attempt() -> Node | None:
        for asker in cluster:
            if not asker.alive():
                continue
            owner_id = owner_of(asker, group)
            if owner_id is None:
                continue
            owner = _by_id(cluster, owner_id)
            error = commit(owner.address, group, topic, offset) if owner.alive() else -1
            assert error in (0, -1, *RETRIABLE), f"commit answered {error}"
            return owner if error == 0 else None
        return None

    return until(attempt, timeout, f"a commit of {group} succeeds", step=0.02)


def test_a_group_moves_to_the_survivor_on_kill_9_and_keeps_every_acknowledged_commit(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        groups = [f"g-{i}" for i in range(12)]
        owners = {g: _settled(cluster, g) for g in groups}
        assert set(owners.values()) == {1, 2}, owners  # both nodes own some of the groups
        # Both nodes answer the same owner, and the owner takes commits; the other says NOT_COORDINATOR.
        acked: dict[str, int] = {}
        for group in groups:
            owner = _by_id(cluster, owners[group])
            other = next(n for n in cluster if n is not owner)
            until(lambda g=group, o=owner: commit(o.address, g, "t", 10) == 0 or None, 10, "topic seen")
            acked[group] = 10
            assert commit(other.address, group, "t", 11) == NOT_COORDINATOR
        victim = _by_id(cluster, owners[groups[0]])
        survivor = next(n for n in cluster if n is not victim)
        moved = [g for g in groups if owners[g] == victim.node_id]
        for offset in range(11, 31):  # commit load on the victim's groups, every answer recorded
            for group in moved:
                if commit(victim.address, group, "t", offset) == 0:
                    acked[group] = offset
        victim.kill()
        killed_at = time.monotonic()
        owner = _commit_until_ok(cluster, moved[0], "t", acked[moved[0]] + 1, 20)
        failover_s = time.monotonic() - killed_at
        acked[moved[0]] += 1
        assert owner is survivor
        log.warning("failover: kill -9 to the first commit on the new owner: %.3f s (ttl %d ms)",
                    failover_s, TTL_MS)  # fmt: skip
        print(f"\nFAILOVER kill -9 -> first commit on the new owner: {failover_s:.3f} s (ttl {TTL_MS} ms)")
        assert failover_s < TTL_MS / 1000 + 3
        for group in groups:  # nothing acknowledged was lost
            _, offset = until(
                lambda g=group: r if (r := fetch_offset(survivor.address, g, "t"))[0] == 0 else None,
                10, f"{group} served by the survivor",
            )  # fmt: skip
            assert offset >= acked[group], (group, offset, acked[group])


def test_a_paused_owner_is_fenced_and_answers_not_coordinator_after_it_resumes(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        group = "paused-group"
        paused = _by_id(cluster, _settled(cluster, group))
        successor = next(n for n in cluster if n is not paused)
        until(lambda: commit(paused.address, group, "t", 5) == 0 or None, 10, "first commit")
        old = connect(paused.address)  # a connection open before the pause
        body = {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 6, "committed_metadata": ""}]}],
        }  # fmt: skip
        paused.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:
            send(old, 8, 2, 1, body)  # waits in the paused node's socket: pending when it resumes
            owner = _commit_until_ok(cluster, group, "t", 7, 20)
            assert owner is successor
        finally:
            paused.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        # Resumed: its memory is stale; the pending commit and a new one are refused, nothing changes.
        _, answer = decode_response(8, 2, read_frame(old))
        assert answer["topics"][0]["partitions"][0]["error_code"] == NOT_COORDINATOR
        body["topics"][0]["partitions"][0]["committed_offset"] = 7  # the same value, whoever takes it
        answer = call(old, 8, 2, body, correlation_id=2)
        old.close()
        assert answer["topics"][0]["partitions"][0]["error_code"] in RETRIABLE

        # It may take the shard back later (it is the preferred owner): either way, 7 stays.
        def current() -> int | None:
            for node in cluster:
                error, offset = fetch_offset(node.address, group, "t")
                if error == 0:
                    return offset
            return None

        assert until(current, 20, "an owner answers OffsetFetch") == 7
        # The successor may answer before the resumed node's lease check has logged its self-fence.
        until(lambda: paused.count("unloading") >= 1 or None, 20, "the resumed node unloads the shard")


def test_metadata_and_describe_cluster_list_the_live_nodes_and_a_joining_node_takes_its_share(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        groups = [f"j-{i}" for i in range(30)]
        for group in groups:
            _settled(cluster, group)

        def listed() -> set[int] | None:
            got = {b["node_id"] for b in rpc(cluster[1].address, 3, 1, {"topics": []})["brokers"]}
            return got if got == {1, 2} else None

        until(listed, 10, "Metadata lists both nodes")
        described = rpc(cluster[0].address, 60, 0, {"include_cluster_authorized_operations": False})
        assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2]
        assert described["controller_id"] == 1
        # FindCoordinator at every shape: v0 (no key type), v4-6 batched, transaction keys; any node.
        owners = {g: _settled(cluster, g) for g in groups[:4]}
        v0 = rpc(cluster[1].address, 10, 0, {"key": groups[0]})
        assert (v0["error_code"], v0["node_id"]) == (0, owners[groups[0]])
        for version in (4, 6):
            batch = rpc(cluster[0].address, 10, version, {"key_type": 0, "coordinator_keys": groups[:4]})
            assert {c["key"]: c["node_id"] for c in batch["coordinators"]} == owners
        txn = rpc(cluster[1].address, 10, 4, {"key_type": 1, "coordinator_keys": ["tx-a"]})["coordinators"][0]
        assert txn["error_code"] == 0 and txn["node_id"] == preferred_owner(shard_of("tx-a"), [1, 2])
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        joiner = Node(tmp_path, 3, cluster_dsn, TTL_MS)
        cluster.append(joiner)
        joiner.start()
        # Commits go on while the shards move: every error a client sees is retriable (asserted by
        # _commit_until_ok), and every group commits again within the bound.
        deadline, offset = time.monotonic() + 4, 0
        while time.monotonic() < deadline:
            offset += 1
            for group in groups[:10]:
                _commit_until_ok(cluster, group, "t", offset, 15)

        def spread() -> set[int] | None:
            seen = {owner_of(cluster[0], g) for g in groups}
            return seen if 3 in seen and None not in seen else None

        until(spread, 20, "node 3 owns some of the groups")
        assert joiner.count("shard \\d+: loaded") > 0
        status = run_command(
            [sys.executable, "-m", "kcoord", "cluster", "status", "--cluster", cluster_dsn],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.splitlines()  # fmt: skip
        expected = [["node", str(c.node_id), f"127.0.0.1:{c.port}"] for c in cluster]
        assert [line.split()[:3] for line in status[:3]] == expected
        owners = {int(line.split()[1]): line.split()[2] for line in status if line.startswith("shard")}
        assert len(owners) == 50 and {f"owner={n}" for n in (1, 2, 3)} <= set(owners.values())
        for group in groups[:10]:  # nothing acknowledged was lost in the moves
            assert until(lambda g=group: _fetch_owner(cluster, g), 10, "an owner answers") == offset


def test_a_transaction_commits_offsets_of_a_group_another_node_owns(tmp_path: Path, cluster_dsn: str) -> None:
    """The transaction coordinator on one node, the group on the other: EndTxn's marker for the
    group's `__consumer_offsets` partition goes to the group's owner (WriteTxnMarkers)."""
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        txn_id = next(f"tx-{i}" for i in range(100) if preferred_owner(shard_of(f"tx-{i}"), [1, 2]) == 1)
        group = next(f"tg-{i}" for i in range(100) if preferred_owner(shard_of(f"tg-{i}"), [1, 2]) == 2)
        until(lambda: owner_of(cluster[1], txn_id, 1) == 1 or None, 20, "the transaction's owner")
        coordinator, group_owner = cluster[0], _by_id(cluster, _settled(cluster, group))
        assert group_owner.node_id == 2
        init = rpc(coordinator.address, 22, 1, {"transactional_id": txn_id, "transaction_timeout_ms": 60000})
        assert init["error_code"] == 0
        pid, epoch = init["producer_id"], init["producer_epoch"]
        ids = {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch}
        assert rpc(coordinator.address, 25, 1, {**ids, "group_id": group})["error_code"] == 0
        offsets = [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 42,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ]
        body = {**ids, "group_id": group, "topics": offsets}

        def txn_commit() -> int | None:
            code = int(rpc(group_owner.address, 28, 2, body)["topics"][0]["partitions"][0]["error_code"])
            assert code in (0, 15, 16, 14), f"TxnOffsetCommit answered {code}"
            return 1 if code == 0 else None

        until(txn_commit, 10, "TxnOffsetCommit")
        assert fetch_offset(group_owner.address, group, "t") == (0, -1)  # pending until the marker
        assert rpc(coordinator.address, 26, 1, {**ids, "committed": True})["error_code"] == 0
        until(
            lambda: fetch_offset(group_owner.address, group, "t") == (0, 42) or None, 10, "the marker applied"
        )


def test_a_graceful_stop_hands_its_shards_over_without_waiting_for_the_lease(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], 10_000) as cluster:  # a long TTL: only a handover is fast
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        group = next(f"s-{i}" for i in range(100) if preferred_owner(shard_of(f"s-{i}"), [1, 2]) == 2)
        owner = _by_id(cluster, _settled(cluster, group))
        until(lambda: commit(owner.address, group, "t", 3) == 0 or None, 10, "first commit")
        stopped_at = time.monotonic()
        assert owner.stop() == 0  # SIGTERM: drain, release, leave, exit 0
        successor = _commit_until_ok(cluster, group, "t", 4, 10)
        handover_s = time.monotonic() - stopped_at
        print(f"\nHANDOVER SIGTERM -> first commit on the successor: {handover_s:.3f} s (ttl 10000 ms)")
        assert successor.node_id == 1 and handover_s < 5
        assert fetch_offset(successor.address, group, "t") == (0, 4)


def test_postgresql_stopped_and_restarted_nodes_answer_retriable_errors_and_recover(
    tmp_path: Path, cluster_dsn: str, pg_server: PgServer
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS, "--http-listen", "127.0.0.1:0") as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        http = int(cluster[0].wait_for(r"http endpoint on \S+:(\d+)").group(1))
        assert _readyz(http) == 200
        group = "pg-restart"
        owner = _by_id(cluster, _settled(cluster, group))
        until(lambda: commit(owner.address, group, "t", 5) == 0 or None, 10, "first commit")
        pg_server.stop("immediate")
        try:
            deadline = time.monotonic() + TTL_MS / 1000 + 2
            errors: set[int] = set()
            while time.monotonic() < deadline:  # nothing is acknowledged without the database
                for node in cluster:
                    errors.add(commit(node.address, group, "t", 6))
            assert errors <= RETRIABLE | {-1}, errors
            assert NOT_COORDINATOR in errors  # the owner fenced itself once its lease ran out
            assert _readyz(http) == 503
        finally:
            pg_server.start()
        until(lambda: _readyz(http) == 200 or None, 20, "/readyz answers 200 again")
        _commit_until_ok(cluster, group, "t", 7, 30)
        assert until(lambda: _fetch_owner(cluster, group), 20, "an owner answers") == 7
        assert all(node.alive() for node in cluster)


def test_a_second_process_with_a_live_node_id_is_refused(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1], TTL_MS) as cluster:
        twin = Node(tmp_path / "twin", 1, cluster_dsn, TTL_MS)
        (tmp_path / "twin").mkdir()
        cluster.append(twin)
        with contextlib.suppress(AssertionError):  # it may exit before or after its "listening" line
            twin.start(timeout=20)
        assert twin.proc is not None and twin.proc.wait(20) == 1
        assert twin.count("registered by another live node") == 1
        assert cluster[0].alive() and owner_of(cluster[0], "g") == 1
