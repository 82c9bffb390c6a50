"""What tests see of a kcoord server: records, groups, members, faults and request-log entries.

The test controls answer JSON (in the server process, over HTTP from a container); these objects are
that JSON with attribute access, the same whether the server runs in the test process or in a
container. Bytes arrive as bytes in-process and as base64 strings over HTTP (`from_json(..., b64=True)`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fault", "Group", "Member", "Record", "RequestEntry", "committed_map"]

Json = Mapping[str, Any]


def _bytes(value: Any, b64: bool) -> bytes | None:
    if value is None:
        return None
    if b64:
        return base64.b64decode(value)
    return bytes(value)


@dataclass(frozen=True, slots=True)
class Record:
    """One data record of a topic (control records are not shown)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int
    aborted: bool = False

    @classmethod
    def from_json(cls, topic: str, data: Json, *, b64: bool = False) -> Record:
        headers = [(str(k), _bytes(v, b64)) for k, v in data.get("headers") or []]
        return cls(
            topic, int(data["partition"]), int(data["offset"]), _bytes(data.get("key"), b64),
            _bytes(data.get("value"), b64), headers, int(data["timestamp"]), bool(data.get("aborted", False)),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    assignment: dict[str, list[int]]
    group_instance_id: str | None = None
    client_host: str = ""

    @classmethod
    def from_json(cls, data: Json) -> Member:
        assignment = {str(t): sorted(int(p) for p in ps) for t, ps in (data.get("assignment") or {}).items()}
        return cls(
            str(data["member_id"]), str(data.get("client_id") or ""), assignment,
            data.get("group_instance_id"), str(data.get("client_host") or ""),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Group:
    """A group as Kafka's DescribeGroups / ConsumerGroupDescribe names it."""

    group_id: str
    protocol: str  # "classic" or "consumer" (KIP-848)
    state: str  # "Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Assigning", ...
    generation: int  # the generation id (classic) or the group epoch (consumer)
    members: list[Member]
    protocol_type: str = ""
    protocol_name: str = ""
    leader: str = ""

    @classmethod
    def from_json(cls, data: Json) -> Group:
        return cls(
            str(data["group_id"]), str(data.get("protocol") or "classic"), str(data["state"]),
            int(data.get("generation") or 0), [Member.from_json(m) for m in data.get("members") or []],
            str(data.get("protocol_type") or ""), str(data.get("protocol_name") or ""),
            str(data.get("leader") or ""),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Fault:
    """An injected fault: the next `count` matching requests answer `error`, wait `ms`, or lose their
    connection (`kind`)."""

    id: int
    kind: str  # "error", "delay" or "disconnect"
    api: str
    api_key: int
    count: int
    remaining: int
    fired: int
    error: str | None = None
    error_code: int | None = None
    ms: int | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None

    @classmethod
    def from_json(cls, data: Json) -> Fault:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True)
class RequestEntry:
    """One request the server received, as the test's request log shows it, whatever became of it.

    `state` is "answered" (then `duration_ms` is set), "in flight" (its handler has it, no answer yet),
    "parked" (a JoinGroup, SyncGroup or Fetch held for an event: a rebalance, the leader's assignment,
    data), "delayed" (a delay fault holds it back) or "dropped" (a disconnect fault: never answered).
    Not answered, `waited_ms` is how long it had waited when the log was read.
    """

    seq: int
    at_ms: int
    api: str
    api_key: int
    api_version: int
    correlation_id: int | None
    client_id: str | None
    peer: str | None
    duration_ms: float | None = None
    error_codes: list[int] = field(default_factory=list)
    fault: int | None = None
    state: str = ""  # "" from a server older than the field: answered when duration_ms is set
    waited_ms: float | None = None

    @classmethod
    def from_json(cls, data: Json) -> RequestEntry:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    def __str__(self) -> str:
        # A failure report prints every entry: this must render any state, or pytest ends in INTERNALERROR
        errors = f" errors={self.error_codes}" if self.error_codes else ""
        fault = f" fault={self.fault}" if self.fault is not None else ""
        return (
            f"#{self.seq} {self.api}v{self.api_version} corr={self.correlation_id} "
            f"client={self.client_id!r} peer={self.peer} {self._outcome()}{errors}{fault}"
        )

    def _outcome(self) -> str:
        if self.duration_ms is not None:
            return f"{_ms(self.duration_ms)}ms"
        if self.state == "dropped":
            return "dropped (connection closed, never answered)"
        waited = "" if self.waited_ms is None else f" after {_ms(self.waited_ms)}ms"
        return f"{self.state or 'unanswered'}, no answer{waited}"


def _ms(value: object) -> str:
    """Milliseconds with one decimal; whatever else arrived (over HTTP, from another version) as is."""
    return f"{value:.1f}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def committed_map(rows: Sequence[Json]) -> dict[tuple[str, int], int]:
    """The controls' committed-offset rows as `{(topic, partition): offset}`."""
    return {(str(r["topic"]), int(r["partition"])): int(r["offset"]) for r in rows}
