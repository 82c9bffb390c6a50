"""The fault table: armed faults (error, delay, disconnect), what they match, and what has fired.

A fault applies to the next `count` requests of its API that match its filters: `group` matches a
request about that group id; `topic`/`partition` match a request naming them (for per-partition APIs
the matching partitions alone get an error, the rest of the request is served). Faults are used first
armed, first used. `latency_ms` is the older per-API latency (`/v1/test/latency`): every request of
that API is answered that much later, with no count.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from kcoord.broker.context import Request
from kcoord.broker.faults import request_groups, request_partitions, request_topics
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.controls.names import api_name

__all__ = ["Fault", "FaultTable", "Kind", "Match"]

Kind = Literal["error", "delay", "disconnect"]
NameOf = Callable[[Any], "str | None"]


@dataclass(slots=True)
class Fault:
    id: int
    kind: Kind
    api_key: int
    count: int
    error: ErrorCode | None = None
    ms: int | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    remaining: int = 0
    fired: int = 0

    def __post_init__(self) -> None:
        self.remaining = self.count

    def view(self) -> dict[str, Any]:
        """The fault view of docs (fixtures.md): absent fields are null."""
        return {
            "id": self.id,
            "kind": self.kind,
            "api": api_name(self.api_key),
            "api_key": self.api_key,
            "error": None if self.error is None else self.error.name,
            "error_code": None if self.error is None else int(self.error),
            "ms": self.ms,
            "count": self.count,
            "remaining": self.remaining,
            "fired": self.fired,
            "topic": self.topic,
            "partition": self.partition,
            "group": self.group,
        }

    def legacy_view(self) -> dict[str, Any]:
        """`/v1/test/errors`' shape (kept for its users)."""
        return {**self.view(), "group_id": self.group}

    def _partition_filter(self) -> bool:
        return self.topic is not None or self.partition is not None

    def _names(self, topic: str, partition: int) -> bool:
        return (self.topic is None or topic == self.topic) and (
            self.partition is None or partition == self.partition
        )


@dataclass(slots=True)
class Match:
    """A fault that applies to a request; `failed` picks the partitions an error is limited to (None:
    the whole request)."""

    fault: Fault
    failed: Callable[[str, int], bool] | None = None


@dataclass(slots=True)
class FaultTable:
    armed: list[Fault] = field(default_factory=list)
    fired: list[Fault] = field(default_factory=list)  # in order of first firing
    latency_ms: dict[int, int] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, **kwargs: Any) -> Fault:
        fault = Fault(next(self._ids), **kwargs)
        self.armed.append(fault)
        return fault

    def clear(self) -> None:
        self.armed.clear()
        self.latency_ms.clear()

    def reset(self) -> None:
        self.clear()
        self.fired.clear()
        self._ids = itertools.count(1)

    def take(self, api_key: int, version: int, req: Request, name_of: NameOf) -> Match | None:
        """The first armed fault this request matches, used once (None: no fault applies)."""
        for fault in self.armed:
            if fault.api_key != api_key:
                continue
            match = _matches(fault, api_key, version, req, name_of)
            if match is None:
                continue
            fault.remaining -= 1
            fault.fired += 1
            if fault.fired == 1:
                self.fired.append(fault)
            if fault.remaining <= 0:
                self.armed.remove(fault)
            return match
        return None


def _matches(fault: Fault, api_key: int, version: int, req: Request, name_of: NameOf) -> Match | None:
    if fault.group is not None and fault.group not in request_groups(api_key, req):
        return None
    if not fault._partition_filter():
        return Match(fault)
    partitions = request_partitions(api_key, version, req, name_of)
    if partitions is None:  # an API without partitions: it matches when it names the topic
        if fault.partition is None and fault.topic in request_topics(api_key, req):
            return Match(fault)
        return None
    named = [tp for tp in partitions if fault._names(*tp)]
    if not named:
        return None
    if len(named) == len(partitions) or fault.kind != "error":
        return Match(fault)
    return Match(fault, fault._names)
