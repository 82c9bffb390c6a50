"""`--kafka-bootstrap HOST:PORT`: the same tests against a real Kafka cluster.

What a Kafka client can answer is answered over the wire with kcoord's own blocking admin client
(kcoord/client_cli/kafka_client.py), so the plugin needs no client library: CreateTopics, a Fetch of
every partition for `records()`, OffsetFetch for `committed()`, ConsumerGroupDescribe/DescribeGroups
for `group()`. What only kcoord's test controls can do (reset, faults, the clock, restart, kill, the
request log) skips the test, naming the call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NoReturn

import pytest

from kcoord.client_cli.describe import describe_group
from kcoord.client_cli.groups import committed_offsets
from kcoord.client_cli.kafka_client import Cluster, ToolError, parse_bootstrap
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import BATCH_HEADER, iter_records, read_header
from kcoord.testing.aio import AsyncCalls
from kcoord.testing.views import Group, Member, Record

__all__ = ["RemoteKafka"]

CREATE_TOPICS, FETCH = 19, 1
TIMEOUT_S = 30.0
FETCH_BYTES = 8 << 20
STABLE_POLL_S = 0.05


class RemoteKafka:
    """A Kafka cluster the plugin did not start: inspection through the Kafka protocol only."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap_servers = bootstrap
        self._servers = parse_bootstrap(bootstrap)
        self.aio = AsyncCalls(self)

    def _cluster(self) -> Cluster:
        return Cluster(self._servers, TIMEOUT_S)

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None, exist_ok: bool = False
    ) -> None:
        """CreateTopics with the cluster's default replication factor; an existing topic is an error,
        as with kcoord's control (409), unless `exist_ok` (the marker's topics on a cluster that
        outlives the run)."""
        topic = {
            "name": name, "num_partitions": partitions, "replication_factor": -1, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (config or {}).items()],
        }  # fmt: skip
        with self._cluster() as cluster:
            controller = cluster.bootstrap  # a broker forwards CreateTopics to the controller (KIP-590)
            response = controller.request(
                CREATE_TOPICS, {"topics": [topic], "timeout_ms": int(TIMEOUT_S * 1000)}
            )
            result = response["topics"][0]
            exists = exist_ok and result["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
            if result["error_code"] != ErrorCode.NONE and not exists:
                message = result.get("error_message") or ErrorCode(result["error_code"]).name
                raise RuntimeError(f"cannot create topic {name!r}: {message}")
            _wait_for_leaders(cluster, name)

    def records(self, topic: str) -> list[Record]:
        """Every record of `topic` (read_uncommitted: aborted records included, not flagged), control
        batches left out, in (partition, offset) order."""
        with self._cluster() as cluster:
            metadata = cluster.metadata([topic])
            if topic in metadata.topic_errors:
                raise RuntimeError(
                    f"cannot read topic {topic!r}: {ErrorCode(metadata.topic_errors[topic]).name}"
                )
            rows: list[Record] = []
            for partition, leader in sorted(metadata.topics.get(topic, {}).items()):
                rows += _read_partition(cluster.connection(metadata.brokers[leader]), topic, partition)
            return rows

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        with self._cluster() as cluster:
            return committed_offsets(cluster, group)

    def group(self, group_id: str) -> Group | None:
        with self._cluster() as cluster:
            described = describe_group(cluster, group_id)
        if described.state == "Dead":
            return None
        members = [
            Member(m.member_id, m.client_id, _by_topic(m.assignment), m.group_instance_id, m.host)
            for m in described.members
        ]
        protocol = "consumer" if described.group_type == "consumer" else "classic"
        generation = described.group_epoch or 0
        return Group(group_id, protocol, described.state, generation, members, described.protocol_type,
                     described.protocol)  # fmt: skip

    def wait_stable(self, group_id: str, timeout: float = 10) -> Group:
        deadline = time.monotonic() + timeout
        while True:
            group = self.group(group_id)
            if group is not None and group.state == "Stable":
                return group
            if time.monotonic() >= deadline:
                seen = "no such group" if group is None else f"state {group.state}"
                raise TimeoutError(f"group {group_id!r} not Stable after {timeout:g} s ({seen})")
            time.sleep(STABLE_POLL_S)

    def begin_test(self, after_reset: bool) -> None:
        """Nothing to mark: a real cluster's log and requests are not the plugin's."""

    def log_lines(self, since: int | None = None) -> list[str]:
        return []

    def __getattr__(self, name: str) -> Any:
        if name in NEEDS_CONTROLS:
            return lambda *args, **kwargs: _skip(name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<RemoteKafka {self.bootstrap_servers}>"


# The server object's calls only kcoord's test controls can answer.
NEEDS_CONTROLS = frozenset(
    {"reset", "configure", "advance", "fail", "delay", "disconnect", "fired", "faults", "clear_faults",
     "requests", "restart", "kill", "stop", "start"}
)  # fmt: skip


def _skip(call: str) -> NoReturn:
    pytest.skip(f"{call}() needs kcoord's test controls; --kafka-bootstrap runs against a real Kafka")


def _by_topic(assignment: list[tuple[str, int]]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in assignment:
        topics.setdefault(topic, []).append(partition)
    return {t: sorted(ps) for t, ps in topics.items()}


def _wait_for_leaders(cluster: Cluster, topic: str) -> None:
    """A created topic is usable once every partition has a leader (metadata propagates)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        partitions = cluster.metadata([topic]).topics.get(topic, {})
        if partitions and all(leader >= 0 for leader in partitions.values()):
            return
        time.sleep(STABLE_POLL_S)
    raise TimeoutError(f"topic {topic!r} has partitions without a leader after {TIMEOUT_S:g} s")


def _read_partition(conn: Any, topic: str, partition: int) -> list[Record]:
    """Fetch from offset 0 to the high watermark (v4..12: topic names, magic-2 batches)."""
    version = conn.version(FETCH, newest=12)
    rows: list[Record] = []
    offset, high = 0, None
    while high is None or offset < high:
        wanted = {"partition": partition, "fetch_offset": offset, "log_start_offset": -1,
                  "partition_max_bytes": FETCH_BYTES}  # fmt: skip
        body = {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": FETCH_BYTES,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [{"topic": topic, "partitions": [wanted]}],
        }  # fmt: skip
        data = conn.request(FETCH, body, version)["responses"][0]["partitions"][0]
        if (
            data["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
            and offset == 0
            and data["log_start_offset"] > 0
        ):
            offset = data["log_start_offset"]
            continue
        if data["error_code"] != ErrorCode.NONE:
            raise ToolError(f"cannot fetch {topic}-{partition}: {ErrorCode(data['error_code']).name}")
        high = data["high_watermark"]
        batch_rows, next_offset = _decode(topic, partition, data["records"] or b"", offset)
        rows += batch_rows
        if next_offset == offset:  # nothing whole came back below the high watermark
            break
        offset = next_offset
    return rows


def _decode(topic: str, partition: int, buf: bytes, offset: int) -> tuple[list[Record], int]:
    rows: list[Record] = []
    pos = 0
    while len(buf) - pos >= BATCH_HEADER.size:
        header = read_header(buf, pos)
        if len(buf) - pos < header.size:
            break  # a partial batch at the end of the fetch
        if not header.is_control:
            for r in iter_records(buf[pos : pos + header.size]):
                if r.offset >= offset:
                    rows.append(Record(topic, partition, r.offset, r.key, r.value, r.headers, r.timestamp))
        offset = max(offset, header.last_offset + 1)
        pos += header.size
    return rows, offset
