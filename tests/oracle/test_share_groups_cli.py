"""`kcoord share-groups` (the real CLI, in its own process) run first against Apache Kafka 4.3.1 and then
against kcoord, the same scenario on each: a share group with one member (raw ShareGroupHeartbeats),
records produced with known timestamps, then --list, --describe (--members, --state, offsets), the
refusals while the group has a member, and once it left --reset-offsets (--to-latest, --to-datetime,
kcoord's --to-offset), --delete-offsets and --delete, each checked against what it must print.
Kafka 4.3.1's own kafka-share-groups.sh printed the same columns and messages for this scenario."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.oracle.kafka import KafkaOracle, random_uuid
from tests.oracle.scenario import unique
from tests.server.test_dataplane_wire import batch, produce
from tests.server.wire import call, connect, create_topic
from tests.tools.test_groups_cli import table

pytestmark = [pytest.mark.xdist_group("kafka_oracle"), pytest.mark.timeout(240)]

# The first record's timestamp (record i has BASE_MS + i): two hours ago, so `--by-duration PT1H` finds
# none of them while Kafka's 7-day time retention keeps them. A fixed date in 2023 was past retention:
# Kafka's retention check rolled and deleted the segment mid-test (seen in CI), and the reset by time
# then found no record and took the log end.
BASE_MS = (int(time.time()) - 2 * 3600) * 1000
RECORDS = 5  # per partition


def share_groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "share-groups", "--bootstrap-server", bootstrap, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )


def ok(bootstrap: str, *args: str) -> str:
    result = share_groups(bootstrap, *args)
    assert result.returncode == 0, f"share-groups {args}: {result.returncode} {result.stderr}"
    return result.stdout


def refused(bootstrap: str, *args: str) -> str:
    result = share_groups(bootstrap, *args)
    assert result.returncode == 1 and "Traceback" not in result.stderr, (args, result)
    return result.stderr


@pytest.fixture(params=["kafka", "kcoord"])
def broker(
    request: pytest.FixtureRequest, kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer
) -> Iterator[tuple[str, socket.socket]]:
    """(bootstrap, a raw connection) of Kafka 4.3.1 first, then of kcoord."""
    target: Any = kafka_oracle if request.param == "kafka" else kcoord_peer
    sock = connect(target.address)
    try:
        yield target.bootstrap, sock
    finally:
        sock.close()


def _produced(sock: socket.socket, name: str) -> None:
    """RECORDS records at each of the topic's 2 partitions; Kafka's broker may not lead the new topic
    yet: retried (bounded: 30 s)."""
    for partition in (0, 1):
        deadline = time.monotonic() + 30
        while (answer := produce(sock, name, partition, batch(RECORDS, timestamp=BASE_MS)))["error_code"]:
            assert time.monotonic() < deadline, answer
            time.sleep(0.1)  # poll interval for the new topic's leadership


def _heartbeat(sock: socket.socket, group: str, member: str, epoch: int, topics: list[str] | None) -> Any:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": topics}  # fmt: skip
    answer = call(sock, 76, 1, body)
    assert answer["error_code"] == 0, answer
    return answer


def _assigned(sock: socket.socket, group: str, member: str, name: str) -> None:
    """The member joins and heartbeats until it is assigned both partitions (bounded: 30 s)."""
    answer = _heartbeat(sock, group, member, 0, [name])
    deadline = time.monotonic() + 30
    while not (answer["assignment"] or {}).get("topic_partitions"):
        assert time.monotonic() < deadline, "never assigned"
        time.sleep(0.2)  # poll interval: the assignment follows the group's topic metadata
        answer = _heartbeat(sock, group, member, answer["member_epoch"], None)


def _indexed(sock: socket.socket, name: str, timestamp: int, offset: int) -> None:
    """Until ListOffsets finds `offset` for `timestamp` at both partitions (bounded: 30 s). Kafka answered
    -1 here in earlier runs, when the records were dated 2023: its retention had deleted them (BASE_MS)."""
    parts = [{"partition_index": p, "timestamp": timestamp} for p in (0, 1)]
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": name, "partitions": parts}]}
    deadline = time.monotonic() + 30
    while True:
        answer = call(sock, 2, 7, body)
        if {p["offset"] for p in answer["topics"][0]["partitions"]} == {offset}:
            return
        assert time.monotonic() < deadline, f"ListOffsets never found the records by their time: {answer}"
        time.sleep(0.1)  # poll interval for the broker's time index


def _local(ms: int) -> str:
    """Kafka's --to-datetime format, local time as the tool reads it."""
    return datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")


