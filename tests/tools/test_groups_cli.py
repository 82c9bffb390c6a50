"""`kcoord groups` (the real CLI, in its own process) against a real `kcoord serve`, with real consumers
and producers in their own processes; what it reports is checked against confluent-kafka's AdminClient
and against what consumers do afterwards.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.integration.conftest import (
    Partition,
    Producers,
    Workers,
    create_topic,
    unique,
    wait_for_split,
    wait_until,
)
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

RECORDS = 60
Offsets = dict[Partition, int]


def groups(server: KcoordServer | str, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = server if isinstance(server, str) else server.bootstrap
    return run_command(
        [sys.executable, "-m", "kcoord", "groups", "--bootstrap-server", bootstrap, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def groups_ok(server: KcoordServer, *args: str) -> subprocess.CompletedProcess[str]:
    result = groups(server, *args)
    assert result.returncode == 0, f"kcoord groups {args} failed ({result.returncode}): {result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def groups_json(server: KcoordServer, *args: str) -> Any:
    return json.loads(groups_ok(server, *args, "--output", "json").stdout)


def table(text: str, headers: list[str] | None = None) -> list[dict[str, str]]:
    """Rows of an aligned table as {header: cell}, cut at the columns where the headers start
    (`headers` when a header holds a space)."""
    lines = [line for line in text.splitlines() if line.strip()]
    names = headers or lines[0].split()
    starts = [lines[0].index(name) for name in names]
    assert starts == sorted(starts), lines[0]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)} for line in lines[1:]]


_ADMINS: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _forget_admin_clients() -> Iterator[None]:
    yield
    _ADMINS.clear()  # the test's server is gone: let its client go too


def admin(server: KcoordServer) -> Any:
    """One AdminClient per server, kept alive (a collected client never completes its futures)."""
    from confluent_kafka.admin import AdminClient

    if server.bootstrap not in _ADMINS:
        _ADMINS[server.bootstrap] = AdminClient({"bootstrap.servers": server.bootstrap})
    return _ADMINS[server.bootstrap]


def admin_committed(server: KcoordServer, group: str) -> Offsets:
    from confluent_kafka import ConsumerGroupTopicPartitions

    futures = admin(server).list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(timeout=15)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def admin_log_ends(server: KcoordServer, partitions: set[Partition]) -> Offsets:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    futures = admin(server).list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions})
    return {(tp.topic, tp.partition): f.result(timeout=15).offset for tp, f in futures.items()}


def admin_state(server: KcoordServer, group: str) -> str:
    description = admin(server).describe_consumer_groups([group])[group].result(timeout=15)
    return str(description.state.name)


def state_name(state: str) -> str:
    """ "PreparingRebalance" and "PREPARING_REBALANCE" (ConsumerGroupState) -> "PREPARINGREBALANCE"."""
    return state.replace("_", "").upper()


def wait_empty(server: KcoordServer, group: str) -> None:
    wait_until(lambda: admin_state(server, group) == "EMPTY", 30, f"group {group} to be Empty")


def produce(producers: Producers, topic: str, count: int = RECORDS) -> Offsets:
    """`count` records through a confluent-kafka producer process; the log end of each partition."""
    acks = producers.spawn("confluent-kafka", topic, count).wait_finished(60)
    assert len(acks) == count
    ends: Offsets = {}
    for partition, offset, _key, _value in acks:
        ends[topic, partition] = max(ends.get((topic, partition), 0), offset + 1)
    return ends


def consume_everything(workers: Workers, group: str, topic: str, ends: Offsets) -> Any:
    """A confluent-kafka consumer that reads and commits everything, then leaves: the group is Empty
    with its offsets at the log ends."""
    consumer = workers.spawn("confluent-kafka", group, [topic], consume=True)

    def caught_up() -> bool:
        done: Offsets = {}
        for event in consumer.events_named("committed"):
            for t, p, offset in event["offsets"]:
                done[t, p] = max(done.get((t, p), 0), offset)
        return done == ends

    wait_until(caught_up, 60, "the consumer to read and commit every record")
    consumer.close()
    return consumer


def read_offsets(worker: Any) -> list[tuple[str, int, int]]:
    return [(t, p, o) for event in worker.events_named("records") for t, p, o, _key in event["records"]]


# -- reset --------------------------------------------------------------------------------------------


def test_reset_to_earliest_execute_makes_a_new_consumer_start_at_the_beginning(
    server: KcoordServer, workers: Workers, producers: Producers, topic: str
) -> None:
    ends = produce(producers, topic)
    group = unique("reset-g")
    consume_everything(workers, group, topic, ends)
    wait_empty(server, group)
    assert admin_committed(server, group) == ends

    result = groups_ok(
        server, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute"
    )
    planned = {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in table(result.stdout)}
    assert planned == dict.fromkeys(ends, 0)
    assert admin_committed(server, group) == dict.fromkeys(ends, 0)

    # A new member of the group starts from the reset offsets: it reads every record again.
    again = workers.spawn("confluent-kafka", group, [topic], consume=True)
    wait_until(lambda: len(read_offsets(again)) >= RECORDS, 60, "the new consumer to re-read every record")
    read = read_offsets(again)
    assert len(read) == RECORDS
    assert {(t, p): o for t, p, o in read if o == 0}.keys() == ends.keys()  # offset 0 of every partition


def test_dry_run_is_the_default_and_changes_nothing(
    server: KcoordServer, workers: Workers, producers: Producers, topic: str
) -> None:
    ends = produce(producers, topic)
    group = unique("dry-g")
    consume_everything(workers, group, topic, ends)
    wait_empty(server, group)

    for mode in ((), ("--dry-run",)):
        result = groups_ok(
            server, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", *mode
        )
        assert {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in table(result.stdout)} == (
            dict.fromkeys(ends, 0)
        )
        assert admin_committed(server, group) == ends
    plan = groups_json(server, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-latest")
    assert plan == {
        "executed": False,
        "offsets": [{"group": group, "topic": topic, "partition": 1, "new_offset": ends[topic, 1]}],
    }
    assert admin_committed(server, group) == ends


def test_reset_is_refused_while_the_group_has_members(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("busy-g")
    member = workers.spawn("confluent-kafka", group, [topic])
    wait_for_split([member], topic_partitions)
    member.commit((t, p, 0, "") for t, p in topic_partitions)
    wait_until(lambda: admin_state(server, group) == "STABLE", 30, "a Stable group")

    result = groups(server, "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute")
    assert result.returncode == 1
    # ConsumerGroupCommand.resetOffsets' message.
    assert result.stderr == (
        f"kcoord groups: Assignments can only be reset if the group '{group}' is inactive, "
        "but the current state is Stable.\n"
    )
    assert result.stdout == ""
    assert admin_committed(server, group) == dict.fromkeys(topic_partitions, 0)


def test_every_reset_scenario_against_timestamps_and_log_bounds(server: KcoordServer, topic: str) -> None:
    base = 1_700_000_000_000
    records = [[0, base + i * 1000] for i in range(10)]  # partition 0: offsets 0..9, one second apart
    produced = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.tools.timed_producer",
            json.dumps({"bootstrap": server.bootstrap, "topic": topic, "records": records}),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert produced.returncode == 0, produced.stderr
    assert [json.loads(line)[:2] for line in produced.stdout.splitlines()] == [[0, i] for i in range(10)]
    group = unique("scen-g")
    p0, p1 = f"{topic}:0", f"{topic}:1"  # partition 1 stays empty

    def plan(*args: str) -> dict[int, int]:
        document = groups_json(server, "--reset-offsets", "--group", group, *args)
        return {row["partition"]: row["new_offset"] for row in document["offsets"]}

    # A group that does not exist yet may be reset (Kafka treats "Dead" as inactive): it seeds offsets.
    assert plan("--topic", p0, "--to-offset", "5", "--execute") == {0: 5}
    assert admin_committed(server, group) == {(topic, 0): 5}
    assert plan("--topic", p0, "--shift-by", "-2") == {0: 3}
    assert plan("--topic", p0, "--shift-by", "100") == {0: 10}  # clamped to the log end
    assert plan("--topic", p0, "--to-offset", "-4") == {0: 0}  # clamped to the log start
    assert plan("--topic", p0, "--to-latest") == {0: 10}
    assert plan("--topic", p0, "--to-earliest") == {0: 0}
    when = datetime.fromtimestamp((base + 3500) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    assert plan("--topic", p0, "--to-datetime", when + "Z") == {0: 4}  # first record at or after it
    assert plan("--topic", p0, "--to-datetime", when + "+00:00") == {0: 4}
    assert plan("--topic", topic, "--to-datetime", "2100-01-01T00:00:00.000Z") == {
        0: 10,
        **dict.fromkeys(range(1, 6), 0),
    }
    warned = groups(
        server,
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        p1,
        "--to-datetime",
        "2000-01-01T00:00:00.000Z",
    )
    assert "Warn: Partition 1 from topic" in warned.stderr  # empty partition: falls back to its end
    shifted = groups(server, "--reset-offsets", "--group", group, "--topic", p1, "--shift-by", "1")
    assert shifted.returncode == 1
    assert shifted.stderr == (
        f"kcoord groups: Cannot shift offset for partition {topic}-1 "
        "since there is no current committed offset\n"
    )
    assert admin_committed(server, group) == {(topic, 0): 5}  # only the one --execute changed anything


# -- describe and list ----------------------------------------------------------------------------------


def test_describe_and_list_match_the_admin_client_and_lag_is_log_end_minus_committed(
    server: KcoordServer,
    workers: Workers,
    producers: Producers,
    topic: str,
    topic_partitions: frozenset[Partition],
) -> None:
    from confluent_kafka import ConsumerGroupState

    ends = produce(producers, topic)
    idle = unique("idle-g")
    consume_everything(workers, idle, topic, ends)
    group = unique("busy-g")
    members = [workers.spawn(c, group, [topic], client_id=f"m-{c}") for c in ("confluent-kafka", "aiokafka")]
    wait_for_split(members, topic_partitions)
    committed = {(t, p): min(2 * p + 1, ends[t, p]) for t, p in topic_partitions if p != 5}  # p5: none
    for member in members:
        member.commit((t, p, committed[t, p], "") for t, p in member.assignment if (t, p) in committed)
    wait_empty(server, idle)
    wait_until(lambda: admin_state(server, group) == "STABLE", 30, "a Stable group")

    # --list: the same groups and states as AdminClient.list_consumer_groups.
    listed = admin(server).list_consumer_groups().result(timeout=15)
    expected = {g.group_id: state_name(g.state.name) for g in listed.valid}
    assert expected == {
        idle: state_name(ConsumerGroupState.EMPTY.name),
        group: state_name(ConsumerGroupState.STABLE.name),
    }
    assert {g["group"]: state_name(g["state"]) for g in groups_json(server, "--list")} == expected
    assert groups_ok(server, "--list").stdout.split() == sorted(expected)
    assert {
        r["GROUP"]: state_name(r["STATE"]) for r in table(groups_ok(server, "--list", "--state").stdout)
    } == (expected)
    assert groups_ok(server, "--list", "--state", "empty").stdout.split()[2:] == [idle, "Empty"]

    # --describe: state, coordinator, assignor and members as describe_consumer_groups reports them.
    description = admin(server).describe_consumer_groups([group])[group].result(timeout=15)
    [described] = groups_json(server, "--describe", "--group", group)
    assert state_name(described["state"]) == state_name(description.state.name)
    assert described["assignment_strategy"] == description.partition_assignor
    coordinator = described["coordinator"]
    assert (coordinator["id"], coordinator["host"], coordinator["port"]) == (
        description.coordinator.id,
        description.coordinator.host,
        description.coordinator.port,
    )
    assert sorted(
        (m["member_id"], m["client_id"], m["host"], sorted(_assigned(m))) for m in described["members"]
    ) == (
        sorted(
            (
                m.member_id,
                m.client_id,
                m.host,
                sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions),
            )
            for m in description.members
        )
    )

    # Offsets: committed as list_consumer_group_offsets, log ends as ListOffsets, lag = end - committed.
    assert admin_committed(server, group) == committed
    log_ends = admin_log_ends(server, set(topic_partitions))
    owner = {tp: m["member_id"] for m in described["members"] for tp in _assigned(m)}
    rows = {(r["topic"], r["partition"]): r for r in described["offsets"]}
    assert set(rows) == set(topic_partitions)
    for tp, row in rows.items():
        assert row["log_end_offset"] == log_ends[tp] == ends[tp]
        assert row["current_offset"] == committed.get(tp)
        assert row["lag"] == (log_ends[tp] - committed[tp] if tp in committed else None)
        assert row["consumer_id"] == owner[tp]

    # The table shows the same numbers, "-" where there is no committed offset.
    text = groups_ok(server, "--describe", "--group", group)
    for r in table(text.stdout):
        tp = (r["TOPIC"], int(r["PARTITION"]))
        assert r["GROUP"] == group and r["LOG-END-OFFSET"] == str(ends[tp])
        assert r["CURRENT-OFFSET"] == (str(committed[tp]) if tp in committed else "-")
        assert r["LAG"] == (str(ends[tp] - committed[tp]) if tp in committed else "-")
        assert r["CONSUMER-ID"] == owner[tp]
    members_table = table(groups_ok(server, "--describe", "--group", group, "--members").stdout)
    assert sorted((r["CLIENT-ID"], int(r["#PARTITIONS"])) for r in members_table) == sorted(
        (m.client_id, len(m.assignment.topic_partitions)) for m in description.members
    )
    state_headers = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    [state_row] = table(groups_ok(server, "--describe", "--group", group, "--state").stdout, state_headers)
    assert state_row == {
        "GROUP": group,
        "COORDINATOR (ID)": f"{coordinator['host']}:{coordinator['port']}  ({coordinator['id']})",
        "ASSIGNMENT-STRATEGY": description.partition_assignor,
        "STATE": "Stable",
        "#MEMBERS": "2",
    }

    # The Empty group: its committed partitions, no owners, and the note on stderr.
    idle_text = groups_ok(server, "--describe", "--group", idle)
    assert idle_text.stderr == f"Consumer group '{idle}' has no active members.\n"
    assert {
        (r["TOPIC"], int(r["PARTITION"])): (r["LAG"], r["CONSUMER-ID"]) for r in table(idle_text.stdout)
    } == (dict.fromkeys(ends, ("0", "-")))


def _assigned(member: dict[str, Any]) -> list[Partition]:
    return [(t, p) for t, ps in member["assignment"].items() for p in ps]


# -- consumer-protocol groups (KIP-848) ------------------------------------------------------------------


def test_consumer_protocol_groups_are_listed_and_described_with_consumer_group_describe(
    server: KcoordServer,
    workers: Workers,
    producers: Producers,
    topic: str,
    topic_partitions: frozenset[Partition],
) -> None:
    """A confluent-kafka consumer with group.protocol=consumer (ConsumerGroupHeartbeat) beside a
    classic one: --list types them, --describe shows the consumer group's epochs, assignor and
    members (ConsumerGroupDescribe), the classic one as before (DescribeGroups), lag for both."""
    ends = produce(producers, topic)
    kip, classic = unique("kip848-g"), unique("classic-g")
    member = workers.spawn("confluent-kafka", kip, [topic], group_protocol="consumer", client_id="m-kip")
    wait_for_split([member], topic_partitions)
    other = workers.spawn("confluent-kafka", classic, [topic], client_id="m-classic")
    wait_for_split([other], topic_partitions)
    committed = {(t, p): min(p + 1, ends[t, p]) for t, p in topic_partitions if p != 5}  # p5: none
    member.commit((t, p, o, "") for (t, p), o in committed.items())

    # --list: both, with their type (ListGroups v5's group type); --type filters and shows TYPE.
    listed = {g["group"]: g for g in groups_json(server, "--list")}
    assert (listed[kip]["type"], listed[kip]["protocol_type"]) == ("consumer", "consumer")
    assert listed[classic]["type"] == "classic"
    assert {r["GROUP"]: r["TYPE"] for r in table(groups_ok(server, "--list", "--type").stdout)} == {
        kip: "consumer",
        classic: "classic",
    }
    only = table(groups_ok(server, "--list", "--type", "consumer", "--state").stdout)
    assert only == [{"GROUP": kip, "TYPE": "consumer", "STATE": "Stable"}]

    # --describe: ConsumerGroupDescribe's view of the group and its member.
    [described] = groups_json(server, "--describe", "--group", kip)
    epoch = described["group_epoch"]
    assert (described["type"], described["state"], described["protocol_type"]) == (
        "consumer",
        "Stable",
        "consumer",
    )
    assert (
        described["assignment_strategy"] == "uniform"
        and epoch >= 1
        and described["assignment_epoch"] == epoch
    )
    [m] = described["members"]
    everything = {topic: list(range(6))}
    assert (m["client_id"], m["member_epoch"], m["assignment"], m["target_assignment"]) == (
        "m-kip", epoch, everything, everything
    )  # fmt: skip
    assert m["upgraded"] is True  # ConsumerGroupDescribe v1: a consumer-protocol member
    description = admin(server).describe_consumer_groups([kip])[kip].result(timeout=15)
    assert [x.member_id for x in description.members] == [m["member_id"]]
    assert state_name(description.state.name) == "STABLE"

    # Offsets and lag, as for a classic group: every partition is the member's.
    rows = {(r["topic"], r["partition"]): r for r in described["offsets"]}
    assert set(rows) == set(topic_partitions)
    for tp, row in rows.items():
        assert row["log_end_offset"] == ends[tp] and row["current_offset"] == committed.get(tp)
        assert row["lag"] == (ends[tp] - committed[tp] if tp in committed else None)
        assert row["consumer_id"] == m["member_id"]

    # Tables: the members with their epochs and assignments, the state with the group's epochs.
    members_headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                       "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]  # fmt: skip
    assignment = f"{topic}:0,1,2,3,4,5"
    [row] = table(groups_ok(server, "--describe", "--group", kip, "--members", "--verbose").stdout)
    assert list(row) == members_headers
    assert (row["CLIENT-ID"], row["#PARTITIONS"], row["CURRENT-EPOCH"], row["TARGET-EPOCH"]) == (
        "m-kip", "6", str(epoch), str(epoch)
    )  # fmt: skip
    assert row["CURRENT-ASSIGNMENT"] == assignment == row["TARGET-ASSIGNMENT"]
    state_headers = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                     "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]  # fmt: skip
    state_text = groups_ok(server, "--describe", "--group", kip, "--state", "--verbose").stdout
    [state_row] = table(state_text, state_headers)
    assert [state_row[h] for h in state_headers[2:]] == ["uniform", "Stable", str(epoch), str(epoch), "1"]

    # The classic group is still described by DescribeGroups: no epochs ("-"), its own assignor.
    [classic_row] = table(
        groups_ok(server, "--describe", "--group", classic, "--members", "--verbose").stdout
    )
    assert (classic_row["CURRENT-EPOCH"], classic_row["TARGET-EPOCH"], classic_row["TARGET-ASSIGNMENT"]) == (
        "-", "-", "-"
    )  # fmt: skip
    assert classic_row["CURRENT-ASSIGNMENT"] == assignment
    [classic_json] = groups_json(server, "--describe", "--group", classic)
    assert (classic_json["type"], classic_json["group_epoch"]) == ("classic", None)

    # A consumer group with a member is active: its offsets cannot be reset.
    refused = groups(server, "--reset-offsets", "--group", kip, "--all-topics", "--to-earliest", "--execute")
    assert refused.returncode == 1 and "but the current state is Stable." in refused.stderr


# -- delete --------------------------------------------------------------------------------------------


def test_delete_offsets_and_delete_group(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    other = unique("other")
    create_topic(server.bootstrap, other, 2)
    group = unique("del-g")
    member = workers.spawn("confluent-kafka", group, [topic])
    wait_for_split([member], topic_partitions)
    member.commit([(t, p, 1, "") for t, p in topic_partitions] + [(other, 0, 1, ""), (other, 1, 1, "")])
    wait_until(lambda: admin_state(server, group) == "STABLE", 30, "a Stable group")

    # The subscribed topic's offsets cannot be deleted while the group consumes it.
    refused = groups(server, "--delete-offsets", "--group", group, "--topic", topic)
    assert refused.returncode == 1
    assert (
        refused.stderr
        == "kcoord groups: Encountered some partition-level error, see the follow-up details.\n"
    )
    statuses = {(r["TOPIC"], int(r["PARTITION"])): r["STATUS"] for r in table(refused.stdout)}
    assert statuses == dict.fromkeys(
        topic_partitions,
        "Error: GROUP_SUBSCRIBED_TO_TOPIC: The consumer group is actively subscribed to the topic",
    )
    # Another topic's can.
    deleted = groups_ok(
        server, "--delete-offsets", "--group", group, "--topic", f"{other}:0", "--topic", f"{other}:1"
    )
    assert deleted.stdout.splitlines()[0] == f"Request succeeded for deleting offsets from group {group}."
    assert admin_committed(server, group) == dict.fromkeys(topic_partitions, 1)

    # A group with members cannot be deleted.
    busy = groups(server, "--delete", "--group", group)
    assert busy.returncode == 1
    assert busy.stderr == (
        "kcoord groups: Deletion of some consumer groups failed: "
        f"Group '{group}' could not be deleted due to: NON_EMPTY_GROUP: The group is not empty.\n"
    )
    member.close()
    wait_empty(server, group)
    done = groups_ok(server, "--delete", "--group", group)
    assert done.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    assert group not in groups_ok(server, "--list").stdout.split()
    assert group not in {g.group_id for g in admin(server).list_consumer_groups().result(timeout=15).valid}
    assert admin_committed(server, group) == {}
    gone = groups(server, "--describe", "--group", group)
    assert (gone.returncode, gone.stderr) == (1, f"kcoord groups: Consumer group '{group}' does not exist.\n")


# -- errors ----------------------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--list",), 1, "cannot connect to 127.0.0.1:{port}"),
        (("--describe",), 2, "Option --group or --all-groups is required"),
        (("--reset-offsets", "--group", "g", "--all-topics"), 2, "requires one of --to-earliest"),
        (
            ("--reset-offsets", "--group", "g", "--to-earliest"),
            2,
            "One of the reset scopes should be defined",
        ),
        (("--list", "--describe"), 2, "not allowed with argument"),
        (("--list", "--timeout", "0"), 2, "--timeout must be positive"),
        (("--describe", "--group", "g", "--type"), 2, "Option --type is only valid with --list"),
        (("--list", "--type", "share"), 2, "Invalid types list 'share'. Valid types are: classic, consumer"),
    ],
)
def test_bad_usage_and_unreachable_servers_are_one_line_errors(
    args: tuple[str, ...], code: int, message: str
) -> None:
    port = _closed_port()
    result = groups(f"127.0.0.1:{port}", *args)
    assert result.returncode == code
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("kcoord groups: ")
    assert message.format(port=port) in result.stderr


def test_errors_against_a_running_server_are_one_line(server: KcoordServer, topic: str) -> None:
    cases = {
        ("--describe", "--group", "no-such-group"): "Consumer group 'no-such-group' does not exist.",
        (
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            f"{topic}:9",
            "--to-earliest",
        ): f'The partitions "{topic}-9" do not exist',
        (
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "no-such-topic",
            "--to-earliest",
        ): "topic 'no-such-topic': UNKNOWN_TOPIC_OR_PARTITION",
        (
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            topic,
            "--to-datetime",
            "2024-01-01",
        ): "It does not contain a 'T' according to ISO8601 format",
        (
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            topic,
            "--to-datetime",
            "2024-13-01T00:00:00",
        ): "Error parsing timestamp",
        (
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            f"{topic}:x",
            "--to-earliest",
        ): f"Invalid partition 'x' specified in topic arg '{topic}:x'",
    }
    for args, message in cases.items():
        result = groups(server, *args)
        assert result.returncode == 1, (args, result)
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr, (args, result.stderr)
    from kafka.admin import KafkaAdminClient  # (confluent's list_topics() of every topic: see the report)

    kafka_python_admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        # "no-such-topic" was not auto-created; the group lookups made __consumer_offsets, as on Kafka
        assert sorted(kafka_python_admin.list_topics()) == sorted([topic, "__consumer_offsets"])
    finally:
        kafka_python_admin.close()
    assert groups_json(server, "--list") == []  # and no group either
