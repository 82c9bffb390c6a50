"""Group administration through stock admin clients: scenario (l) of issue 4's acceptance list.

List, describe (state, members, decoded assignments), list offsets (committed and ListOffsets),
delete offsets and delete group, with confluent-kafka's AdminClient and kafka-python's KafkaAdminClient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import Partition, Workers, unique, wait_for_split, wait_until
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


class Setup:
    """A 6-partition topic and a Stable group of two kafka-python consumers with committed offsets."""

    def __init__(self, workers: Workers, topic: str, everything: frozenset[Partition]) -> None:
        self.topic, self.group, self.everything = topic, unique("admin-g"), everything
        self.members = [
            workers.spawn("kafka-python", self.group, [self.topic], client_id=f"admin-member-{i}")
            for i in range(2)
        ]
        wait_for_split(self.members, self.everything)
        self.offsets: dict[Partition, tuple[int, str]] = {}
        for member in self.members:
            mine = {tp: (10 + tp[1], f"meta-{tp[1]}") for tp in member.assignment}
            member.commit((t, p, o, m) for (t, p), (o, m) in mine.items())
            self.offsets.update(mine)

    def assignments(self) -> dict[str, frozenset[Partition]]:
        return {m.name: m.assignment for m in self.members}

    def close_members(self) -> None:
        for member in self.members:
            member.close()


@pytest.fixture
def setup(workers: Workers, topic: str, topic_partitions: frozenset[Partition]) -> Iterator[Setup]:
    yield Setup(workers, topic, topic_partitions)


# -- confluent-kafka ----------------------------------------------------------------------------------


def test_confluent_admin_lists_describes_reads_offsets_and_deletes_a_group(
    server: KcoordServer, setup: Setup
) -> None:
    from confluent_kafka import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        KafkaException,
        TopicPartition,
    )
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    group = setup.group

    listed = admin.list_consumer_groups().result(timeout=15)
    listing = {g.group_id: g for g in listed.valid}
    assert group in listing
    assert listing[group].state == ConsumerGroupState.STABLE

    description = admin.describe_consumer_groups([group])[group].result(timeout=15)
    assert description.state == ConsumerGroupState.STABLE
    assert description.partition_assignor == "range"
    described = {
        m.client_id: frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        for m in description.members
    }
    assert described == setup.assignments()

    request = [ConsumerGroupTopicPartitions(group)]
    result = admin.list_consumer_group_offsets(request)[group].result(timeout=15)
    assert {
        (tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in result.topic_partitions
    } == setup.offsets

    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in setup.everything})
        assert {tp.partition: f.result(timeout=15).offset for tp, f in futures.items()} == dict.fromkeys(
            range(6), 0
        )

    with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
        admin.delete_consumer_groups([group])[group].result(timeout=15)

    setup.close_members()
    wait_until(
        lambda: (
            admin.describe_consumer_groups([group])[group].result(timeout=15).state
            == ConsumerGroupState.EMPTY
        ),
        15,
        "the group to be Empty after its members left",
    )
    # While Empty, an admin (generation -1) commit is accepted: alter one partition's offset.
    altered = [TopicPartition(setup.topic, 0, 77, metadata="altered")]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, altered)])[group].result(
        timeout=15
    )
    result = admin.list_consumer_group_offsets(request)[group].result(timeout=15)
    assert {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in result.topic_partitions} == {
        **setup.offsets,
        (setup.topic, 0): (77, "altered"),
    }

    admin.delete_consumer_groups([group])[group].result(timeout=15)
    listed = admin.list_consumer_groups().result(timeout=15)
    assert group not in {g.group_id for g in listed.valid}
    result = admin.list_consumer_group_offsets(request)[group].result(timeout=15)
    assert [tp for tp in result.topic_partitions if tp.offset >= 0] == []


# -- kafka-python -------------------------------------------------------------------------------------


def _assigned(member: dict[str, Any]) -> frozenset[Partition]:
    assignment = member["member_assignment"]
    if not isinstance(assignment, dict):
        assignment = assignment.to_dict()
    return frozenset((tp["topic"], p) for tp in assignment["assigned_partitions"] for p in tp["partitions"])


def test_kafka_python_admin_lists_describes_reads_deletes_offsets_and_deletes_a_group(
    server: KcoordServer, setup: Setup
) -> None:
    import kafka.errors as errors
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient, OffsetSpec

    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        group = setup.group
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert group in listed
        assert listed[group]["protocol_type"] == "consumer"

        description = admin.describe_groups([group])[group]
        assert description["error"] is None
        assert description["group_state"] == "Stable"
        assert description["protocol_type"] == "consumer"
        assert description["protocol_data"] == "range"
        assert {m["client_id"]: _assigned(m) for m in description["members"]} == setup.assignments()

        def committed() -> dict[Partition, tuple[int, str]]:
            offsets = admin.list_group_offsets({group: None})[group]
            return {(tp.topic, tp.partition): (oam.offset, oam.metadata) for tp, oam in offsets.items()}

        assert committed() == setup.offsets

        for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST):
            found = admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in setup.everything})
            assert {tp.partition: ot.offset for tp, ot in found.items()} == dict.fromkeys(range(6), 0)

        first = TopicPartition(setup.topic, 0)
        # The members are subscribed to the topic: its offsets cannot be deleted yet.
        refused = admin.delete_group_offsets(group, [first])
        assert refused == {first: errors.GroupSubscribedToTopicError}
        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}

        setup.close_members()
        wait_until(
            lambda: admin.describe_groups([group])[group]["group_state"] == "Empty",
            15,
            "the group to be Empty after its members left",
        )
        assert admin.delete_group_offsets(group, [first]) == {first: errors.NoError}
        expected = dict(setup.offsets)
        del expected[(setup.topic, 0)]
        assert committed() == expected

        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert committed() == {}
        gone = admin.describe_groups([group])[group]
        # Kafka answers Dead with no error before DescribeGroups v6, GROUP_ID_NOT_FOUND from v6 (KIP-1043).
        assert gone["group_state"] == "Dead" or "GroupIdNotFound" in str(gone["error"]), gone
    finally:
        admin.close()
