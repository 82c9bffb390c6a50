"""Share groups' records as `__consumer_offsets` shows them: Kafka's keys 10-15 with value v0."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kcoord.coordinator.groups.share.model import TopicPartitionsInfo
from kcoord.coordinator.groups.share.records import ShareStatePartitions
from kcoord.coordinator.persistence import to_storage
from kcoord.coordinator.persistence.offsets_topic_records import OffsetsRecord, offsets_records
from tests import jvm
from tests.oracle.kafka import cache_dir
from tests.unit.share_groups.conftest import T1, T2, Node


def test_share_records_show_with_kafkas_key_types() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    node.hb("m1", -1)
    stored = [to_storage(r) for r in node.log.records]  # type: ignore[arg-type]
    shown = offsets_records(stored, 50, live=True)
    assert all(isinstance(r, OffsetsRecord) for r in shown)
    types = [struct.unpack_from(">h", r.key)[0] for r in shown if isinstance(r, OffsetsRecord)]
    # the join, the initialization, the leave
    assert types == [10, 11, 13, 12, 14, 15, 15, 11, 14, 13, 10, 11]
    values = [r.value for r in shown if isinstance(r, OffsetsRecord)]
    assert all(v is None or v[:2] == b"\x00\x00" for v in values)


_JAVA = """
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataValue.*;
public class StateValue { public static void main(String[] a) {
  ShareGroupStatePartitionMetadataValue v = new ShareGroupStatePartitionMetadataValue()
    .setInitializedTopics(List.of(new TopicPartitionsInfo().setTopicId(new Uuid(0L, 2L)).setTopicName("t2")
        .setPartitions(List.of(0, 1))))
    .setInitializingTopics(List.of())
    .setDeletingTopics(List.of(new TopicInfo().setTopicId(new Uuid(0L, 1L)).setTopicName("t1")));
  System.out.println(java.util.HexFormat.of().formatHex(MessageUtil.toVersionPrefixedBytes((short) 0, v)));
}}
"""


def test_deleting_topics_are_kafka_4_3s_bytes(tmp_path: Path) -> None:
    """A ShareGroupStatePartitionMetadataValue with DeletingTopics, as `__consumer_offsets` shows it, is
    byte for byte the one Kafka 4.3.1's generated class writes (read with the cached jars)."""
    libs = cache_dir() / "libs"
    if shutil.which("javac") is None or not (libs / "kafka-group-coordinator-4.3.1.jar").exists():
        pytest.skip("no JDK or no cached Kafka 4.3.1 jars")
    (tmp_path / "StateValue.java").write_text(_JAVA)
    classpath = f"{libs}/*"
    classes = jvm.compiled(tmp_path / "StateValue.java", classpath)
    ran = subprocess.run(["java", *jvm.SHORT_FLAGS, "-cp", f"{classes}:{classpath}", "StateValue"],
                         capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    kafka = ran.stdout.strip()
    record = ShareStatePartitions("g", (TopicPartitionsInfo(T2, "t2", frozenset({0, 1})),), (), ((T1, "t1"),))
    (shown,) = offsets_records([to_storage(record)], 50, live=True)
    assert isinstance(shown, OffsetsRecord) and shown.value is not None
    assert shown.value.hex() == kafka
