"""Routing at the edge: which node answers for a group or a transactional id.

* FindCoordinator (every version, group and transaction keys) answers the shard's owner from the
  node's cached view of the leases (`Membership.view`); a shard without a live owner answers
  COORDINATOR_NOT_AVAILABLE (Kafka: KafkaApis.getCoordinator with no leader for the partition).
* The coordinator APIs on a node check the shard of their group or transactional id first, as
  Kafka's `CoordinatorRuntime.withActiveContextOrThrow` does: not owned here (or draining, or past
  the lease's self-fence) -> NOT_COORDINATOR, still loading -> COORDINATOR_LOAD_IN_PROGRESS, except
  Heartbeat, which answers NONE while the group loads (GroupCoordinatorService.heartbeat: "the group
  is still loading, so blindly respond"). The error answers are the APIs' own error bodies
  (`server/faults.error_body`, every API). A request naming several groups (DescribeGroups,
  DeleteGroups, OffsetFetch v8+, ConsumerGroupDescribe) and ListGroups are answered per group, as
  each group's coordinator would (`per_group.py`).

Both are one middleware, `ClusterRouting` (layer CLUSTER_ROUTING of kcoord/broker/middleware.py), which
cluster mode's composition root passes to the edge. The check of a transaction's owner before its data
is written (KIP-890) is the verification port's remote implementation instead (`txn_verify.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcoord.broker.apis import find_coordinator
from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.faults import error_body
from kcoord.broker.middleware import Layer
from kcoord.cluster import per_group
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.routing import shard_for
from kcoord.coordinator.runtime import Phase
from kcoord.protocol.errors import ErrorCode

__all__ = ["GROUP_APIS", "TXN_APIS", "ClusterRouting", "request_keys"]

_HEARTBEAT, _FIND_COORDINATOR, _ADD_PARTITIONS, _LIST_GROUPS, _OFFSET_FETCH = 12, 10, 24, 16, 9
GROUP_APIS = frozenset({8, 9, 11, 12, 13, 14, 15, 28, 42, 47, 68, 69})
"""OffsetCommit, OffsetFetch, Join/Heartbeat/Leave/SyncGroup, DescribeGroups, TxnOffsetCommit,
DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat, ConsumerGroupDescribe."""
TXN_APIS = frozenset({22, 25, 26})
"""InitProducerId (with a transactional id), AddOffsetsToTxn, EndTxn. AddPartitionsToTxn v0-3 is
routed too (`request_keys`); v4+ is broker to broker, with one entry per transaction."""

StateOf = Callable[[int], Phase]


def request_keys(api_key: int, req: Request) -> list[str]:
    """The group or transactional ids a coordinator request is about ([] = route nowhere)."""
    if api_key == 24:  # v0-3 from a client; v4+ is broker to broker, answered per transaction
        txn_id = req.get("v3_and_below_transactional_id") or None
        return [] if txn_id is None else [str(txn_id)]
    if api_key in (22, 25, 26):
        txn_id = req.get("transactional_id")
        return [] if txn_id is None else [str(txn_id)]
    if api_key == 9 and req.get("groups"):  # v8+; before v8 the decoder leaves an empty default
        return [str(g["group_id"]) for g in req["groups"]]
    if api_key == 15:
        return [str(g) for g in req.get("groups") or []]
    if api_key == 42:
        return [str(g) for g in req.get("groups_names") or []]
    if api_key == 69:
        return [str(g) for g in req.get("group_ids") or []]
    return [str(req.get("group_id") or "")]


def _refusal(state: Phase) -> ErrorCode | None:
    if state is Phase.ACTIVE:
        return None
    if state is Phase.LOADING:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return ErrorCode.NOT_COORDINATOR


def _routed(api_key: int, plain: Handler, state_of: StateOf, num_shards: int) -> Handler:
    if api_key == per_group.DELETE_GROUPS:
        return per_group.delete_groups(plain, state_of, num_shards)

    def keys(req: Request) -> list[str]:
        return request_keys(api_key, req)

    by_group = per_group.read_groups(plain, keys, state_of, num_shards)
    if api_key in per_group.MULTI_GROUP_APIS and api_key != _OFFSET_FETCH:
        return by_group

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        if api_key == _OFFSET_FETCH and meta.api_version >= 8:  # KIP-709: several groups
            by_group(ctx, req, meta, respond)
            return
        for key in request_keys(api_key, req):
            if not key:
                continue  # "" is the handler's own INVALID_GROUP_ID
            error = _refusal(state_of(shard_for(key, num_shards)))
            if error is None:
                continue
            if api_key == _HEARTBEAT and error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                error = ErrorCode.NONE
            respond(error_body(api_key, meta.api_version, req, int(error)))
            return
        plain(ctx, req, meta, respond)

    return handle


class ClusterRouting:
    """The coordinator APIs checked against the shard of their group or transactional id (AddPartitionsToTxn
    v0-3 too: `request_keys`), FindCoordinator answered from the cluster's view."""

    layer = Layer.CLUSTER_ROUTING

    def __init__(self, state_of: StateOf, view: Callable[[], ClusterView], num_shards: int) -> None:
        self._state_of = state_of
        self._view = view
        self._num_shards = num_shards

    def wrap(self, api_key: int, inner: Handler) -> Handler:
        if api_key == _FIND_COORDINATOR:
            return _find_coordinator(self._view, self._num_shards)
        if api_key == _LIST_GROUPS:
            return per_group.list_groups(inner, self._state_of, self._num_shards)
        if api_key in GROUP_APIS or api_key in TXN_APIS or api_key == _ADD_PARTITIONS:
            return _routed(api_key, inner, self._state_of, self._num_shards)
        return inner


def _find_coordinator(view: Callable[[], ClusterView], num_shards: int) -> Handler:
    def lookup(ctx: ServerContext, meta: RequestMeta, key: str, key_type: int) -> dict[str, Any]:
        entry = find_coordinator.lookup(ctx, meta, key, key_type)
        if entry["error_code"] != ErrorCode.NONE:
            return entry
        owner = view().owner(shard_for(key, num_shards))
        if owner is None:
            return {**entry, "node_id": -1, "host": "", "port": -1,
                    "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    "error_message": "the key's shard has no live owner"}  # fmt: skip
        host, port = owner.endpoint(meta.listener_name)
        return {**entry, "node_id": owner.node_id, "host": host, "port": port}

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        find_coordinator.answer(ctx, req, meta, respond, lookup)

    return handle
