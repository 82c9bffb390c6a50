"""Requests naming several groups, answered per group as each group's coordinator would (issue 35 item 5).

Kafka's GroupCoordinatorService (describeGroups, deleteGroups, consumerGroupDescribe) splits the ids by
their `__consumer_offsets` partition and runs one operation per partition; a partition this broker
does not lead fails only its own groups (CoordinatorRuntime.withActiveContextOrThrow:
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS while loading), and the answers are combined.
KafkaApis.handleOffsetFetchRequestFromCoordinator (OffsetFetch v8+) does the same with one future per
group. Here a shard is what a partition is there, and the group coordinator already answers each group
from its shard's phase (`ShardPhases`), so the edge lets these requests through instead of refusing
them whole:

* OffsetFetch v8+, DescribeGroups, ConsumerGroupDescribe: each group's shard is asked first through
  `state_of` (which applies the lease's self-fence, marking a shard DRAINING at once), then the handler
  answers every group from the phases.
* DeleteGroups writes: one handler call per shard, so each shard's tombstones are one write of their
  own and a failed write fails only its shard's groups (Kafka: one scheduleWriteOperation per
  partition). The results are combined in the order of the request, the groups the authorizer refused
  last, as KafkaApis.handleDeleteGroupsRequest appends them.
* ListGroups (Kafka: scheduleReadAllOperation over the partitions this broker holds, a partition no
  longer led contributing nothing, one still loading failing the request with
  COORDINATOR_LOAD_IN_PROGRESS): only the groups of the shards served here, and while one of its shards
  loads the error and no groups.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.runtime import Phase
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode

__all__ = ["DELETE_GROUPS", "MULTI_GROUP_APIS", "delete_groups", "list_groups", "read_groups"]

_OFFSET_FETCH, _DESCRIBE_GROUPS, DELETE_GROUPS, _CONSUMER_GROUP_DESCRIBE = 9, 15, 42, 69
MULTI_GROUP_APIS = frozenset({_OFFSET_FETCH, _DESCRIBE_GROUPS, DELETE_GROUPS, _CONSUMER_GROUP_DESCRIBE})
"""The APIs whose request may name groups of several shards (OffsetFetch from v8)."""

StateOf = Callable[[int], Phase]


def read_groups(
    plain: Handler, keys: Callable[[Request], list[str]], state_of: StateOf, num_shards: int
) -> Handler:
    """A read naming several groups: the self-fence applied to each group's shard, then the handler,
    which answers each group from its shard's phase."""

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        for shard in {shard_of(key, num_shards) for key in keys(req)}:
            state_of(shard)
        plain(ctx, req, meta, respond)

    return handle


def delete_groups(plain: Handler, state_of: StateOf, num_shards: int) -> Handler:
    """DeleteGroups: one call of the handler per shard named, the answers combined."""

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        order = {g: i for i, g in enumerate(dict.fromkeys(str(g) for g in req.get("groups_names") or ()))}
        by_shard: dict[int, list[str]] = {}
        for group_id in order:
            by_shard.setdefault(shard_of(group_id, num_shards), []).append(group_id)
        for shard in by_shard:
            state_of(shard)
        if len(by_shard) <= 1:
            plain(ctx, req, meta, respond)
            return
        answers: list[list[dict[str, Any]] | None] = [None] * len(by_shard)

        def collect(i: int, body: dict[str, object]) -> None:
            results = body["results"]
            assert isinstance(results, list)
            answers[i] = results
            if all(a is not None for a in answers):
                results = sorted((r for a in answers if a for r in a), key=lambda r: order[r["group_id"]])
                respond({**body, "results": _refused_last(results)})

        for i, group_ids in enumerate(by_shard.values()):
            plain(ctx, {**req, "groups_names": group_ids}, meta, functools.partial(collect, i))

    return handle


def _refused_last(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    refused = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return [r for r in results if r["error_code"] != refused] + [
        r for r in results if r["error_code"] == refused
    ]


def list_groups(plain: Handler, state_of: StateOf, num_shards: int) -> Handler:
    """ListGroups: the groups of the shards this node serves; COORDINATOR_LOAD_IN_PROGRESS and no
    groups while one of its shards loads."""

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        states = [state_of(shard) for shard in range(num_shards)]
        if Phase.LOADING in states:
            respond({"error_code": int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), "groups": []})
            return

        def served(body: dict[str, object]) -> None:
            groups = body.get("groups")
            assert isinstance(groups, list)
            mine = [g for g in groups if states[shard_of(str(g["group_id"]), num_shards)] is Phase.ACTIVE]
            respond({**body, "groups": mine})

        plain(ctx, req, meta, served)

    return handle
