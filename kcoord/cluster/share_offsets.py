"""The share-group offset APIs on a cluster node (issue 34 item 4, the cluster half): the group's
coordinator describes, resets and deletes the state of every share partition of the group, including
those another node leads.

Kafka's group coordinator asks the share coordinator, which holds every share partition's durable state
(ReadShareGroupStateSummary, InitializeShareGroupState, DeleteShareGroupState). Here that state is in
`kcoord_share_state`: before DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
DeleteShareGroupOffsets (92) and DeleteGroups (42) run, `ShareOffsetsView` reads the named groups' rows
and hands them to the share tenant (`SharePartitions.observe`), which answers the partitions it does
not host from them; a reset or delete of such a partition is written by `ShareStateLog` with
`kcoord_share_set` (kcoord/cluster/share_state.py). The partitions this node leads answer from memory
as on one node. A group this node does not coordinate is refused by the handlers as before.
DescribeShareGroupOffsets v1's lag of a partition led elsewhere uses its stored log end (every
acknowledged record is durable there: the high watermark), as Kafka's group coordinator asks the
partition's leader for its high watermark.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from kcoord import storage
from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.middleware import Layer
from kcoord.coordinator.persistence.share_state_codec import share_record_from_storage
from kcoord.coordinator.share_partitions import RecordState, SharePartitions, SharePartitionView, ShareRecord

__all__ = ["SHARE_OFFSET_APIS", "ShareOffsetsView"]

log = logging.getLogger("kcoord.cluster.share")

SHARE_OFFSET_APIS = frozenset({42, 90, 91, 92})
"""DeleteGroups (a share group's state goes with it), Describe/Alter/DeleteShareGroupOffsets."""

_ROWS = (
    "SELECT group_id, kind, key, value FROM kcoord_share_state WHERE group_id = ANY($1) "
    "ORDER BY topic, partition, group_id, kind"  # a snapshot (0x50) before its update (0x51)
)
_ENDS = (
    "SELECT DISTINCT l.topic, l.partition, l.log_end_offset FROM kcoord_partition_lease AS l "
    "JOIN kcoord_share_state AS s ON s.topic = l.topic AND s.partition = l.partition "
    "WHERE s.group_id = ANY($1)"
)
_DESCRIBE = 90


def group_ids(api_key: int, req: Request) -> list[str]:
    if api_key == 90:
        return [str(g["group_id"]) for g in req["groups"]]
    if api_key == 42:
        return [str(g) for g in req.get("groups_names") or []]
    return [str(req["group_id"])] if req.get("group_id") else []


class ShareOffsetsView:
    """Middleware (layer CLUSTER_ROUTING, inside the routing): the groups' stored share state observed
    by the tenant before the handler runs."""

    layer = Layer.CLUSTER_ROUTING

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._tasks: set[asyncio.Future[None]] = set()

    def wrap(self, api_key: int, inner: Handler) -> Handler:
        if api_key not in SHARE_OFFSET_APIS:
            return inner

        def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
            groups = group_ids(api_key, req)
            if ctx.share is None or not groups:
                inner(ctx, req, meta, respond)
                return
            describe = api_key == _DESCRIBE and meta.api_version >= 1
            task = asyncio.ensure_future(self._observe_then(groups, describe, inner, ctx, req, meta, respond))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return handle

    async def _observe_then(
        self, groups: list[str], describe: bool, inner: Handler, ctx: ServerContext, req: Request,
        meta: RequestMeta, respond: Respond,
    ) -> None:  # fmt: skip
        assert ctx.share is not None
        ends: dict[tuple[str, int], int] = {}
        try:
            rows = await self._pool.fetch(_ROWS, groups)
            if describe:  # v1's lag needs the log ends
                ends = {
                    (r["topic"], r["partition"]): r["log_end_offset"]
                    for r in await self._pool.fetch(_ENDS, groups)
                }
        except Exception as exc:  # answered from what this node holds; logged
            log.warning("share state of groups %s not read: %s", groups, exc)
            rows = []
        by_group: dict[str, list[ShareRecord]] = defaultdict(list)
        for row in rows:
            stored = storage.Record(row["kind"], row["key"], row["value"])
            by_group[row["group_id"]].append(share_record_from_storage(stored))
        shares = ctx.share.partitions
        for group_id in groups:
            shares.observe(group_id, by_group.get(group_id, ()))
        if ends:
            inner(ctx, req, meta, lambda body: respond(_with_lag(body, shares, ends)))
        else:
            inner(ctx, req, meta, respond)


def _with_lag(
    body: dict[str, Any], shares: SharePartitions, ends: dict[tuple[str, int], int]
) -> dict[str, Any]:
    """KIP-1226's lag (high watermark - start offset - in-flight records whose delivery is complete) for
    the partitions the handler could not measure here (lag -1 with a start offset: led elsewhere)."""
    for group in body["groups"]:
        for topic in group["topics"]:
            for entry in topic["partitions"]:
                end = ends.get((topic["topic_name"], int(entry["partition_index"])))
                if entry["lag"] != -1 or entry["start_offset"] < 0 or end is None:
                    continue
                view = shares.describe(group["group_id"], topic["topic_id"], int(entry["partition_index"]))
                if view is not None:
                    entry["lag"] = end - view.start_offset - _delivered(view)
    return body


def _delivered(view: SharePartitionView) -> int:
    """In-flight records past the start offset whose delivery is complete (SharePartition's
    deliveryCompleteCount), as kcoord/broker/apis/share_offsets_common.py counts them."""
    return sum(
        r.last_offset - max(r.first_offset, view.start_offset) + 1
        for r in view.records
        if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) and r.last_offset >= view.start_offset
    )
