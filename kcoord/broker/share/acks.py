"""Acknowledgements, piggy-backed on ShareFetch or sent alone in ShareAcknowledge: checked as KafkaApis
checks them (getAcknowledgeBatchesFrom*Request, validateAcknowledgementBatches, handleAcknowledgements),
then handed to the tenant, which answers each partition once its new state is durable."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.broker.context import ServerContext
from kcoord.broker.share.edge import ShareEdge
from kcoord.coordinator.share_partitions import AcknowledgeType, ShareSettings
from kcoord.protocol.errors import ErrorCode

__all__ = ["AckResults", "acknowledge", "has_acknowledgements", "topic_name"]

TopicPartition = tuple[uuid.UUID, int]
AckResults = dict[TopicPartition, ErrorCode]
Batch = tuple[int, int, Sequence[int]]


def has_acknowledgements(topics: Sequence[dict[str, Any]]) -> bool:
    """KafkaApis.isAcknowledgeDataPresentInFetchRequest."""
    return any(p["acknowledgement_batches"] for topic in topics for p in topic["partitions"])


def topic_name(ctx: ServerContext, topic_id: uuid.UUID) -> str | None:
    return ctx.topics.name_for_id(topic_id)


def _invalid(batches: Sequence[dict[str, Any]], max_type: int) -> bool:
    """KafkaApis.validateAcknowledgementBatches: ranges ascending and well formed, one type for the
    batch or one per offset, every type known (RENEW only in a renew request, KIP-1222)."""
    previous_end = -1
    for batch in batches:
        first, last, types = int(batch["first_offset"]), int(batch["last_offset"]), batch["acknowledge_types"]
        if first > last or first < previous_end or not types:
            return True
        if len(types) > 1 and last - first != len(types) - 1:
            return True
        if any(kind < AcknowledgeType.GAP or kind > max_type for kind in types):
            return True
        previous_end = last
    return False


def _check(
    ctx: ServerContext, topic_id: uuid.UUID, partition: int, readable: Callable[[str], bool]
) -> ErrorCode:
    """The partition's error before acknowledging: unknown id, not authorized, unknown partition."""
    name = topic_name(ctx, topic_id)
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not readable(name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not ctx.topics.has_partition(name, partition):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _parse(
    ctx: ServerContext, topics: Sequence[dict[str, Any]], max_type: int, readable: Callable[[str], bool]
) -> tuple[AckResults, list[tuple[TopicPartition, list[Batch]]]]:
    """The refused partitions with their errors, and the batches of the others."""
    refused: AckResults = {}
    pending: list[tuple[TopicPartition, list[Batch]]] = []
    for topic in topics:
        topic_id: uuid.UUID = topic["topic_id"]
        for part in topic["partitions"]:
            batches = part["acknowledgement_batches"]
            if not batches:
                continue
            key = (topic_id, int(part["partition_index"]))
            error = _check(ctx, topic_id, key[1], readable)
            if error is ErrorCode.NONE and _invalid(batches, max_type):
                error = ErrorCode.INVALID_REQUEST
            if error is not ErrorCode.NONE:
                refused[key] = error
                continue
            parsed: list[Batch] = [
                (int(b["first_offset"]), int(b["last_offset"]), list(b["acknowledge_types"])) for b in batches
            ]
            pending.append((key, parsed))
    return refused, pending


def acknowledge(
    ctx: ServerContext,
    edge: ShareEdge,
    group_id: str,
    member_id: str,
    topics: Sequence[dict[str, Any]],
    settings: ShareSettings,
    renew: bool,
    readable: Callable[[str], bool],
    done: Callable[[AckResults], None],
) -> None:
    """Acknowledge every partition of `topics` that carries batches; `done(results)` once each has its
    answer (at once for the refused ones, once durable for the rest)."""
    max_type = AcknowledgeType.RENEW if renew else AcknowledgeType.REJECT
    results, pending = _parse(ctx, topics, max_type, readable)
    remaining = len(pending)
    if not remaining:
        done(results)
        return

    def answered(key: TopicPartition, error: ErrorCode) -> None:
        nonlocal remaining
        results[key] = error
        remaining -= 1
        if remaining == 0:
            done(results)

    for key, parsed in pending:
        edge.partitions.acknowledge(
            group_id, member_id, key[0], key[1], parsed, settings, functools.partial(answered, key)
        )
