"""DescribeConfigs (v4, with synonyms and documentation) of a topic against Apache Kafka 4.3, one
aspect at a time so that each disagreement is its own finding: which configs are listed, their values
and sources, their synonyms (in Kafka's order), their types, their documentation. Also the refusals of
DescribeConfigs and IncrementalAlterConfigs, and a GROUP resource (KIP-848 group configs)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.diff import Pair, assert_same, differences, unexplained
from tests.oracle.scenario import configs, create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")

DESCRIBE_CONFIGS_V = 4
TOPIC, GROUP = 2, 32


def describe(resource_type: int, name: str, keys: list[str] | None = None) -> dict[str, Any]:
    return {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": True,
    }


@pytest.fixture(scope="module")
def described(module_pair: Pair) -> dict[str, dict[str, Any]]:
    """One topic with two configs set, described by both brokers: {side: {config name: entry}}."""
    pair = module_pair
    name = unique("configs")
    body = topic(name, 2, configs=configs(retention_ms="3600000", cleanup_policy="compact"))
    create_on_both(pair, body)
    answers = pair.ask(32, DESCRIBE_CONFIGS_V, describe(TOPIC, name))
    out = {}
    for side, answer in zip(("kafka", "kcoord"), answers, strict=True):
        (result,) = answer["results"]
        assert result["error_code"] == 0, (side, result)
        out[side] = {entry["name"]: entry for entry in result["configs"]}
    return out


def _aspect(described: dict[str, dict[str, Any]], pick: Any) -> list[str]:
    """The differences of `pick(entry)` over the configs both sides list (paths: configs.<name>)."""
    common = described["kafka"].keys() & described["kcoord"].keys()
    kafka, kcoord = ({"configs": {n: pick(described[side][n]) for n in common}} for side in described)
    return unexplained("DescribeConfigs", differences(kafka, kcoord))


# Seen against Kafka 4.3.1: aspect -> the finding.
FINDINGS: dict[str, str] = {}


def _xfail(aspect: str, findings: dict[str, str] = FINDINGS) -> Any:
    if aspect in findings:
        return pytest.param(aspect, marks=pytest.mark.xfail(strict=True, reason=findings[aspect]))
    return aspect


PICKS: dict[str, Any] = {
    "value": lambda e: {k: e[k] for k in ("value", "read_only", "config_source", "is_sensitive")},
    "synonyms": lambda e: [f"{s['name']}={s['value']}@{s['source']}" for s in e["synonyms"]],
    "config_type": lambda e: e["config_type"],
    "documentation": lambda e: {"documentation": e["documentation"]},  # known.py: kcoord's own words
}


def test_a_topic_lists_the_configs_kafka_lists(described: dict[str, dict[str, Any]]) -> None:
    names = {side: sorted(entries) for side, entries in described.items()}
    found = [f"only Kafka lists {n}" for n in names["kafka"] if n not in described["kcoord"]]
    found += [f"only kcoord lists {n}" for n in names["kcoord"] if n not in described["kafka"]]
    assert_same(found)


@pytest.mark.parametrize("aspect", [_xfail(a) for a in PICKS])
def test_a_topics_configs_are_described_as_kafka(described: dict[str, dict[str, Any]], aspect: str) -> None:
    assert_same(_aspect(described, PICKS[aspect]))


def test_kcoord_documents_every_config_kafka_documents(described: dict[str, dict[str, Any]]) -> None:
    """The documentation differs in words only (known.py): where Kafka has text, kcoord has its own."""
    undocumented = [
        name
        for name, entry in described["kafka"].items()
        if entry["documentation"] and not described["kcoord"].get(name, {}).get("documentation")
    ]
    assert undocumented == []


def test_describe_configs_of_an_unknown_topic(pair: Pair) -> None:
    assert_same(pair.compare("DescribeConfigs", 32, DESCRIBE_CONFIGS_V, describe(TOPIC, unique("none"))))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"name": "retention.ms", "config_operation": 0, "value": "abc"}, id="bad-value"),
        pytest.param({"name": "no.such.config", "config_operation": 0, "value": "1"}, id="unknown"),
        pytest.param({"name": "retention.ms", "config_operation": 2, "value": "1"}, id="append-to-scalar"),
        pytest.param({"name": "cleanup.policy", "config_operation": 0, "value": "bogus"}, id="bad-policy"),
    ],
)
def test_incremental_alter_configs_refuses_as_kafka(pair: Pair, change: dict[str, Any]) -> None:
    name = unique("alter")
    create_on_both(pair, topic(name))
    resource = {"resource_type": TOPIC, "resource_name": name, "configs": [change]}
    body = {"resources": [resource], "validate_only": False}
    assert_same(pair.compare("IncrementalAlterConfigs", 44, 1, body))


def test_describe_configs_of_a_group(pair: Pair) -> None:
    assert_same(pair.compare("DescribeConfigs", 32, DESCRIBE_CONFIGS_V, describe(GROUP, unique("group"))))


BROKER = 4
# Per deployment, never comparable: where each broker listens and keeps its files, and who it is.
DEPLOYMENT = frozenset(
    {
        "advertised.listeners",
        "listeners",
        "listener.security.protocol.map",
        "log.dirs",
        "broker.id",
        "node.id",
    }
)


@pytest.fixture(scope="module")
def broker_described(module_pair: Pair) -> dict[str, dict[str, Any]]:
    """Each broker's own BROKER resource (named by its node id), with synonyms: {side: {name: entry}}."""
    out = {}
    for side in (module_pair.kafka, module_pair.kcoord):
        meta = side.call(3, 12, {"topics": [], "allow_auto_topic_creation": False})
        node = str(meta["brokers"][0]["node_id"])
        body = describe(BROKER, node) | {"include_documentation": False}
        (result,) = side.call(32, DESCRIBE_CONFIGS_V, body)["results"]
        assert result["error_code"] == 0, (side.name, result)
        out[side.name] = {entry["name"]: entry for entry in result["configs"]}
    return out


