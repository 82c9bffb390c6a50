"""Stock consumers (kafka-python, confluent-kafka, aiokafka), each in its own process, against `kcoord serve`.

Scenarios (a)-(h) and (k) of issue 4's acceptance list.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.integration.conftest import (
    CLIENTS,
    Partition,
    Worker,
    Workers,
    partitions_of,
    unique,
    wait_for_split,
    wait_until,
)
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def three_members(
    workers: Workers, client: str, topic: str, everything: frozenset[Partition], session_timeout_s: float
) -> list[Worker]:
    """Three members of a fresh group with this session timeout, once they have split `everything`."""
    group = unique("g")
    session_timeout_ms = int(session_timeout_s * 1000)
    members = [workers.spawn(client, group, [topic], session_timeout_ms=session_timeout_ms) for _ in range(3)]
    wait_for_split(members, everything)
    return members


def numbers(worker: Worker) -> list[int]:
    return sorted(p for _, p in worker.assignment)


# (a)
def test_single_consumer_owns_every_partition(
    workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    consumer = workers.spawn(client, unique("g"), [topic])
    wait_for_split([consumer], topic_partitions)


# (b)
@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_three_consumers_split_partitions_exactly_once(
    workers: Workers, client: str, topic: str, assignor: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g")
    members = [workers.spawn(client, group, [topic], assignor=assignor) for _ in range(3)]
    wait_for_split(members, topic_partitions)
    # The leader ran the assignor the group voted for, and every member got the leader's answer.
    for member in members:
        owned = numbers(member)
        if assignor == "range":
            assert owned == [owned[0], owned[0] + 1], (
                f"range gives consecutive partitions, {member} has {owned}"
            )
        else:
            assert owned[1] - owned[0] == 3, f"roundrobin deals partitions in turn, {member} has {owned}"


# (c)
def test_closing_member_hands_its_partitions_over_before_the_session_timeout(
    workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    session_timeout_s = 10.0  # long, so that only the LeaveGroup can explain a fast handover
    members = three_members(workers, client, topic, topic_partitions, session_timeout_s)
    leaving, staying = members[2], members[:2]
    started = time.monotonic()
    leaving.close()
    wait_for_split(staying, topic_partitions, timeout=session_timeout_s - 1.0)
    assert time.monotonic() - started < session_timeout_s


# (d)
def test_killed_member_partitions_move_to_the_others_after_the_session_timeout(
    workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    session_timeout_s = 3.0
    members = three_members(workers, client, topic, topic_partitions, session_timeout_s)
    victim, survivors = members[2], members[:2]
    victim.kill()
    killed_at = time.monotonic()
    wait_for_split(survivors, topic_partitions, timeout=session_timeout_s + 30)
    elapsed = time.monotonic() - killed_at
    # Kafka does not react to a dropped connection: only the session expiry moves the partitions
    # (the victim's last heartbeat was at most a heartbeat interval before the kill).
    assert elapsed >= session_timeout_s / 2, f"partitions moved {elapsed:.2f}s after the kill"


# (e)
def test_new_member_joining_a_stable_group_gets_a_share(
    workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g")
    first = [workers.spawn(client, group, [topic]) for _ in range(2)]
    wait_for_split(first, topic_partitions)
    newcomer = workers.spawn(client, group, [topic])
    wait_for_split([*first, newcomer], topic_partitions)
    assert len(newcomer.assignment) == 2


def add_partitions(client: str, bootstrap: str, topic: str, total: int) -> None:
    """CreatePartitions through the admin client of the same library."""
    if client == "kafka-python":
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_partitions({topic: total})
        finally:
            admin.close()
    elif client == "confluent-kafka":
        from confluent_kafka.admin import AdminClient, NewPartitions

        # Keep the client referenced until the result arrives: a collected handle fails it with _DESTROY.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_partitions([NewPartitions(topic, total)])
        futures[topic].result(timeout=30)
        del admin
    else:
        from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

        async def create() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                await admin.create_partitions({topic: NewPartitions(total)})
            finally:
                await admin.close()

        asyncio.run(create())


# (f)
def test_partitions_added_to_a_subscribed_topic_get_assigned(
    server: KcoordServer, workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g")
    members = [workers.spawn(client, group, [topic], metadata_max_age_ms=500) for _ in range(2)]
    wait_for_split(members, topic_partitions)
    add_partitions(client, server.bootstrap, topic, 8)
    wait_for_split(members, partitions_of(topic, 8))


# (g)
def test_committed_offsets_and_metadata_are_read_back_by_a_new_consumer(
    workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g")
    offsets = {(topic, p): (100 + p, f"checkpoint {p} ✓" if p else "") for p in range(6)}
    first = workers.spawn(client, group, [topic])
    wait_for_split([first], topic_partitions)
    first.commit((t, p, offset, metadata) for (t, p), (offset, metadata) in offsets.items())
    first.close()
    second = workers.spawn(client, group, [topic])
    assert second.committed(offsets) == offsets


def group_is_stable_with_split(
    admin: Any, group: str, members: int, expected: frozenset[tuple[str, int]]
) -> bool:
    """DescribeGroups (server side): Stable, `members` members, assignments covering `expected` once."""
    from confluent_kafka import ConsumerGroupState

    try:
        description = admin.describe_consumer_groups([group])[group].result(timeout=15)
    except Exception:  # the server may still be coming back: try again
        return False
    owned = [(tp.topic, tp.partition) for m in description.members for tp in m.assignment.topic_partitions]
    return (
        description.state == ConsumerGroupState.STABLE
        and len(description.members) == members
        and len(owned) == len(expected)
        and set(owned) == expected
    )


# (h)
def test_server_killed_and_restarted_keeps_offsets_topics_and_group(
    server: KcoordServer, workers: Workers, client: str, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    from confluent_kafka.admin import AdminClient

    group, everything = unique("g"), topic_partitions
    members = [workers.spawn(client, group, [topic]) for _ in range(3)]
    wait_for_split(members, everything)
    committed = {}
    for member in members:
        mine = {(t, p): (1000 + p, f"before restart {p}") for t, p in member.assignment}
        member.commit((t, p, o, m) for (t, p), (o, m) in mine.items())
        committed.update(mine)

    server.kill()
    server.start()  # same port, same data dir

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    metadata = admin.list_topics(topic, timeout=15)
    assert len(metadata.topics[topic].partitions) == 6, "the topic lost partitions across the restart"

    def read_back() -> dict[tuple[str, int], tuple[int, str]] | None:
        answer = members[0].request({"cmd": "committed", "partitions": [list(p) for p in everything]})
        if answer["event"] != "done":
            return None
        return {(t, p): (o, m) for t, p, o, m in answer["offsets"]}

    assert wait_until(read_back, 30, "committed offsets after the restart") == committed
    wait_until(
        lambda: group_is_stable_with_split(admin, group, 3, everything),
        45,
        "the group to be Stable again with 3 members owning every partition",
        interval=0.3,
    )
    wait_for_split(members, everything)
    # Each consumer commits again in the current generation: they are all members after the restart.
    for member in members:
        member.commit((t, p, 2000 + p, "after restart") for t, p in member.assignment)


# (k)
def test_mixed_clients_in_one_group_split_partitions_with_range(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    group = unique("g")
    members = [workers.spawn(client, group, [topic], assignor="range") for client in CLIENTS]
    wait_for_split(members, topic_partitions)
    for member in members:
        owned = numbers(member)
        assert owned == [owned[0], owned[0] + 1], f"range gives consecutive partitions, {member} has {owned}"
