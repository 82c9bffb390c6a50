"""Cluster and topic administration against Apache Kafka 4.3: DescribeCluster, Metadata without
topics, DeleteTopics and CreatePartitions and their refusals, DeleteGroups and OffsetDelete on groups
in each state, InitProducerId for an idempotent producer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kcoord.protocol.types import ZERO_UUID
from tests.oracle.diff import Pair, assert_same
from tests.oracle.scenario import METADATA_V, create_on_both, topic, unique
from tests.oracle.test_classic_groups import COMMIT_V, FETCH_V, commit, joined, offset_fetch, step

pytestmark = pytest.mark.xdist_group("kafka_oracle")


def test_the_cluster_is_described_as_kafka(pair: Pair) -> None:
    found = pair.compare("DescribeCluster", 60, 1, {"include_cluster_authorized_operations": False})
    found += pair.compare("DescribeCluster", 60, 1, {"include_cluster_authorized_operations": True})
    body = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    found += pair.compare("Metadata", 3, METADATA_V, body)
    assert_same(found)


RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def test_an_idempotent_producer_gets_an_id_as_from_kafka(pair: Pair) -> None:
    body = {
        "transactional_id": None,
        "transaction_timeout_ms": 60_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    deadline = time.monotonic() + 30
    # A fresh Kafka loads __transaction_state and fetches its first id block from the controller first.
    while pair.kafka.call(22, 4, body)["error_code"] in RETRIABLE:
        assert time.monotonic() < deadline, "Kafka never handed out a producer id"
        time.sleep(0.05)  # poll interval
    kafka, kcoord = pair.ask(22, 4, body)
    assert kafka["producer_id"] >= 0 and kcoord["producer_id"] >= 0
    assert_same([f"InitProducerId {p}: kafka={a!r} kcoord={b!r}" for p, a, b in pair.diff(kafka, kcoord)])


def delete_topics(*names: str) -> dict[str, Any]:
    return {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in names], "timeout_ms": 10_000}


def create_partitions(name: str, count: int, validate_only: bool = False) -> dict[str, Any]:
    return {
        "topics": [{"name": name, "count": count, "assignments": None}],
        "timeout_ms": 10_000,
        "validate_only": validate_only,
    }


def test_topics_are_grown_and_deleted_as_on_kafka(pair: Pair) -> None:
    name = unique("admin")
    create_on_both(pair, topic(name, 2))
    found = pair.compare("CreatePartitions", 37, 3, create_partitions(name, 2))
    found += pair.compare("CreatePartitions", 37, 3, create_partitions(name, 1))
    found += pair.compare("CreatePartitions", 37, 3, create_partitions(name, 4, validate_only=True))
    found += pair.compare("CreatePartitions", 37, 3, create_partitions(unique("missing"), 4))
    found += pair.compare("CreatePartitions", 37, 3, create_partitions(name, 3))
    found += pair.compare("DeleteTopics", 20, 6, delete_topics(name, unique("missing")))
    assert_same(found)


def test_groups_are_deleted_and_their_offsets_removed_as_on_kafka(pair: Pair) -> None:
    group, simple, name = unique("busy"), unique("simple"), unique("t")
    create_on_both(pair, topic(name, 1))
    found = joined(pair, group)
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(group, "<m1>", 1, name))
    found += step(pair, "OffsetCommit", 8, COMMIT_V, commit(simple, "", -1, name))
    deleting = {"group_id": group, "topics": [{"name": name, "partitions": [{"partition_index": 0}]}]}
    found += step(pair, "OffsetDelete", 47, 0, deleting)  # the member consumes nothing: no subscription
    found += step(pair, "OffsetDelete", 47, 0, {**deleting, "group_id": unique("none")})
    found += step(pair, "OffsetDelete", 47, 0, {**deleting, "group_id": simple})
    found += step(pair, "OffsetFetch", 9, FETCH_V, offset_fetch(group, simple))
    found += step(pair, "DeleteGroups", 42, 2, {"groups_names": [group, simple, unique("none")]})
    assert_same(found)
