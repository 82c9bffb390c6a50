"""compression.type and its KIP-390 levels on the wire (raw sockets, real server): CreateTopics,
AlterConfigs, IncrementalAlterConfigs and DescribeConfigs accept and report Kafka's values, refuse a bad
value or level with INVALID_CONFIG and Kafka's message (LogConfig's ConfigDef validators), and the
broker's `--compression-type` / `--compression-*-level` default every topic without its own, described as
STATIC_BROKER_CONFIG; a produced batch is stored in the topic's codec (Fetch returns the stored bytes)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import iter_records, read_header
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, fetch, produce
from tests.server.wire import call, connect, create_topic

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
SET, DELETE = 0, 1
ONE_OF = "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
NAMES = ("compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level")


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    return connect(server.address)


def _configs(**configs: str) -> list[dict[str, str]]:
    return [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()]


def describe(sock: socket.socket, kind: int, name: str, keys: list[str] | None = None) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": False,
    }
    result = call(sock, 32, 4, body)["results"][0]
    assert result["error_code"] == ErrorCode.NONE, result
    return {c["name"]: c for c in result["configs"]}


def value_source(entry: dict[str, Any]) -> tuple[str, int]:
    return entry["value"], entry["config_source"]


def alter(
    sock: socket.socket, topic: str, configs: list[dict[str, Any]], incremental: bool
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": TOPIC, "resource_name": topic, "configs": configs}],
        "validate_only": False,
    }
    return call(sock, 44 if incremental else 33, 1, body)["responses"][0]  # type: ignore[no-any-return]


def test_create_topics_accepts_and_reports_every_codec_and_level(sock: socket.socket) -> None:
    for codec in ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"):
        result = create_topic(
            sock,
            f"c-{codec}",
            1,
            version=5,
            configs=_configs(
                compression_type=codec,
                compression_gzip_level="9",
                compression_lz4_level="17",
                compression_zstd_level="-131072",
            ),
        )
        assert result["error_code"] == ErrorCode.NONE, result
        reported = {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}
        assert reported["compression.type"] == (codec, DYNAMIC_TOPIC_CONFIG)
        assert reported["compression.gzip.level"] == ("9", DYNAMIC_TOPIC_CONFIG)
        described = describe(sock, TOPIC, f"c-{codec}", list(NAMES))
        assert {n: described[n]["value"] for n in NAMES} == dict(
            zip(NAMES, (codec, "9", "17", "-131072"), strict=True)
        )


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        (
            "compression.type",
            "none",
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            "compression.type",
            "ZSTD",
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
        ("compression.gzip.level", "10", "Value must be between 1 and 9 or equal to -1"),
        ("compression.lz4.level", "0", "Value must be at least 1"),
        ("compression.lz4.level", "18", "Value must be no more than 17"),
        ("compression.zstd.level", "23", "Value must be no more than 22"),
        ("compression.zstd.level", "-131073", "Value must be at least -131072"),
        ("compression.zstd.level", "high", "Not a number of type INT"),
    ],
)
def test_a_bad_value_or_level_is_invalid_config_everywhere(
    sock: socket.socket, name: str, value: str, reason: str
) -> None:
    message = f"Invalid value {value} for configuration {name}: {reason}"
    created = create_topic(sock, "bad", 1, version=5, configs=[{"name": name, "value": value}])
    assert (created["error_code"], created["error_message"]) == (ErrorCode.INVALID_CONFIG, message)
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    for incremental in (False, True):
        entry: dict[str, Any] = {"name": name, "value": value}
        if incremental:
            entry["config_operation"] = SET
        answer = alter(sock, "t", [entry], incremental)
        assert (answer["error_code"], answer["error_message"]) == (ErrorCode.INVALID_CONFIG, message)
    assert describe(sock, TOPIC, "t", [name])[name]["config_source"] == DEFAULT_CONFIG


def test_alter_and_incremental_alter_set_and_delete_the_codec(sock: socket.socket) -> None:
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    answer = alter(sock, "t", _configs(compression_type="gzip", compression_gzip_level="1"), False)
    assert answer["error_code"] == ErrorCode.NONE, answer
    described = describe(sock, TOPIC, "t", list(NAMES))
    assert (described["compression.type"]["value"], described["compression.gzip.level"]["value"]) == (
        "gzip",
        "1",
    )
    assert described["compression.type"]["synonyms"] == [
        {"name": "compression.type", "value": "gzip", "source": DYNAMIC_TOPIC_CONFIG},
        {"name": "compression.type", "value": "producer", "source": DEFAULT_CONFIG},
    ]
    produce(sock, "t", 0, batch(3))
    assert read_header(fetch(sock, "t", 0, 0)["records"]).compression == 1

    ops = [
        {"name": "compression.type", "config_operation": SET, "value": "snappy"},
        {"name": "compression.gzip.level", "config_operation": DELETE, "value": None},
    ]
    assert alter(sock, "t", ops, True)["error_code"] == ErrorCode.NONE
    described = describe(sock, TOPIC, "t", list(NAMES))
    assert described["compression.type"]["value"] == "snappy"
    assert value_source(described["compression.gzip.level"]) == ("-1", DEFAULT_CONFIG)
    produce(sock, "t", 0, batch(3, first=3))  # the open partition log takes the new codec at once
    records = fetch(sock, "t", 0, 3)["records"]
    assert read_header(records).compression == 2
    assert [r.offset for r in iter_records(records)] == [3, 4, 5]


@pytest.mark.server_args("--compression-type", "zstd", "--compression-zstd-level", "7")
def test_the_brokers_default_applies_to_topics_without_their_own(sock: socket.socket) -> None:
    assert create_topic(sock, "plain", 1)["error_code"] == ErrorCode.NONE
    assert create_topic(sock, "own", 1, configs=_configs(compression_type="lz4"))["error_code"] == 0
    described = describe(sock, TOPIC, "plain", list(NAMES))
    assert value_source(described["compression.type"]) == ("zstd", STATIC_BROKER_CONFIG)
    assert described["compression.zstd.level"]["synonyms"] == [
        {"name": "compression.zstd.level", "value": "7", "source": STATIC_BROKER_CONFIG},
        {"name": "compression.zstd.level", "value": "3", "source": DEFAULT_CONFIG},
    ]
    assert described["compression.lz4.level"]["config_source"] == DEFAULT_CONFIG
    own = describe(sock, TOPIC, "own", ["compression.type"])["compression.type"]
    sources = [DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG]
    assert [s["source"] for s in own["synonyms"]] == sources
    broker = describe(sock, BROKER, "0", list(NAMES))
    assert value_source(broker["compression.type"]) == ("zstd", STATIC_BROKER_CONFIG)
    assert broker["compression.gzip.level"]["config_source"] == DEFAULT_CONFIG

    for topic, codec in (("plain", 4), ("own", 3)):
        assert produce(sock, topic, 0, batch(5, size=500))["error_code"] == ErrorCode.NONE
        records = fetch(sock, topic, 0, 0)["records"]
        assert read_header(records).compression == codec
        assert [r.key for r in iter_records(records)] == [b"k%d" % i for i in range(5)]
