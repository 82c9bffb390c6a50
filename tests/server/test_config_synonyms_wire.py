"""DescribeConfigs v4 with synonyms on the wire (real server, raw socket): the broker resource lists the
secondary names Kafka has (log.retention.hours, log.roll.hours, ...), a setting without a Kafka default is
null with no synonym, kcoord's own settings show the flag's value then Kafka's default, and a topic's
retention.ms has no synonym (ConfigHelper.configSynonyms)."""

from __future__ import annotations

import socket

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_compression_configs import (
    BROKER,
    DEFAULT_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC,
    describe,
)
from tests.server.wire import call, connect, create_topic


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    return connect(server.address)


def test_the_broker_resource_has_kafkas_synonym_chains(sock: socket.socket) -> None:
    broker = describe(sock, BROKER, "0")
    hours = broker["log.retention.hours"]
    assert (hours["value"], hours["config_source"]) == ("168", DEFAULT_CONFIG)
    assert hours["synonyms"] == [{"name": "log.retention.hours", "value": "168", "source": DEFAULT_CONFIG}]
    for unset in ("log.retention.ms", "log.retention.minutes", "log.roll.ms", "log.flush.interval.ms"):
        assert (broker[unset]["value"], broker[unset]["synonyms"]) == (None, []), unset
        assert broker[unset]["config_source"] == DEFAULT_CONFIG
    assert broker["log.roll.hours"]["value"] == "168"
    assert broker["log.roll.jitter.hours"]["value"] == "0"
    partitions = broker["num.partitions"]
    assert partitions["synonyms"] == [
        {"name": "num.partitions", "value": "1", "source": STATIC_BROKER_CONFIG},
        {"name": "num.partitions", "value": "1", "source": DEFAULT_CONFIG},
    ]
    assert all(c["read_only"] and not c["is_sensitive"] for c in broker.values())
    session = broker[
        "group.consumer.session.timeout.ms"
    ]  # what a group's consumer.session.timeout.ms defaults to
    assert (session["value"], session["config_source"]) == ("45000", STATIC_BROKER_CONFIG)


def test_a_topics_retention_has_no_synonym_and_segment_bytes_has_its_default(sock: socket.socket) -> None:
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    topic = describe(sock, TOPIC, "t")
    for name in ("retention.ms", "segment.ms", "segment.jitter.ms", "flush.ms", "remote.storage.enable"):
        assert (topic[name]["config_source"], topic[name]["synonyms"]) == (DEFAULT_CONFIG, []), name
    assert topic["retention.ms"]["value"] == "604800000"
    assert topic["segment.bytes"]["synonyms"] == [
        {"name": "log.segment.bytes", "value": "1073741824", "source": DEFAULT_CONFIG}
    ]
    assert not any(c["read_only"] for c in topic.values())


def test_every_config_is_documented_when_asked(sock: socket.socket) -> None:
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    for kind, name in ((TOPIC, "t"), (BROKER, "0")):
        body = {
            "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": True,
        }
        configs = call(sock, 32, 4, body)["results"][0]["configs"]
        assert configs and all(c["documentation"] for c in configs), [
            c["name"] for c in configs if not c["documentation"]
        ]
        body["include_documentation"] = False
        assert not any(c["documentation"] for c in call(sock, 32, 4, body)["results"][0]["configs"])


def test_the_cluster_default_resource_lists_kafka_43s_dynamic_default(sock: socket.socket) -> None:
    # ConfigHelper.describeConfigs: "" describes currentDynamicDefaultConfigs, where a Kafka 4.3
    # controller has put min.insync.replicas (KIP-966), each with only its DYNAMIC_DEFAULT synonym
    described = describe(sock, BROKER, "")
    assert list(described) == ["min.insync.replicas"]
    entry = described["min.insync.replicas"]
    assert (entry["value"], entry["config_source"]) == ("1", 3)
    assert entry["synonyms"] == [{"name": "min.insync.replicas", "value": "1", "source": 3}]
