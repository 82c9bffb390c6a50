"""`__consumer_offsets` read by stock clients as tools read Kafka's (issue 33 item 5).

Groups commit through kafka-python and confluent-kafka consumers (each in its own process); a
Burrow-shaped kafka-python reader (tests/integration/workers/offsets_reader.py, its own process)
consumes the internal topic and rebuilds every group's offsets from Kafka's records (key versions
0-2, decoded by tests/offsets_decoder.py, written from Kafka's JSON schemas). Deletions reach it as
tombstones, its own committed position resumes it after a server restart, and the offsets of the
records it read stay what they were.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from tests.integration.conftest import (
    Partition,
    Workers,
    unique,
    wait_for_split,
)
from tests.kcoord_process import KcoordServer
from tests.offsets_decoder import read_key
from tests.server.wire import call, connect

READER = "tests.integration.workers.offsets_reader"
OFFSETS_TOPIC = "__consumer_offsets"


def read_topic(server: KcoordServer, *args: str) -> dict[str, Any]:
    """One run of the reader process (bounded: it gives up after 60 s, the run after 120 s)."""
    done = subprocess.run(
        [sys.executable, "-m", READER, server.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, f"reader failed:\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def merged(*runs: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The offsets the runs rebuilt, replayed in order over each other as one reader would."""
    offsets: dict[str, dict[str, int]] = {}
    for run in runs:
        for partition, offset, key_hex in run["records"]:
            del partition, offset
            version, fields = read_key(bytes.fromhex(key_hex))
            if version in (0, 1):
                offsets.setdefault(fields["group"], {}).pop(f"{fields['topic']}:{fields['partition']}", None)
        for group, parts in run["offsets"].items():
            offsets.setdefault(group, {}).update(parts)
    return {group: parts for group, parts in offsets.items() if parts}


def rebuilt_ours(rebuilt: dict[str, dict[str, int]], ours: set[str]) -> dict[str, dict[str, int]]:
    return {group: offsets for group, offsets in rebuilt.items() if group in ours}


def expected(topic: str, base: int) -> dict[str, int]:
    return {f"{topic}:{p}": base + p for p in range(6)}


def topic_id_of(server: KcoordServer, topic: str) -> Any:
    """The topic's id, as Metadata v12 answers it."""
    with connect(server.address) as sock:
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        return call(sock, 3, 12, body)["topics"][0]["topic_id"]


def offset_delete(server: KcoordServer, group: str, topic: str, partition: int) -> None:
    with connect(server.address) as sock:
        body = {
            "group_id": group,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition}]}],
        }
        answer = call(sock, 47, 0, body)
    assert answer["error_code"] == 0, answer
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer


def test_burrow_shaped_reader_rebuilds_every_groups_offsets_and_resumes_after_a_restart(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group_a, group_b, reader = unique("burrow-a"), unique("burrow-b"), unique("reader")
    group_c = unique("burrow-kip848")
    a = workers.spawn("kafka-python", group_a, [topic])
    b = workers.spawn("confluent-kafka", group_b, [topic])
    c = workers.spawn("confluent-kafka", group_c, [topic], group_protocol="consumer")
    for member in (a, b, c):
        wait_for_split([member], topic_partitions)
    a.commit([(topic, p, 10 + p, "") for p in range(6)])
    b.commit([(topic, p, 20 + p, "meta") for p in range(6)])
    c.commit([(topic, p, 30 + p, "") for p in range(6)])

    first = read_topic(server, reader)
    assert first["partitions"] == 50
    assert OFFSETS_TOPIC in first["internal"], "Metadata flags the topic is_internal"
    assert first["offsets"][group_a] == expected(topic, 10)
    assert first["offsets"][group_b] == expected(topic, 20)
    for group in (group_a, group_b):  # classic groups' GroupMetadata records (key v2, value v3)
        assert first["groups"][group]["protocol_type"] == "consumer"
        assert first["groups"][group]["members"] == 1
    # a consumer-protocol (KIP-848) group: its offsets as any group's, its records of key types 3-8
    # (which Burrow skips), and no classic GroupMetadata
    assert first["offsets"][group_c] == expected(topic, 30)
    assert first["other_keys"] >= 5 and group_c not in first["groups"]
    # Kafka 4.3's OffsetCommitValue v4, every commit of the topic carrying the topic's id (tag 0)
    assert first["offset_values"][topic] == [[4, str(topic_id_of(server, topic))]]

    # deletions: OffsetDelete of one partition (group A is empty once its member left), DeleteGroups
    for member in (a, b, c):
        member.close()
    offset_delete(server, group_a, topic, 0)
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.delete_consumer_groups([group_b], request_timeout=30)[group_b].result(timeout=30)

    second = read_topic(server, reader)
    last_read = {p: o for p, o, _ in first["records"]}
    assert second["records"], "the deletions are records of the topic"
    for partition, offset, _ in second["records"]:  # resumed from the reader's committed position
        assert offset > last_read.get(partition, -1), "a resumed reader reads nothing twice"
    rebuilt = merged(first, second)
    assert group_b not in rebuilt, "DeleteGroups tombstones every offset of the group"
    assert rebuilt[group_a] == {k: v for k, v in expected(topic, 10).items() if k != f"{topic}:0"}

    server.restart()
    fresh = read_topic(server)  # from the beginning: what a new reader sees
    ours = {group_a, group_b}  # (the reader's own group committed once more since `second`)
    assert {g: o for g, o in merged(fresh).items() if g in ours} == rebuilt_ours(rebuilt, ours)
    before = {(p, o): k for run in (first, second) for p, o, k in run["records"]}
    seen_until = max(o for _, o in before)
    for partition, offset, key in fresh["records"]:  # the same record at the same offset
        if offset <= seen_until:
            assert before.get((partition, offset)) == key, (partition, offset)
    resumed = read_topic(server, reader)
    # the reader resumes where it committed: what it reads is only its own commit since then
    assert resumed["records"], "the reader's own commit of its position is a record of the topic"
    for _, offset, key in resumed["records"]:
        if offset <= seen_until:
            Path("/tmp/offs_smoke/debug.json").write_text(json.dumps([first, second, fresh, resumed]))
        assert offset > seen_until
        assert read_key(bytes.fromhex(key))[1]["group"] == reader


def test_a_stock_consumer_sees_the_internal_topic_only_when_it_opts_in(server: KcoordServer) -> None:
    answer = read_topic(server, unique("pattern"), "--pattern")
    assert answer["assigned"] == list(range(50))
    assert OFFSETS_TOPIC in answer["included_view"]
    assert OFFSETS_TOPIC not in answer["excluded_view"]
