"""Fetch (1), v4 and up. v4: isolation_level, last_stable_offset, aborted_transactions;
v5: log_start_offset; v7: fetch sessions (session_id/epoch, top-level error_code); v9:
current_leader_epoch; v11: rack_id, preferred_read_replica; v12: flexible; v13: topic ids (an unknown id
is UNKNOWN_TOPIC_ID); v15: replica state (tagged); v16: node endpoints (only sent with
NOT_LEADER_OR_FOLLOWER, never here); v17: replica directory id (tagged); v18: a follower's high
watermark (tagged, KIP-1166), ignored: kcoord has no followers.

Records come from the partition logs as stored (whole batches, KIP-74: the first non-empty
partition returns at least one whole batch even past the limits; later partitions stop at the
response's `max_bytes`), up to the high watermark. Kafka's `ReplicaManager.fetchMessages` /
`DelayedFetch`: the response is sent at once when a partition had an error, when `min_bytes` are
there, or when `max_wait_ms` is 0; otherwise it waits, woken by appends (a listener on each partition
log, no polling), until `min_bytes` arrive or `max_wait_ms` passes.

Incremental fetch sessions (KIP-227) are declined the way Kafka declines them when its session cache
is full: a full fetch gets session_id 0 and the client keeps sending full fetches; an incremental
fetch for a session we never created gets FETCH_SESSION_ID_NOT_FOUND.

READ_COMMITTED (v4+) reads up to the last stable offset and lists the aborted transactions of the range
read (Kafka's UnifiedLog.read with FetchIsolation.TXN_COMMITTED and collectAbortedTransactions, in
partition_log); every fetch reports the partition's LSO.
"""

from __future__ import annotations

import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.leader_hints import FETCH_HINTED, with_leader_hints
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import internal_topic
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.partition_log.epochs import check_current_leader_epoch
from kcoord.partition_log.port import PartitionStore
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

__all__ = ["MAX_WAIT_MS", "handle"]