def test_the_share_groups_tool_on_kafka_then_on_kcoord(broker: tuple[str, socket.socket]) -> None:
    bootstrap, sock = broker
    group, name, member = unique("sg"), unique("t"), random_uuid()
    assert create_topic(sock, name, 2)["error_code"] == 0
    _produced(sock, name)
    _assigned(sock, group, member, name)

    assert group in ok(bootstrap, "--list").split()
    assert {"GROUP": group, "STATE": "Stable"} in table(ok(bootstrap, "--list", "--state"))
    members = table(ok(bootstrap, "--describe", "--group", group, "--members", "--verbose"))
    assert [(m["CONSUMER-ID"], m["#PARTITIONS"], m["ASSIGNMENT"]) for m in members] == [
        (member, "2", f"{name}:0,1")
    ]
    headers = ["GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"]
    state = table(ok(bootstrap, "--describe", "--group", group, "--state"), headers)
    assert (state[0]["STATE"], state[0]["#MEMBERS"]) == ("Stable", "1")
    reset = ("--reset-offsets", "--group", group, "--to-earliest", "--topic", name, "--dry-run")
    assert f"Share group '{group}' is not empty." in refused(bootstrap, *reset)
    assert f"Share group '{group}' is not EMPTY." in refused(bootstrap, "--delete", "--group", group)
    assert "The group is not empty." in refused(
        bootstrap, "--delete-offsets", "--group", group, "--topic", name
    )

    _heartbeat(sock, group, member, -1, None)  # the member leaves: the group is empty
    empty = ok(bootstrap, "--describe", "--group", group, "--state")
    assert f"Share group '{group}' has no active members." in empty and "Empty" in empty
    latest = ok(
        bootstrap, "--reset-offsets", "--group", group, "--to-latest", "--topic", f"{name}:0", "--dry-run"
    )
    assert table(latest) == [{"GROUP": group, "TOPIC": name, "PARTITION": "0", "NEW-OFFSET": str(RECORDS)}]
    at = _local(BASE_MS + 2)
    _indexed(sock, name, BASE_MS + 2, 2)
    for duration, expected in (("P99999D", "0"), ("PT1H", str(RECORDS))):  # kcoord's --by-duration
        by = ("--reset-offsets", "--group", group, "--by-duration", duration, "--topic", name, "--dry-run")
        plan = ok(bootstrap, *by)
        assert {r["NEW-OFFSET"] for r in table(plan)} == {expected}, (duration, plan)
    ok(bootstrap, "--reset-offsets", "--group", group, "--to-datetime", at, "--topic", name, "--execute")
    offsets = table(ok(bootstrap, "--describe", "--group", group))
    assert [(r["PARTITION"], r["START-OFFSET"], r["LAG"]) for r in offsets] == [
        ("0", "2", "3"),
        ("1", "2", "3"),
    ]
    ok(bootstrap, "--reset-offsets", "--group", group, "--to-offset", "4", "--all-topics", "--execute")
    verbose = table(ok(bootstrap, "--describe", "--group", group, "--offsets", "--verbose"))
    assert [(r["START-OFFSET"], r["LAG"]) for r in verbose] == [("4", "1"), ("4", "1")]

    nosuch = unique("nosuch")
    deleted = share_groups(
        bootstrap, "--delete-offsets", "--group", group, "--topic", name, "--topic", nosuch
    )
    assert deleted.returncode == 1, deleted
    assert sorted((r["TOPIC"], r["STATUS"]) for r in table(deleted.stdout, ["TOPIC", "STATUS"])) == [
        (nosuch, "Error: This server does not host this topic-partition."),
        (name, "Successful"),
    ]
    assert f"Share group '{group}' has no offset information." in ok(
        bootstrap, "--describe", "--group", group
    )
    done = ok(bootstrap, "--delete", "--group", group)
    assert f"Deletion of requested share groups ('{group}') was successful." in done
    assert group not in ok(bootstrap, "--list").split()