def test_the_cluster_wide_broker_defaults_are_described_as_kafka(pair: Pair) -> None:
    """The BROKER resource "" (the cluster-wide dynamic defaults): Kafka 4.3's controller writes
    min.insync.replicas there (KIP-966), and kcoord reports the same (read-only, as all its broker
    configs: the DescribeConfigs(broker) rows of known.py)."""
    body = describe(BROKER, "") | {"include_documentation": False}
    assert_same(pair.compare("DescribeConfigs(broker)", 32, DESCRIBE_CONFIGS_V, body))


BROKER_PICKS: dict[str, Any] = {
    "value": lambda e: "<deployment>" if e["name"] in DEPLOYMENT else e["value"],
    "config_source": lambda e: e["config_source"],
    "read_only": lambda e: e["read_only"],
    "is_sensitive": lambda e: e["is_sensitive"],
    "synonyms": lambda e: [f"{s['name']}@{s['source']}" for s in e["synonyms"]],
}
BROKER_FINDINGS: dict[str, str] = {}


@pytest.mark.parametrize("aspect", [_xfail(a, BROKER_FINDINGS) for a in BROKER_PICKS])
def test_the_broker_configs_kcoord_reports_are_described_as_kafka(
    broker_described: dict[str, dict[str, Any]], aspect: str
) -> None:
    """Issue 33 item 4: every broker config kcoord reports, as Kafka reports it (kcoord's settings come
    from its command line, hence STATIC_BROKER_CONFIG and read-only: docs/compat.md, Broker configs)."""
    only_kcoord = [
        f"only kcoord lists {n}" for n in broker_described["kcoord"] if n not in broker_described["kafka"]
    ]
    common = sorted(broker_described["kcoord"].keys() & broker_described["kafka"].keys())
    kafka, kcoord = (
        {"configs": {n: {aspect: BROKER_PICKS[aspect](broker_described[side][n])} for n in common}}
        for side in ("kafka", "kcoord")
    )
    assert_same(only_kcoord + unexplained("DescribeConfigs(broker)", differences(kafka, kcoord)))
