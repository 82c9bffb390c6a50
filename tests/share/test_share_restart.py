"""Share groups across a broker restart and a broker crash (SIGKILL) mid-stream (issue 34 item 5),
Apache Kafka 4.3.1 and kcoord alike: what was acknowledged is not delivered again, what was only
acquired (acquisition is in memory: Kafka's SharePartition.acquire does not persist) is delivered again,
and nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.share.scenario import Broker, by_offset

pytestmark = pytest.mark.xdist_group("share_brokers")


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "kill-9"])
def test_a_broker_restart_redelivers_nothing_acknowledged_and_loses_nothing(
    broker: Broker, kill: bool, tmp_path: Path
) -> None:
    topic, group = broker.topic("restart"), broker.group("restart")
    broker.produce(topic, [f"v{i}" for i in range(10)])
    done = broker.consumer("java", group, topic, "accept", tmp_path, "java-done")
    try:
        done.wait(lambda _: len(done.records()) >= 10)
        done.stop()
    finally:
        done.kill()
    broker.produce(topic, [f"v{i}" for i in range(10, 20)])
    holder = broker.consumer("java", group, topic, "hold", tmp_path, "java-holder")
    try:
        holder.wait(lambda _: len(holder.records()) >= 10)
        # The holder dies while the broker is down: no client of it can acquire anything after the
        # restart (a client that idles may still prefetch records and hide them until their locks expire).
        broker.restart(kill, while_down=holder.kill)
        broker.produce(topic, [f"v{i}" for i in range(20, 25)])
        after = broker.consumer("confluent", group, topic, "accept", tmp_path, "confluent-after")
        try:
            after.wait(lambda _: len({r["offset"] for r in after.records()}) >= 15)
            after.stop()
        finally:
            after.kill()
    finally:
        holder.kill()
    assert [r["offset"] for r in done.records()] == list(range(10))
    assert [r["offset"] for r in holder.records()] == list(range(10, 20))
    delivered = by_offset(after.records())
    assert sorted(delivered) == list(range(10, 25)), "acknowledged records came back or records were lost"
    assert all(len(rs) == 1 for rs in delivered.values()), delivered
    # The holder's acquisitions were in memory only: after the restart they count as never delivered.
    assert [delivered[o][0]["delivery"] for o in range(10, 25)] == [1] * 15
    assert [delivered[o][0]["value"] for o in range(10, 25)] == [f"v{i}" for i in range(10, 25)]