# Upper bound on one parked fetch, whatever the client asks (clients send ~100-500 ms).
MAX_WAIT_MS = 30_000
_SESSIONLESS, _NEW_SESSION = -1, 0  # FetchMetadata.FINAL_EPOCH / INITIAL_EPOCH
_READ_COMMITTED = 1
Entry = dict[str, Any]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    if version >= 7 and int(req["session_epoch"]) not in (_SESSIONLESS, _NEW_SESSION):
        respond({"error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []})
        return
    if version >= 16 and ctx.brokers is not None:  # KIP-951; only a cluster has other leaders
        respond = with_leader_hints(ctx, meta, respond, "partitions", FETCH_HINTED)
    readable = None if ctx.authorizer is None else _readable(ctx, req, meta)
    fetch = _Fetch(ctx, req, version, respond, readable)
    wait_ms = min(max(int(req["max_wait_ms"]), 0), MAX_WAIT_MS)
    if fetch.read() or wait_ms == 0 or ctx.shutting_down:
        fetch.respond()
    else:
        fetch.park(wait_ms)


def _readable(ctx: ServerContext, req: Request, meta: RequestMeta) -> set[str]:
    """KafkaApis.handleFetchRequest: a follower (replica id >= 0) needs CLUSTER_ACTION on the cluster
    for every partition; a consumer READ on each topic."""
    names = _names(ctx, req, meta.api_version)
    state = req.get("replica_state") or {}
    if int(req.get("replica_id", -1)) >= 0 or int(state.get("replica_id", -1)) >= 0:
        return names if authz.cluster_allowed(ctx, meta, 1, AclOperation.CLUSTER_ACTION) else set()
    return authz.filter_allowed(ctx, meta, 1, AclOperation.READ, ResourceType.TOPIC, names)


def _names(ctx: ServerContext, req: Request, version: int) -> set[str]:
    """The topics' names: by id from v13 (an unknown id has none), else as given."""
    names = set()
    for topic in req["topics"]:
        name = _name_for_id(ctx, topic["topic_id"]) if version >= 13 else topic["topic"]
        if name is not None:
            names.add(str(name))
    return names


def _name_for_id(ctx: ServerContext, topic_id: uuid.UUID) -> str | None:
    """A registry topic's name, or `__consumer_offsets` (the coordinator log's view) by its id."""
    internal = internal_topic(ctx.data.offsets, topic_id=topic_id)
    return internal.name if internal is not None else ctx.topics.name_for_id(topic_id)


class _Wanted:
    """One requested partition: where its answer goes and where it reads from."""

    __slots__ = ("entry", "fetch_offset", "isolation_level", "log", "max_bytes", "version")

    def __init__(
        self,
        entry: Entry,
        log: PartitionStore | None,
        fetch_offset: int,
        max_bytes: int,
        version: int,
        isolation_level: int,
    ) -> None:
        self.version = version
        self.isolation_level = isolation_level
        self.entry = entry
        self.log = log
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes


class _Fetch:
    """One Fetch request: resolves its partitions once, reads them, parks until data or the deadline."""

    __slots__ = (
        "_ctx",
        "_min_bytes",
        "_parked",
        "_respond",
        "_responded",
        "_token",
        "body",
        "max_bytes",
        "wanted",
    )

    def __init__(
        self,
        ctx: ServerContext,
        req: Request,
        version: int,
        respond: Respond,
        readable: set[str] | None = None,
    ) -> None:
        self._ctx = ctx
        self._respond = respond
        self._min_bytes = int(req["min_bytes"])
        self.max_bytes = max(int(req["max_bytes"]), 0)
        self._parked: list[PartitionStore] = []
        self._token: int | None = None
        self._responded = False
        self.wanted: list[_Wanted] = []
        committed = version >= 4 and int(req["isolation_level"]) == _READ_COMMITTED
        topics = [self._topic(t, version, committed, readable) for t in req["topics"]]
        self.body: dict[str, Any] = {"responses": topics}
        if version >= 7:
            self.body["error_code"] = ErrorCode.NONE
            self.body["session_id"] = 0

    def _topic(self, topic: Request, version: int, committed: bool, readable: set[str] | None) -> Entry:
        if version >= 13:
            topic_id: uuid.UUID = topic["topic_id"]
            name = _name_for_id(self._ctx, topic_id)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
            out: Entry = {"topic_id": topic_id, "partitions": []}
        else:
            name, unknown = str(topic["topic"]), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out = {"topic": name, "partitions": []}
        for part in topic["partitions"]:
            index = int(part["partition"])
            denied = readable is not None and name is not None and name not in readable
            log = None if name is None or denied else self._ctx.data.log(name, index)
            # aborted_transactions as Kafka fills it: [] in the answers KafkaApis makes itself (unknown
            # or unauthorized partitions, FetchResponse.partitionResponse), null in those the replica
            # manager's read makes (ReplicaManager.readFromLog: a read, its epoch and range errors)
            # unless a read_committed read finds aborted transactions.
            entry: Entry = {"partition_index": index, "records": b"", "aborted_transactions": []}
            out["partitions"].append(entry)
            if denied:  # READ on the topic is checked before its existence (KafkaApis.handleFetchRequest)
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif log is None:  # an unknown id (v13+), an unknown name or partition, or led elsewhere
                error = unknown if name is None else self._ctx.data.missing(name, index)
            else:
                entry["aborted_transactions"] = None
                error = check_current_leader_epoch(int(part["current_leader_epoch"]), log.leader_epoch)
            if error is not ErrorCode.NONE:
                _error(entry, error)
                log = None
            offset, max_bytes = int(part["fetch_offset"]), int(part["partition_max_bytes"])
            isolation = _READ_COMMITTED if committed else 0
            self.wanted.append(_Wanted(entry, log, offset, max_bytes, version, isolation))
        return out

    def read(self) -> bool:
        """Reads every partition again; True if the response should go now (errors or min_bytes)."""
        remaining, total, first, failed = self.max_bytes, 0, True, False
        for wanted in self.wanted:
            if wanted.log is None:
                failed = True
                continue
            try:
                size = _read_into(wanted, min(wanted.max_bytes, remaining), first)
            except StorageFault as fault:  # Kafka's ReplicaManager.readFromLog: KAFKA_STORAGE_ERROR
                self._ctx.data.read_failed(fault)
                _error(wanted.entry, ErrorCode.KAFKA_STORAGE_ERROR)
                size = None
            if size is None:
                failed = True
                continue
            if size:
                first = False
            remaining = max(remaining - size, 0)
            total += size
        return failed or not self.wanted or total >= self._min_bytes

    def park(self, wait_ms: int) -> None:
        for wanted in self.wanted:
            if wanted.log is not None:
                wanted.log.add_listener(self._woken)
                self._parked.append(wanted.log)
        self._token = self._ctx.delayed.add(wait_ms, self._expired)

    def _woken(self) -> None:
        if not self._responded and self.read():
            self.respond()

    def _expired(self) -> None:
        self._token = None
        if not self._responded:
            self.read()
            self.respond()

    def respond(self) -> None:
        self._responded = True
        for log in self._parked:
            log.remove_listener(self._woken)
        self._parked.clear()
        if self._token is not None:
            self._ctx.delayed.cancel(self._token)
            self._token = None
        self._respond(self.body)


def _read_into(wanted: _Wanted, limit: int, min_one_batch: bool) -> int | None:
    """Fills the partition's entry; the bytes it returns, None for OFFSET_OUT_OF_RANGE."""
    log, entry = wanted.log, wanted.entry
    assert log is not None
    result = log.read(wanted.fetch_offset, limit, wanted.isolation_level)
    if result is None:
        _error(entry, ErrorCode.OFFSET_OUT_OF_RANGE)
        return None
    records = result.records
    if len(records) > limit and not min_one_batch:
        records = b""  # only the first non-empty partition may exceed the limits (KIP-74)
    entry["error_code"] = ErrorCode.NONE
    entry["high_watermark"] = result.high_watermark
    entry["last_stable_offset"] = result.last_stable_offset
    if wanted.isolation_level == _READ_COMMITTED:
        # v4+: the aborted transactions of the range read (null when none, as Kafka sends it)
        entry["aborted_transactions"] = [
            {"producer_id": producer_id, "first_offset": first_offset}
            for producer_id, first_offset in result.aborted_transactions or ()
        ] or None
    if wanted.version >= 5:
        entry["log_start_offset"] = result.log_start_offset
    entry["records"] = records
    return len(records)


def _error(entry: Entry, error: ErrorCode) -> None:
    # Kafka's FetchResponse.partitionResponse for an error: -1 watermarks, empty records (librdkafka
    # rejects a null record set).
    entry["error_code"] = error
    entry["high_watermark"] = entry["last_stable_offset"] = entry["log_start_offset"] = -1
    entry["records"] = b""
