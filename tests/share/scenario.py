"""What a share scenario does on either broker: a topic, a share group with short locks, consumers of
either client, and the Admin's view through Kafka's own Java Admin."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.server.wire import connect, create_topic
from tests.share.drivers import AdminSession, ClientProcess, produce, start_consumer

__all__ = ["LOCK_MS", "Broker", "by_offset"]

# share.record.lock.duration.ms of the scenarios' groups: long enough that no member on a loaded 2-core
# machine loses a record it is about to acknowledge (a redelivery would fail the "delivered once"
# checks); the scenario about expiry sets its own short lock.
LOCK_MS = 10_000


class Broker:
    """One broker under test; subclasses (conftest.py) know how to restart theirs."""

    def __init__(self, name: str, bootstrap: str, log_dir: Path) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.log_dir = log_dir
        self._admin: AdminSession | None = None

    def admin(self, *words: str) -> dict[str, Any]:
        """One call of the broker's Java Admin (started at the first call, kept for the session)."""
        if self._admin is None:
            self._admin = AdminSession(self.bootstrap, self.log_dir / f"{self.name}-admin.log")
        return self._admin.call(*words)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.bootstrap.rsplit(":", 1)
        return (host, int(port))

    def missing_share_apis(self) -> list[int]:
        """Kafka 4.3.1 serves share groups from its format on (share.version=1 finalized)."""
        return []

    def restart(self, kill: bool, while_down: Callable[[], None] = lambda: None) -> None:
        """Stop (SIGKILL when `kill`, else SIGTERM), call `while_down`, start again on the same port."""
        raise NotImplementedError

    def topic(self, prefix: str, partitions: int = 1) -> str:
        name = f"share-{prefix}-{uuid.uuid4().hex[:8]}"
        with connect(self.address) as sock:
            result = create_topic(sock, name, partitions)
        assert result["error_code"] == 0, result
        return name

    def group(self, prefix: str, **configs: object) -> str:
        """A new share group id with its group configs set (earliest, LOCK_MS locks, then `configs`)."""
        name = f"share-{prefix}-{uuid.uuid4().hex[:8]}"
        settings = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": LOCK_MS}
        settings.update({k.replace("_", "."): v for k, v in configs.items()})
        self.admin("configure", name, *(f"{k}={v}" for k, v in settings.items()))
        return name

    def produce(self, topic: str, values: list[str], abort: list[str] | None = None) -> None:
        produce(self.bootstrap, topic, values, abort)

    def consumer(
        self, client: str, group: str, topic: str, policy: str, log_dir: Path, name: str
    ) -> ClientProcess:
        return start_consumer(client, self.bootstrap, group, topic, policy, log_dir, name)

    def start_offsets(self, group: str) -> dict[int, Any]:
        """listShareGroupOffsets: partition -> start offset (SPSO)."""
        answer = self.admin("offsets", group)
        return {row["partition"]: row["start_offset"] for row in answer["partitions"]}

    def wait_start_offset(self, group: str, partition: int, wanted: int, timeout: float = 30) -> None:
        """Until the group's SPSO of `partition` is `wanted` (bounded; asked again while it is not)."""
        deadline = time.monotonic() + timeout
        seen: dict[int, Any] = {}
        while time.monotonic() < deadline:
            seen = self.start_offsets(group)
            if seen.get(partition) == wanted:
                return
        raise AssertionError(f"{self.name}: start offset of {group}/{partition} stayed {seen}, not {wanted}")

    def describe(self, group: str) -> dict[str, Any]:
        return self.admin("describe", group)

    def wait_assigned(self, group: str, members: int, partitions: list[str], timeout: float = 30) -> None:
        """Until describeShareGroups shows `members` members, each assigned `partitions`: the target
        assignment follows a join after `share.assignment.interval.ms` (4.3), asked again meanwhile."""
        deadline = time.monotonic() + timeout
        seen: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                seen = self.describe(group)
            except AssertionError as error:  # no member has joined yet (a JVM client starting slowly)
                if "GroupIdNotFoundException" not in str(error):
                    raise
                time.sleep(0.1)
                continue
            assigned = [sorted(m["partitions"]) for m in seen["members"]]
            if seen["state"] == "Stable" and assigned == [sorted(partitions)] * members:
                return
        raise AssertionError(f"{self.name}: {group} never had {members} members on {partitions}: {seen}")

    def alter(self, group: str, topic: str, offsets: dict[int, int]) -> None:
        self.admin("alter", group, topic, *(f"{p}={o}" for p, o in offsets.items()))


def by_offset(records: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Deliveries of partition 0 grouped by offset, in the order seen."""
    grouped: dict[int, list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: r["at"]):
        grouped.setdefault(record["offset"], []).append(record)
    return grouped
