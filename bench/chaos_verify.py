"""What bench.chaos checks after every fault: every acknowledged commit and record is still there.

* **Commits.** Each commit worker commits 1, 2, 3, ... on one partition for its own group and prints
  each acknowledged value. A group's committed offset (OffsetFetch at the group's coordinator, asked
  as a client does: FindCoordinator at any live node first) must be at least the last acknowledged
  value: a lower one is an acknowledged commit lost.
* **Records.** The idempotent producers print every acknowledged (partition, offset, value). A
  read_uncommitted consumer kept for the whole run reads each partition up to the highest acknowledged
  offset; every acknowledged record must be at its offset with its value, and no value may appear at
  two offsets (a duplicate the idempotent producer should have prevented).
* **Transactions.** The transactional workers print each committed and aborted transaction's values.
  A read_committed consumer must read every committed value exactly once and no aborted one (an
  `unknown` outcome may go either way).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaTimeoutError

from tests.cluster.nodes import Node, fetch_offset, find_coordinator

__all__ = ["Ledger", "Reader", "committed_offset"]


class _Tail:
    """A worker's event file read on from where the last read stopped: the checks after each fault
    parsed every file from its start, which grew to most of a fault's time as the run went on."""

    def __init__(self) -> None:
        self.position = 0
        self.events: list[dict[str, Any]] = []

    def read(self, path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return self.events
        with path.open("rb") as file:
            file.seek(self.position)
            chunk = file.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a torn last line waits for the next read
        self.position += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            if line.startswith("{") and line.endswith("}"):
                self.events.append(json.loads(line))
        return self.events


_TAILS: dict[Path, _Tail] = {}


def events(path: Path) -> Iterable[dict[str, Any]]:
    """The complete JSON lines a worker has written so far (a torn last line is skipped)."""
    return _TAILS.setdefault(path.resolve(), _Tail()).read(path)


@dataclass
class Ledger:
    """Every acknowledgement the workers have printed, re-read from their files after each fault."""

    commit_files: dict[str, tuple[Path, str]] = field(default_factory=dict)  # group -> (events, topic)
    produce_files: list[Path] = field(default_factory=list)
    txn_files: list[Path] = field(default_factory=list)
    client_errors: int = 0

    def last_commits(self) -> dict[tuple[str, str, int], int]:
        """(group, topic, partition) -> the last acknowledged committed offset."""
        last: dict[tuple[str, str, int], int] = {}
        for path, topic in self.commit_files.values():
            group, seen = path.stem, list(events(path))
            assigned = next((e["assigned"] for e in seen if "assigned" in e), None)
            acked = [e["acked"] for e in seen if "acked" in e]
            if assigned and acked:  # the worker commits on the first partition it was assigned
                last[(group, topic, int(assigned[0]))] = max(acked)
        return last

    def acked_commits(self) -> int:
        """How many commits the workers were acknowledged."""
        return sum(1 for path, _ in self.commit_files.values() for e in events(path) if "acked" in e)

    def produced(self) -> dict[tuple[int, int], str]:
        acked: dict[tuple[int, int], str] = {}
        for path in self.produce_files:
            for e in events(path):
                # librdkafka may acknowledge with no offset (a "possibly persisted" retry it cannot
                # place): counted apart, its value still checked for duplicates by the reader.
                if "acked" in e and e.get("o") is not None:
                    acked[(int(e["p"]), int(e["o"]))] = str(e["acked"])  # the value it produced
        return acked

    def transactions(self) -> tuple[set[str], set[str], set[str]]:
        """(committed, aborted, unknown) values."""
        committed: set[str] = set()
        aborted: set[str] = set()
        unknown: set[str] = set()
        for path in self.txn_files:
            for e in events(path):
                committed.update(e.get("committed", ()))
                aborted.update(e.get("aborted", ()))
                unknown.update(e.get("unknown", ()))
        return committed, aborted, unknown

    def count_errors(self) -> int:
        files = [p for p, _ in self.commit_files.values()] + self.produce_files + self.txn_files
        return sum(1 for path in files for e in events(path) if "error" in e)


def committed_offset(live: list[Node], group: str, topic: str, partition: int, timeout: float = 30) -> int:
    """The group's committed offset as its coordinator answers it, retried (bounded) while the
    coordinator moves."""
    by_id = {n.node_id: n for n in live}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for asker in live:
            try:
                found = find_coordinator(asker.address, group)  # FindCoordinator v3: one answer
                owner = by_id.get(int(found["node_id"]))
                if owner is None or found["error_code"]:
                    continue
                error, offset = fetch_offset(owner.address, group, topic, partition)
            except OSError:
                continue
            if error == 0:
                return offset
        time.sleep(0.2)
    raise AssertionError(f"no coordinator answered OffsetFetch for {group} within {timeout}s")


class Reader:
    """One consumer per isolation level, assigned every partition of its topic, kept for the run."""

    def __init__(self, bootstrap: list[str], topic: str, partitions: int, read_committed: bool) -> None:
        self.topic = topic
        self.parts = [TopicPartition(topic, p) for p in range(partitions)]
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
            request_timeout_ms=5000, retry_backoff_ms=100, metadata_max_age_ms=1000,
            isolation_level="read_committed" if read_committed else "read_uncommitted",
        )  # fmt: skip
        self.consumer.assign(self.parts)
        self.consumer.seek_to_beginning(*self.parts)
        self.read: dict[tuple[int, int], str] = {}

    def read_to_end(self, timeout: float = 120) -> dict[tuple[int, int], str]:
        """Everything up to the end offsets as they are now (bounded by `timeout`)."""
        deadline = time.monotonic() + timeout
        ends = self._end_offsets(deadline)
        while any(self.consumer.position(tp) < ends[tp] for tp in self.parts):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.topic}: the reader never reached {ends}")
            for tp, records in self.consumer.poll(timeout_ms=2000).items():
                for record in records:
                    self.read[(tp.partition, record.offset)] = record.value.decode()
        return self.read

    def _end_offsets(self, deadline: float) -> dict[TopicPartition, int]:
        """kafka-python 3.0.12's end_offsets raises KeyError when a partition's ListOffsets failed
        retriably (a leader moving), or times out while the leaders move: asked again, bounded."""
        while True:
            try:
                return dict(self.consumer.end_offsets(self.parts))
            except (KeyError, KafkaTimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def close(self) -> None:
        self.consumer.close()


def check_records(acked: dict[tuple[int, int], str], read: dict[tuple[int, int], str]) -> tuple[int, int]:
    """(lost, duplicated): acknowledged records not at their offset, values read at two offsets."""
    lost = sum(1 for key, value in acked.items() if read.get(key) != value)
    duplicated = sum(n - 1 for n in Counter(read.values()).values() if n > 1)
    return lost, duplicated


def duplicates(read: dict[tuple[int, int], str]) -> dict[str, list[tuple[int, int]]]:
    """Each value read at more than one (partition, offset), with where."""
    where: dict[str, list[tuple[int, int]]] = {}
    for key, value in read.items():
        where.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in where.items() if len(keys) > 1}


