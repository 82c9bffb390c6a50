"""/metrics and /v1/groups after a scripted scenario with real clients in separate processes:
two consumers join (a rebalance), commit, one is killed (its session expires: another rebalance)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient

from tests.http.conftest import Http, sample
from tests.integration.conftest import Producers, Workers, unique, wait_for_split, wait_until
from tests.kcoord_fork import run_command
from tests.kcoord_process import KcoordServer
from tests.server.wire import call

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _stable(http: Http, group: str, members: int) -> dict[str, Any] | None:
    view = http.group(group)
    if view is None or view["state"] != "Stable" or len(view["members"]) != members:
        return None
    return view


def test_metrics_count_a_rebalance_commits_and_a_crash(
    server: KcoordServer,
    http: Http,
    workers: Workers,
    producers: Producers,
    topic: str,
    topic_partitions: Any,
) -> None:
    acks = producers.spawn("confluent-kafka", topic, 60).wait_finished(60)
    end = {p: max(o for pp, o, _, _ in acks if pp == p) + 1 for p, _, _, _ in acks}
    group = unique("metrics")
    first = workers.spawn("confluent-kafka", group, [topic])
    second = workers.spawn("confluent-kafka", group, [topic])
    wait_for_split([first, second], topic_partitions)
    two = wait_until(lambda: _stable(http, group, 2), 30, "a Stable group of two")
    # 1 or 2 generations so far: whether the second consumer's join landed in the first one is timing
    committed = {p: max(end.get(p, 0) - 3, 0) for p in range(6)}
    owner = {p: (first if (topic, p) in first.assignment else second) for p in range(6)}
    for p, offset in committed.items():
        owner[p].commit([(topic, p, offset, "")])
    second.kill()  # no LeaveGroup: the member is removed when its 3 s session expires
    wait_until(lambda: _stable(http, group, 1), 30, "the crashed member's removal")

    m = http.metrics()
    assert sample(m, "kcoord_groups", type="classic", state="Stable") == 1
    assert sample(m, "kcoord_group_members", group=group) == 1
    assert sample(m, "kcoord_group_state", group=group, state="Stable") == 1
    assert sample(m, "kcoord_group_generation", group=group) == two["generation_id"] + 1  # the crash
    assert sample(m, "kcoord_rebalances_total", reason="new_member") >= 1
    assert sample(m, "kcoord_rebalances_total", reason="session_expired") == 1
    assert sample(m, "kcoord_rebalance_duration_seconds_count") >= 2
    assert sample(m, "kcoord_offset_commits_total") >= 6
    assert sample(m, "kcoord_heartbeats_total") > 0
    assert sample(m, "kcoord_join_wait_seconds_count") >= 3
    assert sample(m, "kcoord_sync_wait_seconds_count") >= 3
    assert sample(m, "kcoord_open_connections") >= 1
    assert sample(m, "kcoord_storage_append_latency_seconds_count") >= 6
    assert sample(m, "kcoord_log_bytes", log="coordinator") > 0
    assert sample(m, "kcoord_log_bytes", log="partitions") > 0
    for p, offset in committed.items():
        labels = {"group": group, "topic": topic, "partition": str(p)}
        assert sample(m, "kcoord_group_committed_offset", **labels) == offset
        assert sample(m, "kcoord_group_lag_offsets", **labels) == end.get(p, 0) - offset
        if end.get(p, 0) > offset:
            assert sample(m, "kcoord_group_lag_seconds", **labels) > 0
    requests = {labels: v for (name, labels), v in m.items() if name == "kcoord_requests_total"}
    assert any(dict(labels)["api"] == "Heartbeat" for labels in requests)


def test_group_view_agrees_with_describe_groups_and_offset_fetch(
    server: KcoordServer,
    http: Http,
    workers: Workers,
    producers: Producers,
    topic: str,
    topic_partitions: Any,
) -> None:
    producers.spawn("confluent-kafka", topic, 30).wait_finished(60)
    group = unique("inspect")
    members = [workers.spawn("confluent-kafka", group, [topic]) for _ in range(2)]
    wait_for_split(members, topic_partitions)
    view = wait_until(lambda: _stable(http, group, 2), 30, "a Stable group of two")
    members[0].commit([(topic, p, p + 1, f"m{p}") for p in sorted(p for t, p in members[0].assignment)])
    view = http.group(group)
    assert view is not None

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(timeout=30)
    assert view["state"] == "Stable" == described.state.name.title()
    assert view["type"] == "classic"  # classic groups keep their shape, with their type
    [listed] = [g for g in http.get("/v1/groups")["groups"] if g["group_id"] == group]
    assert listed["type"] == "classic"
    assert set(listed) == {"group_id", "type", "state", "protocol_type", "protocol", "generation_id",
                           "leader", "members"}  # fmt: skip
    assert view["protocol"] == described.partition_assignor
    assert view["leader"] in {m["member_id"] for m in view["members"]}
    theirs = {
        m.member_id: (m.client_id, m.host, {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions})
        for m in described.members
    }
    ours = {
        m["member_id"]: (
            m["client_id"],
            m["client_host"],
            {(t, p) for t, parts in m["assignment"]["partitions"].items() for p in parts},
        )
        for m in view["members"]
    }
    assert ours == theirs
    for m in view["members"]:
        assert m["subscription"]["topics"] == [topic]
        assert m["session_timeout_ms"] == 3000

    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(
        timeout=30
    )
    theirs_offsets = {
        (tp.topic, tp.partition): (tp.offset, tp.metadata or "") for tp in fetched.topic_partitions
    }
    # librdkafka sends commit metadata with its C string's NUL (the server keeps what was sent) and
    # reads it back as a C string: compare up to the NUL.
    ours_offsets = {
        (o["topic"], o["partition"]): (o["committed_offset"], o["metadata"].rstrip("\x00"))
        for o in view["offsets"]
    }
    assert ours_offsets == theirs_offsets
    assert ours_offsets  # the commit above is there
    low_high = {
        o["partition"]: o["log_end_offset"] - o["committed_offset"] == o["lag"] for o in view["offsets"]
    }
    assert all(low_high.values())


def test_kcoord_groups_describe_shows_the_lag_the_metrics_show(
    server: KcoordServer,
    http: Http,
    workers: Workers,
    producers: Producers,
    topic: str,
    topic_partitions: Any,
) -> None:
    import json
    import sys

    from tests.kcoord_process import REPO

    producers.spawn("confluent-kafka", topic, 50).wait_finished(60)
    group = unique("lagcli")
    member = workers.spawn("confluent-kafka", group, [topic])
    wait_for_split([member], topic_partitions)
    member.commit([(topic, p, p, "") for p in range(6)])  # lag = log end - p on partition p
    described = run_command(
        [sys.executable, "-m", "kcoord", "groups", "--bootstrap-server", server.bootstrap,
         "--describe", "--group", group, "--output", "json"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    [document] = json.loads(described.stdout)
    cli = {(row["topic"], row["partition"]): row["lag"] for row in document["offsets"]}
    m = http.metrics()
    metrics = {
        (topic, p): sample(m, "kcoord_group_lag_offsets", group=group, topic=topic, partition=str(p))
        for p in range(6)
    }
    assert len(cli) == 6 and cli == metrics
    assert sum(cli.values()) == 50 - sum(range(6))


# -- consumer-protocol groups (KIP-848), made by real ConsumerGroupHeartbeats over a socket ----------------
CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT = 68, 8


def consumer_heartbeat(
    sock: Any, group: str, member_id: str, epoch: int, topics: list[str] | None, owned: Any
) -> dict[str, Any]:
    """ConsumerGroupHeartbeat v1; `owned`: the assignment the member reports owning (a response's)."""
    body = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "rebalance_timeout_ms": 30_000 if epoch == 0 else -1,
        "subscribed_topic_names": topics,
        "topic_partitions": owned,
    }
    response = call(sock, CONSUMER_GROUP_HEARTBEAT, 1, body)
    assert response["error_code"] == 0, response
    return response


