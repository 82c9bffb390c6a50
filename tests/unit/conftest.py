"""Fixtures for the group-logic unit tests: synchronous, fake clock and timers, in-memory log."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from kcoord.broker.apis import join_group, offset_commit, offset_fetch, sync_group
from kcoord.broker.apis.heartbeat import heartbeat_response
from kcoord.broker.apis.leave_group import leave_response
from kcoord.broker.context import RequestMeta
from kcoord.coordinator.groups import GroupConfig, GroupManager, GroupState
from kcoord.coordinator.runtime import ShardPhases
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from tests.unit.fakes import MemoryRecordLog, Reply, subscription

DEFAULT_PROTOCOLS = (("range", subscription("t")),)


_TYPED_AT_THE_DOOR: dict[str, Any] = {
    "join_group": join_group.handle,
    "sync_group": sync_group.handle,
    "offset_commit": offset_commit.handle,
    "offset_fetch": offset_fetch.handle,
}


class _EveryPartitionKnown:
    """The topic registry as the group logic's unit tests need it: every partition exists."""

    def has_partition(self, topic: str, partition: int) -> bool:
        return True


class Harness:
    """Drives a GroupManager like a client would, one request at a time."""

    def __init__(self, *, loaded: bool = True, phases: ShardPhases | None = None, **config: Any) -> None:
        self.clock = FakeClock()
        self.timers = FakeTimers(self.clock)
        self.log = MemoryRecordLog()
        self.config = GroupConfig(**config)
        ids = itertools.count(1)
        self.mgr = GroupManager(
            self.config, self.clock, self.timers, self.log, new_uuid=lambda: f"u{next(ids)}", phases=phases
        )
        if loaded:
            self.mgr.on_loaded()

    # -- plumbing ---------------------------------------------------------------------------------
    def call(self, api: str, req: dict[str, Any], version: int, client_id: str = "c") -> Reply:
        reply = Reply()
        meta = RequestMeta(version, client_id, "/127.0.0.1")
        door = _TYPED_AT_THE_DOOR.get(api)
        if door is not None:  # typed by its broker/apis module, as a request off the wire is
            ctx = SimpleNamespace(
                manager=self.mgr, topics=_EveryPartitionKnown(), stats=None, authorizer=None
            )
            door(ctx, req, meta, reply)
        else:
            getattr(self.mgr, api)(req, meta, reply)
        return reply

    def advance(self, ms: int) -> None:
        self.timers.advance(ms)

    def settle(self, *replies: Reply, step_ms: int = 100, limit_ms: int = 60_000) -> int:
        """Advance the clock in small steps until every reply is answered; returns the time taken."""
        waited = 0
        while not all(r.done for r in replies):
            assert waited < limit_ms, "replies still parked"
            self.advance(step_ms)
            waited += step_ms
        return waited

    def state(self, group_id: str = "g") -> GroupState | None:
        group = self.mgr.group(group_id)
        return None if group is None else group.state

    def generation(self, group_id: str = "g") -> int:
        group = self.mgr.group(group_id)
        assert group is not None
        return group.generation_id

    # -- APIs -------------------------------------------------------------------------------------
    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        version: int = 5,
        client_id: str = "c",
        session: int = 10_000,
        rebalance: int = 30_000,
        iid: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = DEFAULT_PROTOCOLS,
        protocol_type: str = "consumer",
    ) -> Reply:
        req: dict[str, Any] = {
            "group_id": group,
            "session_timeout_ms": session,
            "rebalance_timeout_ms": rebalance,
            "member_id": member_id,
            "group_instance_id": iid,
            "protocol_type": protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols],
            "reason": None,
        }
        return self.call("join_group", req, version, client_id)

    def join_new(self, *, version: int = 5, **kw: Any) -> tuple[str, Reply]:
        """A dynamic member's two-step join (v4+): MEMBER_ID_REQUIRED, then the join with the id."""
        first = self.join(version=version, **kw)
        assert first.error == 79, first.value
        member_id = first["member_id"]
        return member_id, self.join(member_id, version=version, **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        version: int = 3,
        iid: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
    ) -> Reply:
        req: dict[str, Any] = {
            "group_id": group,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": iid,
            "protocol_type": protocol_type if version >= 5 else None,
            "protocol_name": protocol_name if version >= 5 else None,
            "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        }
        return self.call("sync_group", req, version)

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = "g", version: int = 3, iid: str | None = None
    ) -> Reply:
        """Heartbeat as the server edge calls it (typed fields); the reply is its response."""
        reply = Reply()
        reply(heartbeat_response(self.mgr.heartbeat(group, generation, member_id, iid)))
        return reply

    def leave(self, *members: str | tuple[str, str | None], group: str = "g", version: int = 3) -> Reply:
        """LeaveGroup as the server edge calls it (v0-2: one member); the reply is the version's response."""
        if version < 3:
            (only,) = members
            assert isinstance(only, str)
            entries: list[tuple[str, str | None]] = [(only, None)]
        else:
            entries = [m if isinstance(m, tuple) else (m, None) for m in members]
        reply = Reply()
        error, results = self.mgr.leave_group(group, entries)
        reply(leave_response(version, error, results))
        return reply

    def delete_groups(self, *group_ids: str) -> Reply:
        """DeleteGroups as the server edge calls it (distinct ids); the reply is its response."""
        reply = Reply()
        self.mgr.delete_groups(
            list(group_ids),
            lambda results: reply({"results": [{"group_id": g, "error_code": int(e)} for g, e in results]}),
        )
        return reply

    def offset_delete(self, topics: dict[str, list[int]], *, group: str = "g") -> Reply:
        """OffsetDelete as the server edge calls it (known partitions only); the reply is its response."""
        reply = Reply()

        def answer(error: Any, results: list[tuple[str, list[tuple[int, Any]]]]) -> None:
            out = [
                {"name": t, "partitions": [{"partition_index": p, "error_code": int(e)} for p, e in ps]}
                for t, ps in results
            ]
            reply({"error_code": int(error), "topics": out})

        self.mgr.offset_delete(group, list(topics.items()), answer)
        return reply

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        group: str = "g",
        version: int = 7,
        iid: str | None = None,
        metadata: str | None = "m",
        retention_ms: int = -1,
    ) -> Reply:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, []).append(
                {
                    "partition_index": p,
                    "committed_offset": off,
                    "committed_leader_epoch": 3,
                    "commit_timestamp": -1,
                    "committed_metadata": metadata,
                }
            )
        req = {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": iid,
            "retention_time_ms": retention_ms,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        return self.call("offset_commit", req, version)

    def fetch(
        self,
        topics: dict[str, list[int]] | None,
        *,
        group: str = "g",
        version: int = 7,
        require_stable: bool = False,
    ) -> Reply:
        tlist = None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
        if version >= 8:
            req: dict[str, Any] = {
                "groups": [{"group_id": group, "topics": tlist}],
                "require_stable": require_stable,
            }
        else:
            req = {"group_id": group, "topics": tlist, "require_stable": require_stable}
        return self.call("offset_fetch", req, version)

    # -- scenarios --------------------------------------------------------------------------------
    def stable_group(self, n: int = 2, *, group: str = "g", **kw: Any) -> list[str]:
        """A Stable group of n dynamic members (initial delay); returns member ids, leader first."""
        ids, joins = [], []
        for i in range(n):
            member_id, reply = self.join_new(group=group, client_id=f"c{i}", **kw)
            ids.append(member_id)
            joins.append(reply)
        self.settle(*joins)
        assert all(r.done and r.error == 0 for r in joins), [r.responses for r in joins]
        leader = joins[0]["leader"]
        generation = joins[0]["generation_id"]
        ordered = [leader] + [m for m in ids if m != leader]
        syncs = [
            self.sync(m, generation, {x: x.encode() for x in ordered} if m == leader else None, group=group)
            for m in ordered
        ]
        assert all(s.done and s.error == 0 for s in syncs)
        assert self.state(group) is GroupState.STABLE
        return ordered


@pytest.fixture
def h() -> Harness:
    return Harness()


@pytest.fixture
def h0() -> Harness:
    """Initial rebalance delay 0 (as in benchmarks and most client tests)."""
    return Harness(group_initial_rebalance_delay_ms=0)
