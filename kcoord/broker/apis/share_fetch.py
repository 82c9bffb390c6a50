"""ShareFetch (78), v1-2 (KIP-932). v2: share_acquire_mode (KIP-1206: 0 batch-optimized, 1 record-limit)
and is_renew_ack (KIP-1222: acknowledgements that renew locks, nothing fetched).

KafkaApis.handleShareFetchRequest: READ on the group, then the share session (epoch 0 opens, -1 closes,
else the previous + 1; SharePartitionManager.newContext), READ on each topic; the piggy-backed
acknowledgements and the fetch side by side (as Kafka runs them: docs/compat.md), and one answer carries
both (acknowledge_error_code per partition). The fetch reads every partition of the session
(kcoord/broker/share/fetch.py). Closing the session releases what the member still holds
(SharePartitionManager.releaseSession).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.share.acks import AckResults, acknowledge, has_acknowledgements, topic_name
from kcoord.broker.share.answer import fetch_responses, group_refusal, leaders, topic_readable
from kcoord.broker.share.edge import ShareEdge
from kcoord.broker.share.fetch import FetchLimits, ShareFetchPart
from kcoord.broker.share.sessions import ShareContext
from kcoord.broker.share.settings import renew_enabled, share_settings
from kcoord.protocol.errors import ErrorCode

__all__ = ["API_KEY", "MAX_WAIT_MS", "handle"]

API_KEY = 78
MAX_WAIT_MS = 30_000  # upper bound on one parked fetch, as Fetch's (apis/fetch.py)
_BATCH_OPTIMIZED, _RECORD_LIMIT = 0, 1


def _refused(error: ErrorCode) -> dict[str, object]:
    """ShareFetchRequest.getErrorResponse: the top-level error, nothing else."""
    return {"error_code": error, "responses": [], "node_endpoints": []}


def _request_error(req: Request, version: int) -> ErrorCode:
    """The v2 fields' checks: a known acquire mode; a renew request carries no fetch limits (KIP-1222)."""
    if version < 2:
        return ErrorCode.NONE
    if int(req["share_acquire_mode"]) not in (_BATCH_OPTIMIZED, _RECORD_LIMIT):
        return ErrorCode.INVALID_REQUEST
    limits = (req["max_bytes"], req["min_bytes"], req["max_records"], req["max_wait_ms"])
    if req["is_renew_ack"] and any(int(limit) for limit in limits):
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    edge = ctx.share
    if edge is None:  # share groups not enabled on this node (KafkaApis: UNSUPPORTED_VERSION)
        respond(_refused(ErrorCode.UNSUPPORTED_VERSION))
        return
    error = group_refusal(ctx, meta, API_KEY, req)
    if error is ErrorCode.NONE:
        error = _request_error(req, meta.api_version)
    if error is not ErrorCode.NONE:
        respond(_refused(error))
        return
    requested = [(t["topic_id"], int(p["partition_index"])) for t in req["topics"] for p in t["partitions"]]
    forgotten = [(t["topic_id"], int(p)) for t in req["forgotten_topics_data"] for p in t["partitions"]]
    context = edge.sessions.new_context(
        req["group_id"], req["member_id"], int(req["share_session_epoch"]), requested, forgotten,
        has_acknowledgements(req["topics"]), meta.connection_id,
    )  # fmt: skip
    if isinstance(context, ErrorCode):
        respond(_refused(context))
        return
    _ShareFetch(ctx, edge, req, meta, respond, context).start()


class _ShareFetch:
    """One ShareFetch in flight: its acknowledgements and its fetch side by side, one answer for both."""

    __slots__ = (
        "_acks",
        "_context",
        "_ctx",
        "_edge",
        "_fetch",
        "_fetching",
        "_meta",
        "_renew",
        "_req",
        "_respond",
        "_settings",
    )

    def __init__(
        self, ctx: ServerContext, edge: ShareEdge, req: Request, meta: RequestMeta, respond: Respond,
        context: ShareContext,
    ) -> None:  # fmt: skip
        self._ctx, self._edge, self._req, self._meta, self._respond = ctx, edge, req, meta, respond
        self._context = context
        group_id = req["group_id"]
        self._settings = share_settings(ctx, group_id)
        self._renew = meta.api_version >= 2 and bool(req["is_renew_ack"])
        self._acks: AckResults | None = None
        self._fetching = not (context.final or self._renew)
        self._fetch = ShareFetchPart(ctx, edge, group_id, req["member_id"], self._settings, self._limits())

    def _limits(self) -> FetchLimits:
        req = self._req
        strict = self._meta.api_version >= 2 and int(req["share_acquire_mode"]) == _RECORD_LIMIT
        return FetchLimits(
            int(req["min_bytes"]),
            int(req["max_bytes"]),
            int(req["max_records"]),
            int(req["batch_size"]),
            strict,
        )

    def start(self) -> None:
        session = self._context.session
        topic_ids = {key[0] for key in session.partitions} | {t["topic_id"] for t in self._req["topics"]}
        readable = topic_readable(self._ctx, self._meta, API_KEY, topic_ids)
        if self._fetching:
            for key in session.partitions:
                self._resolve(key, readable)
        renew = self._renew and renew_enabled(self._ctx, self._req["group_id"])
        acknowledge(
            self._ctx, self._edge, self._req["group_id"], self._req["member_id"], self._req["topics"],
            self._settings, renew, readable, self._acked,
        )  # fmt: skip
        # The fetch runs beside the acknowledgements' durable write, as in Kafka 4.3.1's
        # SharePartitionManager (acknowledge and fetch of one request side by side): the records being
        # acknowledged stay ACQUIRED by this member until their write is durable, so the fetch skips
        # them as SharePartition.acquire skips a batch with an ongoing state transition
        # (batchHasOngoingStateTransition); a released record comes back once the write completes.
        wait_ms = min(max(int(self._req["max_wait_ms"]), 0), MAX_WAIT_MS) if self._fetching else 0
        self._fetch.start(wait_ms, self._maybe_answer)

    def _acked(self, results: AckResults) -> None:
        """The acknowledgements are durable (or failed): the answer waits for both."""
        self._acks = results
        self._maybe_answer()

    def _resolve(self, key: tuple[uuid.UUID, int], readable: Callable[[str], bool]) -> None:
        """ShareSessionContext.getErroneousAndValidTopicIdPartitions, then KafkaApis' checks."""
        name = topic_name(self._ctx, key[0])
        log = None
        if name is None:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        elif not readable(name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            log = self._ctx.data.log(name, key[1])
            error = ErrorCode.NONE if log is not None else self._ctx.data.missing(name, key[1])
        self._fetch.add(key, log, error)

    def _maybe_answer(self) -> None:
        if self._acks is None or not self._fetch.finished:
            return
        context = self._context
        responses = fetch_responses(context.session, self._fetch.entries, self._acks, context.full)
        body: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "acquisition_lock_timeout_ms": self._settings.record_lock_duration_ms,
            "responses": responses,
            "node_endpoints": leaders(self._ctx, self._meta, responses),
        }
        if context.final:  # KafkaApis: releaseSession once the final request's acknowledgements are in
            session = context.session
            self._edge.sessions.remove(session.group_id, session.member_id)
            self._edge.partitions.release_member(session.group_id, session.member_id)
        self._respond(body)