def consumer_commit(
    sock: Any, group: str, member_id: str, epoch: int, topic: str, offsets: dict[int, int]
) -> None:
    """OffsetCommit v9 from a consumer-protocol member (its member epoch in place of a generation)."""
    partitions = [
        {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1, "committed_metadata": ""}
        for p, o in offsets.items()
    ]
    body = {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": None, "topics": [{"name": topic, "partitions": partitions}]}  # fmt: skip
    response = call(sock, OFFSET_COMMIT, 9, body)
    assert all(p["error_code"] == 0 for t in response["topics"] for p in t["partitions"]), response


def test_consumer_protocol_groups_in_the_inspector_the_metrics_and_the_controls(
    server: KcoordServer, http: Http, producers: Producers, topic: str
) -> None:
    from tests.server.wire import connect

    acks = producers.spawn("confluent-kafka", topic, 30).wait_finished(60)
    end = {p: max(o for pp, o, _, _ in acks if pp == p) + 1 for p, _, _, _ in acks}
    group = unique("kip848")
    sock = connect(server.address)
    first = consumer_heartbeat(sock, group, "m1", 0, [topic], [])
    assert first["member_epoch"] == 2  # a group starts at epoch 1 (Kafka 4.3); joining bumps it
    owned = first["assignment"]["topic_partitions"]
    assert [sorted(t["partitions"]) for t in owned] == [list(range(6))]
    committed = {p: min(p, end.get(p, 0)) for p in range(6)}
    consumer_commit(sock, group, "m1", 2, topic, committed)
    # A second member: epoch 3, its partitions to come once m1 revokes them (m1 learns it next).
    assert consumer_heartbeat(sock, group, "m2", 0, [topic], [])["member_epoch"] == 3
    consumer_heartbeat(sock, group, "m1", 2, None, owned)  # m1 is asked to revoke half, stays at epoch 2

    [listed] = [g for g in http.get("/v1/groups")["groups"] if g["group_id"] == group]
    assert listed == {
        "group_id": group, "type": "consumer", "state": "Reconciling", "protocol_type": "consumer",
        "group_epoch": 3, "assignment_epoch": 3, "assignor": "uniform", "members": 2,
    }  # fmt: skip
    view = http.group(group)
    assert view is not None and view["type"] == "consumer" and view["state"] == "Reconciling"
    members = {m["member_id"]: m for m in view["members"]}
    m1, m2 = members["m1"], members["m2"]
    assert (m1["member_epoch"], m1["state"], m1["client_id"], m1["client_host"]) == (
        2, "unrevoked_partitions", "kcoord-test", "/127.0.0.1"
    )  # fmt: skip
    assert m1["instance_id"] is None and m1["subscribed_topic_names"] == [topic]
    assert m1["member_type"] == "consumer"
    kept, revoking = m1["assignment"][topic], m1["pending_revocation"][topic]
    assert len(kept) == 3 and sorted(kept + revoking) == list(range(6))
    assert m1["target_assignment"] == {topic: kept}
    assert (m2["member_epoch"], m2["state"], m2["assignment"]) == (3, "unreleased_partitions", {})
    assert m2["target_assignment"] == {topic: revoking}
    offsets = {o["partition"]: o for o in view["offsets"]}
    for p, offset in committed.items():
        assert offsets[p]["committed_offset"] == offset
        assert offsets[p]["log_end_offset"] == end.get(p, 0)
        assert offsets[p]["lag"] == end.get(p, 0) - offset

    m = http.metrics()
    assert sample(m, "kcoord_groups", type="consumer", state="Reconciling") == 1
    assert sample(m, "kcoord_group_state", group=group, state="Reconciling") == 1
    assert sample(m, "kcoord_group_members", group=group) == 2
    assert sample(m, "kcoord_group_epoch", group=group) == 3
    assert sample(m, "kcoord_group_assignment_epoch", group=group) == 3
    for p, offset in committed.items():
        labels = {"group": group, "topic": topic, "partition": str(p)}
        assert sample(m, "kcoord_group_lag_offsets", **labels) == end.get(p, 0) - offset
    assert sample(m, "kcoord_requests_total", api="ConsumerGroupHeartbeat", version="1") == 3
    assert sample(m, "kcoord_heartbeats_total") == 3

    # Test controls: expiring m2 fences it as its session timeout would; no rebalance to force.
    expired = http.post(f"/v1/test/groups/{group}/members/m2/expire")
    assert [m["member_id"] for m in expired["members"]] == ["m1"] and expired["group_epoch"] == 4
    status, refused = http.call("POST", f"/v1/test/groups/{group}/rebalance")
    assert status == 409 and "consumer-protocol" in refused["error"]
