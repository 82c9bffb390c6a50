"""Assembling ShareFetch's and ShareAcknowledge's answers: which session partitions are listed, the
acknowledgement results merged in, the leaders of NOT_LEADER_OR_FOLLOWER partitions, and the checks
common to both requests (group READ, topic READ)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import RequestMeta, ServerContext
from kcoord.broker.share.acks import AckResults, topic_name
from kcoord.broker.share.fetch import partition_entry
from kcoord.broker.share.sessions import ShareSession
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["fetch_responses", "group_refusal", "leaders", "topic_readable"]

Entry = dict[str, Any]
TopicPartition = tuple[uuid.UUID, int]


def group_refusal(ctx: ServerContext, meta: RequestMeta, api_key: int, req: dict[str, Any]) -> ErrorCode:
    """KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest: READ on the group first, then a
    group and member id (Kafka takes any non-empty member id: the member need not be known here)."""
    group_id = req["group_id"] or ""
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, api_key, AclOperation.READ, ResourceType.GROUP, group_id
    ):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not group_id or not req["member_id"]:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def topic_readable(
    ctx: ServerContext, meta: RequestMeta, api_key: int, topic_ids: Iterable[uuid.UUID]
) -> Callable[[str], bool]:
    """READ on each topic the request touches (KafkaApis: authHelper.filterByAuthorized)."""
    if ctx.authorizer is None:
        return lambda _name: True
    names = {name for topic_id in topic_ids if (name := topic_name(ctx, topic_id)) is not None}
    allowed = authz.filter_allowed(ctx, meta, api_key, AclOperation.READ, ResourceType.TOPIC, names)
    return allowed.__contains__


def _news(entry: Entry) -> bool:
    """CachedSharePartition.maybeUpdateResponseData: an incremental answer lists a partition only with
    records, acquired records or an error."""
    return bool(entry["error_code"] or entry["acquired_records"] or entry["records"])


def fetch_responses(
    session: ShareSession, entries: dict[TopicPartition, Entry], acks: AckResults, full: bool
) -> list[dict[str, Any]]:
    """ShareFetch's `responses`: a new session lists each of its partitions, a later request only those
    with news (ShareSessionContext.updateAndGenerateResponseData); then the acknowledged partitions
    with their acknowledge_error_code (KafkaApis.combineShareFetchAndShareAcknowledgeResponses)."""
    listed = {key: entry for key, entry in entries.items() if full or _news(entry)}
    for key, error in acks.items():
        listed.setdefault(key, partition_entry(key[1]))["acknowledge_error_code"] = error
    by_topic: dict[uuid.UUID, list[Entry]] = {}
    for (topic_id, _), entry in listed.items():
        by_topic.setdefault(topic_id, []).append(entry)
    # Partitions that sent records go to the back of the session, so the next fetch starts elsewhere
    # (ShareSessionContext's PartitionIterator: remove + mustAdd).
    for key, entry in entries.items():
        if entry["records"] and key in session.partitions:
            del session.partitions[key]
            session.partitions[key] = None
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]


def leaders(ctx: ServerContext, meta: RequestMeta, responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """KafkaApis.processShareFetchResponse: a NOT_LEADER_OR_FOLLOWER partition names its current leader,
    and node_endpoints the endpoints of those leaders."""
    wanted: set[int] = set()
    for topic in responses:
        name = topic_name(ctx, topic["topic_id"])
        for entry in topic["partitions"]:
            if entry["error_code"] != ErrorCode.NOT_LEADER_OR_FOLLOWER or name is None:
                continue
            index = int(entry["partition_index"])
            leader = ctx.leadership.leader(name, index)
            entry["current_leader"] = {
                "leader_id": leader,
                "leader_epoch": ctx.leadership.leader_epoch(name, index),
            }
            wanted.add(leader)
    if not wanted or ctx.brokers is None:
        return []
    return [
        {"node_id": node_id, "host": host, "port": port, "rack": rack}
        for node_id, host, port, rack in ctx.brokers.brokers(meta.listener_name)
        if node_id in wanted
    ]
