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

__all__ = ["Ledger", "Reader", "RecordCheck", "committed_offset"]


class _Tail:
    """A worker's event file read on from where the last read stopped: the checks after each fault
    parsed every file from its start, which grew to most of a fault's time as the run went on."""

    def __init__(self) -> None:
        self.position = 0
        self.events: list[dict[str, Any]] = []

    def read_new(self, path: Path) -> list[dict[str, Any]]:
        """The complete JSON lines written since the last read (a torn last line waits for the next)."""
        if not path.exists():
            return []
        with path.open("rb") as file:
            file.seek(self.position)
            chunk = file.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.position += len(complete)
        lines = complete.decode(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{") and line.endswith("}")]

    def read(self, path: Path) -> list[dict[str, Any]]:
        self.events.extend(self.read_new(path))
        return self.events


_TAILS: dict[Path, _Tail] = {}


def events(path: Path) -> Iterable[dict[str, Any]]:
    """The complete JSON lines a worker has written so far (a torn last line is skipped)."""
    return _TAILS.setdefault(path.resolve(), _Tail()).read(path)


@dataclass
class _Group:
    """What one commit worker's events add up to."""

    assigned: list[int] | None = None
    last: int | None = None
    acked: int = 0


@dataclass
class Ledger:
    """Every acknowledgement the workers have printed. Each answer first folds in only the events
    written since the last one: after 600 faults (2.4 million records) re-reading and re-checking
    everything took a third of every fault's time, so the checks are kept up to date instead."""

    commit_files: dict[str, tuple[Path, str]] = field(default_factory=dict)  # group -> (events, topic)
    produce_files: list[Path] = field(default_factory=list)
    txn_files: list[Path] = field(default_factory=list)
    client_errors: int = 0
    _tails: dict[Path, _Tail] = field(default_factory=dict)
    _groups: dict[str, _Group] = field(default_factory=dict)
    _acked: dict[tuple[int, int], str] = field(default_factory=dict)
    _new_acked: list[tuple[int, int]] = field(default_factory=list)
    _committed: set[str] = field(default_factory=set)
    _aborted: set[str] = field(default_factory=set)
    _unknown: set[str] = field(default_factory=set)
    _errors: int = 0

    def _new(self, path: Path) -> list[dict[str, Any]]:
        new = self._tails.setdefault(path, _Tail()).read_new(path)
        self._errors += sum(1 for e in new if "error" in e)
        return new

    def _refresh(self) -> None:
        for group, (path, _) in self.commit_files.items():
            state = self._groups.setdefault(group, _Group())
            for e in self._new(path):
                if "assigned" in e and state.assigned is None:
                    state.assigned = [int(p) for p in e["assigned"]]
                if "acked" in e:
                    state.acked += 1
                    state.last = e["acked"] if state.last is None else max(state.last, e["acked"])
        for path in self.produce_files:
            for e in self._new(path):
                # librdkafka may acknowledge with no offset (a "possibly persisted" retry it cannot
                # place): counted apart, its value still checked for duplicates by the reader.
                if "acked" in e and e.get("o") is not None:
                    key = (int(e["p"]), int(e["o"]))
                    self._acked[key] = str(e["acked"])  # the value it produced
                    self._new_acked.append(key)
        for path in self.txn_files:
            for e in self._new(path):
                self._committed.update(e.get("committed", ()))
                self._aborted.update(e.get("aborted", ()))
                self._unknown.update(e.get("unknown", ()))

    def last_commits(self) -> dict[tuple[str, str, int], int]:
        """(group, topic, partition) -> the last acknowledged committed offset."""
        self._refresh()
        last: dict[tuple[str, str, int], int] = {}
        for group, (path, topic) in self.commit_files.items():
            state = self._groups[group]
            if state.assigned and state.last is not None:  # it commits on its first assigned partition
                last[(path.stem, topic, state.assigned[0])] = state.last
        return last

    def acked_commits(self) -> int:
        """How many commits the workers were acknowledged."""
        self._refresh()
        return sum(state.acked for state in self._groups.values())

    def produced(self) -> dict[tuple[int, int], str]:
        """Every acknowledged (partition, offset) -> value; not a copy: read it, do not keep it."""
        self._refresh()
        return self._acked

    def take_new_acked(self) -> list[tuple[int, int]]:
        """The (partition, offset) acknowledged since the last call."""
        self._refresh()
        new, self._new_acked = self._new_acked, []
        return new

    def transactions(self) -> tuple[set[str], set[str], set[str]]:
        """(committed, aborted, unknown) values."""
        self._refresh()
        return self._committed, self._aborted, self._unknown

    def count_errors(self) -> int:
        self._refresh()
        return self._errors


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
        self.changes: dict[tuple[int, int], str | None] = {}

    def read_to_end(self, timeout: float = 120) -> dict[tuple[int, int], str]:
        """Everything up to the end offsets as they are now (bounded by `timeout`)."""
        deadline = time.monotonic() + timeout
        ends = self._end_offsets(deadline)
        while any(self.consumer.position(tp) < ends[tp] for tp in self.parts):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.topic}: the reader never reached {ends}")
            for tp, records in self.consumer.poll(timeout_ms=2000).items():
                for record in records:
                    key, value = (tp.partition, record.offset), record.value.decode()
                    old = self.read.get(key)
                    if old != value:  # new, or read again with another value after a reset
                        self.changes.setdefault(key, old)
                        self.read[key] = value
        return self.read

    def take_changes(self) -> dict[tuple[int, int], str | None]:
        """Each (partition, offset) read or changed since the last call -> its value before (None)."""
        changes, self.changes = self.changes, {}
        return changes

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


class RecordCheck:
    """`check_records` kept up to date from what changed since the last check (the newly acknowledged
    records and the reads new or changed), so a check costs what the last fault added, not the run's
    whole history; the same answers as `check_records` over everything."""

    def __init__(self) -> None:
        self.lost: set[tuple[int, int]] = set()
        self.counts: Counter[str] = Counter()
        self.duplicated = 0

    def update(
        self,
        acked: dict[tuple[int, int], str],
        new_acked: Iterable[tuple[int, int]],
        read: dict[tuple[int, int], str],
        changes: dict[tuple[int, int], str | None],
    ) -> tuple[int, int]:
        for key, old in changes.items():
            if old is not None:
                self.counts[old] -= 1
                self.duplicated -= self.counts[old] >= 1  # that copy was a duplicate
            self.counts[read[key]] += 1
            self.duplicated += self.counts[read[key]] > 1
        for key in {*new_acked, *(k for k in changes if k in acked)}:
            if read.get(key) == acked[key]:
                self.lost.discard(key)
            else:
                self.lost.add(key)
        return len(self.lost), self.duplicated


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
