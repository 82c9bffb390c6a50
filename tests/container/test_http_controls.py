"""HttpControls against a real `kcoord serve --enable-test-controls` subprocess (no container needed):
each call of the control table round-trips into the `views` objects, refusals become ControlError
with the server's status, and group ids with '/' or spaces travel as one path segment."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kcoord.testing.http_controls import ControlError, HttpControls
from tests.kcoord_process import KcoordServer

pytestmark = pytest.mark.timeout(120)
TOKEN = "s3cret-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[KcoordServer]:
    srv = KcoordServer(
        tmp_path / "data",
        "--http-listen", "127.0.0.1:0", "--enable-test-controls", "--http-bearer-token", TOKEN,
        "--group-min-session-timeout-ms", "1000", "--fsync", "never",
        log_path=tmp_path / "server.log",
    )  # fmt: skip
    try:
        srv.start()
        yield srv
    finally:
        srv.kill()


@pytest.fixture
def controls(server: KcoordServer) -> HttpControls:
    match = server.wait_for(r"http endpoint on (\S+):(\d+)", 10)
    return HttpControls(f"http://{match.group(1)}:{match.group(2)}", bearer_token=TOKEN)


def test_configure_round_trips_and_refusals_carry_the_servers_status(controls: HttpControls) -> None:
    assert controls.configure(group_min_session_timeout_ms=2000)["group_min_session_timeout_ms"] == 2000
    with pytest.raises(ControlError) as refused:
        controls.configure(offsets_retention_minutes=1)
    assert refused.value.status == 400 and "offsets_retention_minutes" in refused.value.message


def test_without_the_bearer_token_the_controls_answer_401(controls: HttpControls) -> None:
    with pytest.raises(ControlError) as refused:
        HttpControls(controls.base_url).configure(group_min_session_timeout_ms=2000)
    assert refused.value.status == 401


def test_topics_records_and_reset(server: KcoordServer, controls: HttpControls) -> None:
    topic = "orders.eu_west-1"
    controls.create_topic(topic, partitions=2)
    with pytest.raises(ControlError) as exists:
        controls.create_topic(topic)
    assert exists.value.status == 409
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all")
    producer.send(topic, partition=1, key=b"k", value=b"\x00\xff", headers=[("h", b"v")]).get(timeout=30)
    producer.send(topic, partition=0, value=b"").get(timeout=30)
    [first, second] = controls.records(topic)
    assert (first.partition, first.offset, first.key, first.value) == (0, 0, None, b"")
    assert (second.partition, second.key, second.value, second.headers) == (
        1,
        b"k",
        b"\x00\xff",
        [("h", b"v")],
    )
    assert controls.reset() >= 0
    with pytest.raises(ControlError) as gone:
        controls.records(topic)
    assert gone.value.status == 404
    controls.create_topic(topic, partitions=2)  # no 409: the name is free again
    producer.send(topic, partition=1, value=b"again").get(timeout=30)  # its connection survived the reset
    producer.close()
    assert [(r.partition, r.offset, r.value) for r in controls.records(topic)] == [(1, 0, b"again")]


def test_groups_committed_faults_and_the_request_log(server: KcoordServer, controls: HttpControls) -> None:
    group, topic = "billing/eu west", "payments"  # a group id's '/' and ' ' stay in one path segment
    assert controls.group(group) is None
    fault = controls.fail("OffsetCommit", 16, group=group)
    assert (fault.kind, fault.error, fault.error_code, fault.group, fault.remaining) == (
        "error", "NOT_COORDINATOR", 16, group, 1,
    )  # fmt: skip
    assert [f.id for f in controls.faults()] == [fault.id]
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group, enable_auto_commit=False)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.commit({partition: OffsetAndMetadata(3, "", -1)})  # retried after the injected error
    consumer.close()
    assert controls.committed(group) == {(topic, 0): 3}
    assert [(f.id, f.fired, f.remaining) for f in controls.fired()] == [(fault.id, 1, 0)]
    commits = [e for e in controls.requests() if e.api == "OffsetCommit"]
    assert [(e.fault, e.error_codes) for e in commits] == [(fault.id, [16]), (None, [])]
    assert controls.requests(since=commits[-1].seq) == [
        e for e in controls.requests() if e.seq > commits[-1].seq
    ]
    delay = controls.delay("Heartbeat", 250, count=2)
    cut = controls.disconnect(12)
    assert (delay.kind, delay.ms, delay.count, cut.kind, cut.api) == (
        "delay",
        250,
        2,
        "disconnect",
        "Heartbeat",
    )
    controls.clear_faults()
    assert controls.faults() == []
    with pytest.raises(ControlError) as bad:
        controls.fail("NoSuchApi", "NOT_COORDINATOR")
    assert bad.value.status == 400


def test_wait_stable_and_advance_expire_a_session(server: KcoordServer, controls: HttpControls) -> None:
    group, topic = "expiring", "events"
    controls.create_topic(topic)
    consumer = KafkaConsumer(
        topic, bootstrap_servers=server.bootstrap, group_id=group, session_timeout_ms=6000,
        heartbeat_interval_ms=1000, max_poll_interval_ms=300_000,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=2000)
        stable = controls.wait_stable(group, timeout=10)
        assert stable.state == "Stable" and len(stable.members) == 1
        assert stable.members[0].assignment == {topic: [0]}
        moved = controls.advance(60)  # past the 6 s session: the coordinator expires the member now
        assert moved["advanced_ms"] == 60_000 and moved["fired"] >= 1
        assert stable.members[0].member_id not in _member_ids(controls, group)
    finally:
        consumer.close()


def _member_ids(controls: HttpControls, group: str) -> list[str]:
    """The group's members; none once the group is gone (an Empty group without offsets is deleted by
    the offset retention check when its interval ends inside an advance(), as on Kafka)."""
    found = controls.group(group)
    return [] if found is None else [m.member_id for m in found.members]
