"""The requests the oracle's scenarios share: unique names, topics created on both brokers and seen."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kcoord.protocol.types import ZERO_UUID
from tests.oracle.diff import Pair, Side

CREATE_TOPICS_V = 7
METADATA_V = 12


def unique(prefix: str) -> str:
    """A name no other test (nor xdist worker) uses on the two session brokers."""
    return f"oracle-{prefix}-{uuid.uuid4().hex[:8]}"


def topic(name: str, partitions: int = 1, replication: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [],
        "configs": [],
        **extra,
    }


def create(topics: list[dict[str, Any]], validate_only: bool = False) -> dict[str, Any]:
    return {"topics": topics, "timeout_ms": 10_000, "validate_only": validate_only}


def metadata(*names: str) -> dict[str, Any]:
    return {
        "topics": [{"topic_id": ZERO_UUID, "name": n} for n in names],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }


def configs(**values: str | None) -> list[dict[str, Any]]:
    return [{"name": k.replace("_", "."), "value": v} for k, v in values.items()]


def create_on_both(pair: Pair, *topics: dict[str, Any]) -> None:
    """Create `topics` on both brokers and wait (bounded) until Kafka's broker leads every partition:
    Kafka answers CreateTopics once the controller committed it, before the broker's metadata cache has
    the topic (a Produce at once may still get UNKNOWN_TOPIC_OR_PARTITION), as clients' retries know."""
    answers = pair.ask(19, CREATE_TOPICS_V, create(list(topics)))
    for side, answer in zip(("kafka", "kcoord"), answers, strict=True):
        assert all(t["error_code"] == 0 for t in answer["topics"]), (side, answer)
    wait_led(pair, *(t["name"] for t in topics))


def wait_led(pair: Pair, *names: str) -> None:
    """Until Kafka's broker leads every partition of `names` (bounded: 30 s): its metadata cache lists
    a leader, then its replica manager answers ListOffsets (before that, NOT_LEADER_OR_FOLLOWER)."""
    deadline = time.monotonic() + 30
    while not _led(pair.kafka, names):
        assert time.monotonic() < deadline, f"Kafka never led {names}"
        time.sleep(0.05)  # poll interval for the broker's metadata to catch up


def _led(kafka: Side, names: tuple[str, ...]) -> bool:
    answer = kafka.call(3, METADATA_V, metadata(*names))
    counts = {t["name"]: len(t["partitions"]) for t in answer["topics"] if t["error_code"] == 0}
    if len(counts) < len(names) or not all(counts.values()):
        return False
    topics = [
        {"name": n, "partitions": [{"partition_index": i, "timestamp": -1} for i in range(c)]}
        for n, c in counts.items()
    ]
    offsets = kafka.call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": topics})
    return all(p["error_code"] == 0 for t in offsets["topics"] for p in t["partitions"])
