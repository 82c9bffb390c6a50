"""JSON views of share groups for the HTTP inspector (`/v1/share-groups`, `/v1/share-groups/{id}`):
a group's state, epochs and members with their assignments, and each of its share partitions' start
offset, lag (KIP-1226) and in-flight records by delivery state (the tenant's view)."""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import ServerContext
from kcoord.coordinator.groups.share.model import ShareGroup
from kcoord.coordinator.share_partitions import SharePartitionView
from kcoord.wiring.share_metrics import view_lag

__all__ = ["share_group_detail", "share_group_summaries"]


def share_group_summaries(ctx: ServerContext) -> list[dict[str, Any]]:
    groups = sorted(ctx.manager.share.rt.share_groups.values(), key=lambda g: g.group_id)
    return [_summary(g) for g in groups]


def _summary(group: ShareGroup) -> dict[str, Any]:
    return {"group_id": group.group_id, "type": "share", "state": group.state.value,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "members": len(group.members)}  # fmt: skip


def share_group_detail(ctx: ServerContext, group_id: str) -> dict[str, Any] | None:
    group = ctx.manager.share.group(group_id)
    shares = None if ctx.share is None else ctx.share.partitions
    keys = [] if shares is None else shares.partitions(group_id)
    if group is None and not keys:
        return None
    detail: dict[str, Any] = _summary(group) if group is not None else {"group_id": group_id, "type": "share"}
    if group is not None:
        detail["member_details"] = [
            {"member_id": m.member_id, "member_epoch": m.member_epoch, "client_id": m.client_id,
             "client_host": m.client_host, "subscribed_topics": sorted(m.subscribed_topic_names),
             "assignment": _named(ctx, ctx.manager.share.assignment(group_id, m.member_id))}
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        ]  # fmt: skip
    views = [shares.describe(group_id, t, p) for t, p in keys] if shares is not None else []
    detail["partitions"] = [_partition(ctx, v) for v in views if v is not None]
    return detail


def _named(ctx: ServerContext, assignment: dict[Any, frozenset[int]]) -> dict[str, list[int]]:
    named = {ctx.topics.name_for_id(t) or str(t): sorted(p) for t, p in assignment.items()}
    return dict(sorted(named.items()))


def _partition(ctx: ServerContext, view: SharePartitionView) -> dict[str, Any]:
    name = ctx.topics.name_for_id(view.topic_id)
    log = None if name is None else ctx.data.log(name, view.partition)
    by_state: dict[str, int] = {}
    for r in view.records:
        state = r.state.name.lower()
        by_state[state] = by_state.get(state, 0) + r.last_offset - r.first_offset + 1
    lag = None if log is None else view_lag(view, log.high_watermark)
    return {"topic": name, "partition": view.partition, "start_offset": view.start_offset,
            "state_epoch": view.state_epoch, "lag": lag, "in_flight": by_state}  # fmt: skip
