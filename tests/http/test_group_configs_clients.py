"""GROUP config resources with stock clients (issue 33): confluent-kafka's AdminClient describes and
alters a group's configs (ConfigResource GROUP, sent as type 32), and a running consumer-protocol member
(confluent-kafka, `group.protocol=consumer`, its own process) heartbeats at the group's new interval
and is fenced after the group's own session timeout, both taken at once. The heartbeat rate is read
from the server's /metrics (kcoord_requests_total of ConsumerGroupHeartbeat)."""

from __future__ import annotations

import signal
import time

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.http.conftest import Http, sample
from tests.integration.conftest import Partition, Workers, unique, wait_for_split, wait_until
from tests.kcoord_process import KcoordServer

INTERVAL, SESSION = "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"
SERVER_ARGS = (
    "--group-consumer-min-session-timeout-ms", "1000",
    "--group-consumer-session-timeout-ms", "30000",
    "--group-consumer-min-heartbeat-interval-ms", "100",
    "--group-consumer-heartbeat-interval-ms", "300",
)  # fmt: skip
pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), pytest.mark.server_args(*SERVER_ARGS)]


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.GROUP, group)
    return dict(admin.describe_configs([resource])[resource].result(timeout=30))


def _set(admin: AdminClient, group: str, name: str, value: str) -> None:
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def _heartbeats(http: Http) -> float:
    metrics = http.metrics()
    return sum(
        value
        for (name, labels), value in metrics.items()
        if name == "kcoord_requests_total" and ("api", "ConsumerGroupHeartbeat") in labels
    )


def _rate(http: Http, seconds: float) -> float:
    """ConsumerGroupHeartbeats per second over a window (one member: its heartbeat rate)."""
    before = _heartbeats(http)
    time.sleep(seconds)  # a rate needs a window of time; nothing to await
    return (_heartbeats(http) - before) / seconds


def test_admin_client_describes_and_alters_and_the_member_heartbeats_at_the_new_interval(
    server: KcoordServer, http: Http, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    group = unique("gcfg")
    described = _describe(admin, group)  # no such group yet: the broker's settings, as Kafka
    # STATIC_BROKER_CONFIG (4): the server's flag sets group.consumer.heartbeat.interval.ms, as a Kafka
    # broker with it in server.properties describes it (ConfigHelper.createGroupConfigEntry)
    interval = described[INTERVAL]
    assert (interval.value, interval.is_default, getattr(interval.source, "value", interval.source)) == (
        "300",
        False,
        4,
    )
    assert described[SESSION].value == "30000"
    member = workers.spawn("confluent-kafka", group, [topic], group_protocol="consumer")
    wait_for_split([member], topic_partitions)
    assert _rate(http, 3.0) >= 1.5  # every 300 ms

    _set(admin, group, INTERVAL, "4000")
    entry = _describe(admin, group)[INTERVAL]
    # GROUP_CONFIG (8): this confluent-kafka has no name for it and hands the number through
    assert (entry.value, entry.is_default, getattr(entry.source, "value", entry.source)) == ("4000", False, 8)
    # a heartbeat the server answers from now on carries the new interval; the one in flight before the
    # alter was answered with the old one: the window opens once one of the new answers went out
    after_alter = _heartbeats(http)
    wait_until(lambda: _heartbeats(http) > after_alter, 10, "a heartbeat answered with the new interval")
    assert _rate(http, 8.0) <= 0.5  # every 4 s
    assert member.alive()
    assert sample(http.metrics(), "kcoord_group_members", group=group) == 1


def test_a_member_is_fenced_after_the_groups_own_session_timeout(
    server: KcoordServer, workers: Workers, topic: str, topic_partitions: frozenset[Partition]
) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    group = unique("gcfg")
    _set(admin, group, SESSION, "2000")  # the broker's is 30 s
    members = [workers.spawn("confluent-kafka", group, [topic], group_protocol="consumer") for _ in range(2)]
    wait_for_split(members, topic_partitions)
    victim, survivor = members
    victim.proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    victim.proc.wait(10)
    wait_for_split([survivor], topic_partitions, timeout=20)
    took = time.monotonic() - killed_at
    assert 1.8 <= took < 20, f"partitions moved after {took:.1f}s"
