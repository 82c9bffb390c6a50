"""Topic configs and the cluster through stock admin clients (issue 8, item 7).

CreateTopics with configs, DescribeConfigs (topic and broker), IncrementalAlterConfigs and
AlterConfigs, DescribeCluster, and confluent-kafka's `list_topics()` (Metadata v12 with null topics,
whose 4-byte placeholder kcoord must ignore as Kafka does). The configs survive a restart and act on
the partition logs: `min.insync.replicas` above one refuses acks=all, a small `max.message.bytes`
refuses a bigger batch, `segment.bytes` rolls segments.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from tests.integration.conftest import unique
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _admin(server: KcoordServer) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


def _describe(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return dict(admin.describe_configs([resource])[resource].result(timeout=30))


def _produce_error(server: KcoordServer, topic: str, value: bytes, acks: str = "all") -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer(
        {"bootstrap.servers": server.bootstrap, "acks": acks, "message.timeout.ms": 5000, "retries": 0}
    )
    producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    return errors[0]


def test_confluent_admin_creates_describes_alters_and_configs_survive_a_restart(server: KcoordServer) -> None:
    admin = _admin(server)
    topic = unique("cfg")
    created = admin.create_topics(
        [NewTopic(topic, 2, 1, config={"retention.ms": "3600000", "min.compaction.lag.ms": "5"})]
    )
    created[topic].result(timeout=30)
    # Metadata v12 with null topics: librdkafka's list_topics() (it used to close the connection).
    metadata = admin.list_topics(timeout=30)
    assert topic in metadata.topics and len(metadata.topics[topic].partitions) == 2
    assert metadata.cluster_id == "kcoord"

    described = _describe(admin, topic)
    assert described["retention.ms"].value == "3600000"
    assert described["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["min.compaction.lag.ms"].value == "5"
    assert described["segment.bytes"].value == "1073741824"
    assert described["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("max.message.bytes", "5000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    described = _describe(admin, topic)
    assert described["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert described["max.message.bytes"].value == "5000"
    assert described["cleanup.policy"].value == "delete,compact"

    # AlterConfigs (33) replaces the whole set: what it does not name goes back to its default.
    replaced = ConfigResource(ResourceType.TOPIC, topic, set_config={"min.compaction.lag.ms": "7"})
    admin.alter_configs([replaced])[replaced].result(timeout=30)
    described = _describe(admin, topic)
    assert described["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert described["min.compaction.lag.ms"].value == "7"
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    described = _describe(admin, topic)
    assert described["min.compaction.lag.ms"].value == "7"
    assert described["cleanup.policy"].value == "delete,compact"

    # The new limit acts on the partition log at once: a 6,000-byte batch is too large.
    error = _produce_error(server, topic, b"x" * 6000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE

    server.restart()
    admin = _admin(server)
    described = _describe(admin, topic)
    assert described["max.message.bytes"].value == "5000"
    assert described["cleanup.policy"].value == "delete,compact"
    assert described["min.compaction.lag.ms"].value == "7"
    error = _produce_error(server, topic, b"x" * 6000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert _produce_error(server, topic, b"x" * 100) is None


def test_bad_configs_get_invalid_config_per_resource(server: KcoordServer) -> None:
    admin = _admin(server)
    good, bad_name, bad_value = unique("ok"), unique("badname"), unique("badvalue")
    futures = admin.create_topics(
        [
            NewTopic(good, 1, 1),
            NewTopic(bad_name, 1, 1, config={"retention.msec": "1"}),
            NewTopic(bad_value, 1, 1, config={"segment.bytes": "10"}),
        ]
    )
    futures[good].result(timeout=30)
    for name, text in ((bad_name, "Unknown topic config name: retention.msec"), (bad_value, "at least")):
        with pytest.raises(KafkaException) as info:
            futures[name].result(timeout=30)
        assert info.value.args[0].code() == KafkaError.INVALID_CONFIG
        assert text in info.value.args[0].str()
    assert bad_name not in admin.list_topics(timeout=30).topics

    resource = ConfigResource(
        ResourceType.TOPIC,
        good,
        incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    with pytest.raises(KafkaException) as info:
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert info.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "not LIST" in info.value.args[0].str()
    missing = ConfigResource(ResourceType.TOPIC, unique("missing"))
    with pytest.raises(KafkaException) as info:
        admin.describe_configs([missing])[missing].result(timeout=30)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_min_insync_replicas_above_one_refuses_acks_all_only(server: KcoordServer) -> None:
    admin = _admin(server)
    topic = unique("isr")
    admin.create_topics([NewTopic(topic, 1, 1, config={"min.insync.replicas": "2"})])[topic].result(
        timeout=30
    )
    error = _produce_error(server, topic, b"v", acks="all")
    assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS
    assert _produce_error(server, topic, b"v", acks="1") is None


def test_broker_configs_and_describe_cluster(server: KcoordServer) -> None:
    admin = _admin(server)
    broker = ConfigResource(ResourceType.BROKER, "0")
    configs = dict(admin.describe_configs([broker])[broker].result(timeout=30))
    assert configs["num.partitions"].value == "1"
    # Kafka's log.retention.ms has no default: the 7 days are log.retention.hours'
    assert configs["log.retention.ms"].value is None
    assert configs["log.retention.hours"].value == "168"
    assert configs["advertised.listeners"].value == f"PLAINTEXT://{server.bootstrap}"
    assert all(entry.is_read_only for entry in configs.values())
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert cluster.cluster_id == "kcoord"
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, server.host, server.port)]
    assert cluster.controller.id == 0
    assert cluster.authorized_operations


def test_kafka_python_admin_describes_and_alters_configs(server: KcoordServer) -> None:
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic

    topic = unique("kpcfg")
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        admin.create_topics([KpNewTopic(topic, 1, 1, topic_configs={"segment.ms": "60000"})])
        resource = KpResource(ConfigResourceType.TOPIC, topic)
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"segment.ms": "60000"}
        assert modified["segment.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        everything = admin.describe_configs([resource], config_filter="all")["topic"][topic]
        assert everything["retention.ms"]["value"] == "604800000"
        assert everything["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
        # Through AlterConfigs (33), which kafka-python fills with the other modified keys itself.
        admin.alter_configs(
            [KpResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "1000"})], incremental=False
        )
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000", "segment.ms": "60000"}
        admin.alter_configs([KpResource(ConfigResourceType.TOPIC, topic, configs={"segment.ms": "70000"})])
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000", "segment.ms": "70000"}
        cluster = admin.describe_cluster()
        assert cluster["cluster_id"] == "kcoord" and len(cluster["brokers"]) == 1
    finally:
        admin.close()