def check_transactions(
    committed: set[str], aborted: set[str], unknown: set[str], read: dict[tuple[int, int], str]
) -> tuple[int, int, int]:
    """(committed not read, aborted read, values read twice) for read_committed."""
    seen = Counter(read.values())
    missing = sum(1 for value in committed if seen[value] == 0)
    leaked = sum(1 for value in aborted - unknown if seen[value] > 0)
    twice = sum(n - 1 for n in seen.values() if n > 1)
    return missing, leaked, twice


_BATCH_OF = (
    "SELECT partition, base_offset, last_offset, producer_id, producer_epoch, base_sequence "
    "FROM kcoord_partition_batch WHERE topic = '{topic}' AND partition = {partition} "
    "AND base_offset <= {offset} AND last_offset >= {offset}"
)


def duplicated_batches(
    sql: Callable[[str], str], topic: str, where: dict[str, list[tuple[int, int]]]
) -> list[dict[str, Any]]:
    """The stored batch of every copy of a duplicated value, with its producer id, epoch and base
    sequence (kcoord_partition_batch): the same id, epoch and sequence twice is a retry the partition's
    producer state should have answered as a duplicate; a new epoch with new sequences is the client
    re-sending after an epoch bump (librdkafka's drain and bump), as it would to Kafka."""
    found: list[dict[str, Any]] = []
    columns = ("partition", "base_offset", "last_offset", "producer_id", "producer_epoch", "base_sequence")
    for value, copies in where.items():
        for partition, offset in copies:
            row = sql(_BATCH_OF.format(topic=topic, partition=partition, offset=offset)).strip()
            fields = dict(zip(columns, map(int, row.split("|")), strict=True)) if row else {}
            found.append({"value": value, "offset": offset, **fields})
    return found
