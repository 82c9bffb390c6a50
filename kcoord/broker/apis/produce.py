"""Produce (0), v3-13 (v0-2 carry magic 0/1 message sets, which kcoord does not store).
v1: throttle_time_ms; v2: log_append_time_ms; v3: transactional_id; v5: log_start_offset;
v8: record_errors, error_message; v9: flexible; v13: topics named by id (KIP-516): an id the registry
does not know is UNKNOWN_TOPIC_ID for each of its partitions, before authorization (KafkaApis
.handleProduceRequest), and the answer names each topic by the id it was sent with.

Each partition's records are checked by the partition log exactly as Kafka's LogValidator and
ProducerStateManager do (`partition_log`), appended verbatim with their offsets assigned, and
answered once durable under `--fsync` (acks=1 and acks=-1 alike: there is one replica). An
idempotent producer's retry of one of its last five batches is answered with the original offset.
acks=0 requests get no response at all (the connection never queues one, see connection.py).

Kafka's order of checks (`KafkaApis.handleProduceRequest`, `ReplicaManager.appendRecords`):
invalid acks -> INVALID_REQUIRED_ACKS for every partition; unknown partitions
UNKNOWN_TOPIC_OR_PARTITION, a partition another node leads (cluster mode) NOT_LEADER_OR_FOLLOWER, as is
an append the lease fence refused (`partition_log.NotLeader`); acks=-1 to a topic whose
min.insync.replicas exceeds our one replica NOT_ENOUGH_REPLICAS; then each partition's own
validation. A failed write answers KAFKA_STORAGE_ERROR (retriable) and acknowledges nothing; a write
whose outcome stayed unknown (cluster mode) REQUEST_TIMED_OUT, as an expired acks=all wait in Kafka,
and so does an acks=all append still not durable when the request's timeout_ms runs out (DelayedProduce).

Transactional batches (v3+ carry the transactional id; a transactional batch without one is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as KafkaApis refuses it) are verified against the transaction
coordinator before they are appended (KIP-890 part 1, `transaction.partition.verification.enable`,
ReplicaManager.appendRecords -> AddPartitionsToTxnManager): a partition the producer's transaction does
not have is INVALID_TXN_STATE up to v10 and TRANSACTION_ABORTABLE from v11 (genericError), a fenced
producer INVALID_PRODUCER_EPOCH;
a coordinator busy with a transition answers NOT_ENOUGH_REPLICAS, which producers retry
(AddPartitionsToTxnManager's mapping of CONCURRENT_TRANSACTIONS and the coordinator-loading errors).
From v12 (Transactions V2, transaction.version 2) the partition is added to the transaction instead
(TransactionSupportedOperation addPartition) and the batch appended once that is durable. The coordinator
asked is `ctx.verification`'s: this node's, or in cluster mode the transactional id's owner, asked once
per request (kcoord/broker/verification.py). Each partition's batch header is read once, here
(`ProducedBatch`), and handed on to the partition log's validation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kcoord import storage
from kcoord.broker import authz
from kcoord.broker.apis.leader_hints import PRODUCE_HINTED, with_leader_hints
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC
from kcoord.broker.verification import TxnAnswers, TxnCheck
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.partition_log import AppendError, AppendResult, DuplicateAppend, NotLeader, ValidatedAppend
from kcoord.partition_log.port import PartitionStore
from kcoord.partition_log.results import OutcomeUnknown
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import ProducedBatch

__all__ = ["API_KEY", "handle", "wants_response"]

API_KEY = 0
_VALID_ACKS = (-1, 0, 1)
Entry = dict[str, Any]


def wants_response(req: Request) -> bool:
    return int(req["acks"]) != 0


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    if version >= 10 and ctx.brokers is not None:  # KIP-951; only a cluster has other leaders
        respond = with_leader_hints(ctx, meta, respond, "partition_responses", PRODUCE_HINTED)
    if version >= 13:
        _resolve_ids(ctx, req)
    transactional_id = req["transactional_id"] if version >= 3 else None
    batches = [ProducedBatch.read(part["records"]) for t in req["topic_data"] for part in t["partition_data"]]
    writable: set[str] | None = None
    if ctx.authorizer is not None:
        writable = _writable(ctx, req, meta, transactional_id, batches)
        if writable is None:
            respond(_all(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, version))
            return
    acks = int(req["acks"])
    if acks not in _VALID_ACKS:
        respond(_all(req, ErrorCode.INVALID_REQUIRED_ACKS, version))
        return
    check = _txn_check(ctx, req, batches, transactional_id, version)
    write = _Write(ctx, _Pending(version, respond, acks, int(req["timeout_ms"])), transactional_id)
    if check is None:
        write.serve(req, batches, writable, ctx.transactions)
        return
    ctx.verification.answers(
        ctx.transactions, check, meta.listener_name, lambda txns: write.serve(req, batches, writable, txns)
    )


def _resolve_ids(ctx: ServerContext, req: Request) -> None:
    """v13: each topic's name from its id ("" for an unknown id: its partitions answer UNKNOWN_TOPIC_ID)."""
    for topic in req["topic_data"]:
        topic["name"] = ctx.topics.name_for_id(topic["topic_id"]) or ""


def _topic_entry(topic: Request, version: int) -> Entry:
    """A topic of the answer, named as the request named it (v13: by id)."""
    if version >= 13:
        return {"topic_id": topic["topic_id"]}
    return {"name": topic["name"]}


def _writable(
    ctx: ServerContext,
    req: Request,
    meta: RequestMeta,
    transactional_id: str | None,
    batches: list[ProducedBatch],
) -> set[str] | None:
    """KafkaApis.handleProduceRequest with an authorizer: transactional records (RequestUtils
    .hasTransactionalRecords: some partition's first batch is transactional) need WRITE on the
    transactional id (None: the whole request is refused), then the topics the caller may WRITE (the
    others TOPIC_AUTHORIZATION_FAILED per partition, before their existence is looked at)."""
    if any(batch.transactional_producer is not None for batch in batches) and (
        transactional_id is None
        or not authz.allowed(
            ctx, meta, API_KEY, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        )
    ):
        return None
    names = [str(topic["name"]) for topic in req["topic_data"] if topic["name"]]
    return authz.filter_allowed(ctx, meta, API_KEY, AclOperation.WRITE, ResourceType.TOPIC, names)


def _txn_check(
    ctx: ServerContext, req: Request, batches: list[ProducedBatch], transactional_id: str | None, version: int
) -> TxnCheck | None:
    """What the transaction's coordinator is asked before transactional batches are appended: the
    producer of the first transactional batch, every partition of the request, in one question
    (ReplicaManager.appendRecords -> AddPartitionsToTxnManager.verifyTransaction). None: nothing to ask."""
    if transactional_id is None or not ctx.config.transaction_partition_verification_enable:
        return None
    found = (batch.transactional_producer for batch in batches)
    header = next((h for h in found if h is not None and h.producer_id >= 0), None)
    if header is None:
        return None
    partitions = tuple(
        (str(t["name"]), int(p["index"])) for t in req["topic_data"] if t["name"] for p in t["partition_data"]
    )
    add = version >= 12 and ctx.config.transaction_version >= 2
    return TxnCheck(str(transactional_id), header.producer_id, header.producer_epoch, partitions, add)


# Coordinator errors a producer retries as NOT_ENOUGH_REPLICAS (AddPartitionsToTxnManager)
_RETRY_LATER = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class _Write:
    """One request's appends, partition by partition; `txns` answers its transaction's verification."""

    __slots__ = ("ctx", "pending", "transactional_id", "txns")

    def __init__(self, ctx: ServerContext, pending: _Pending, transactional_id: str | None) -> None:
        self.ctx = ctx
        self.pending = pending
        self.transactional_id = transactional_id
        self.txns: TxnAnswers = ctx.transactions

    def serve(
        self, req: Request, batches: list[ProducedBatch], writable: set[str] | None, txns: TxnAnswers
    ) -> None:
        self.txns = txns
        pending, version, read = self.pending, self.pending.version, iter(batches)
        for topic in req["topic_data"]:
            name = str(topic["name"])
            partitions: list[Entry] = []
            pending.topics.append({**_topic_entry(topic, version), "partition_responses": partitions})
            for part in topic["partition_data"]:
                batch = next(read)
                entry: Entry = {"index": int(part["index"]), "base_offset": -1}
                partitions.append(entry)
                if not name:  # v13: an id no topic has
                    _fail(entry, ErrorCode.UNKNOWN_TOPIC_ID, None, version)
                    continue
                if writable is not None and name not in writable:
                    _fail(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, version)
                    continue
                self._append(name, entry, batch)
        pending.arm()

    def _append(self, name: str, entry: Entry, batch: ProducedBatch) -> None:
        ctx, pending, version = self.ctx, self.pending, self.pending.version
        if name == OFFSETS_TOPIC:  # ReplicaManager.appendToLocalLog: Topic.isInternal, before the partition
            _fail(
                entry, ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}", version
            )
            return
        plog = ctx.data.log(name, entry["index"])
        if plog is None:
            _fail(entry, ctx.data.missing(name, entry["index"]), None, version)
            return
        if pending.acks == -1 and (min_isr := ctx.data.min_insync_replicas(name)) > 1:
            # Partition.appendRecordsToLeader: acks=all needs min.insync.replicas in sync (one on a
            # single node; a cluster's live replicas, ClusterLeadership.in_sync_replicas).
            in_sync = ctx.leadership.in_sync_replicas(name, entry["index"])
            if len(in_sync) < min_isr:
                message = (
                    f"The size of the current ISR Set({', '.join(map(str, in_sync))}) is insufficient to "
                    f"satisfy the min.isr requirement of {min_isr} for partition {name}-{entry['index']}"
                )
                _fail(entry, ErrorCode.NOT_ENOUGH_REPLICAS, message, version)
                return
        checked = plog.validate(batch, ctx.data.now_ms())
        if isinstance(checked, AppendError):
            _fail(entry, checked.error_code, checked.message, version)
            if version >= 8 and checked.record_errors:
                entry["record_errors"] = [
                    {"batch_index": index, "batch_index_error_message": message}
                    for index, message in checked.record_errors
                ]
            return
        if isinstance(checked, DuplicateAppend):
            if checked.durable is not None:  # cluster mode: answered as the first copy is
                pending.wait(checked.durable, entry)
                return
            _succeed(entry, checked.base_offset, -1, plog.log_start_offset, version)
            return
        if checked.is_transactional:
            self._transactional(plog, name, entry, checked)
            return
        pending.wait(plog.append(checked), entry)

    def _transactional(self, plog: PartitionStore, name: str, entry: Entry, checked: ValidatedAppend) -> None:
        ctx, pending, version, tid = self.ctx, self.pending, self.pending.version, self.transactional_id
        if tid is None:
            # KafkaApis.handleProduceRequest: transactional records need an authorized transactional id.
            _fail(entry, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "no transactional id", version)
            return
        if not ctx.config.transaction_partition_verification_enable:
            pending.wait(plog.append(checked), entry)
            return
        header = checked.header
        partition = (name, int(entry["index"]))
        error = self.txns.verify_partitions(tid, header.producer_id, header.producer_epoch, [partition])[
            partition
        ]
        if error is ErrorCode.TRANSACTION_ABORTABLE and version >= 12 and ctx.config.transaction_version >= 2:
            # Transactions V2: the broker adds the partition itself, then appends
            pending.hold()
            self.txns.add_partitions_implicit(
                tid, header.producer_id, header.producer_epoch, [partition],
                lambda add_error: self._added(plog, entry, checked, add_error),
            )  # fmt: skip
            return
        if error is not ErrorCode.NONE:
            _fail(entry, _verification_error(error, version), None, version)
            return
        pending.wait(plog.append(checked), entry)

    def _added(self, plog: PartitionStore, entry: Entry, checked: ValidatedAppend, error: ErrorCode) -> None:
        """The V2 implicit add is done: append, validated again (other batches of the producer may have
        been appended meanwhile; the header read at the edge is handed on, not read again)."""
        pending, version = self.pending, self.pending.version
        if error is not ErrorCode.NONE:
            _fail(entry, _verification_error(error, version), None, version)
            pending.settled()
            return
        again = plog.validate(ProducedBatch(checked.data, checked.header), self.ctx.data.now_ms())
        if isinstance(again, ValidatedAppend):
            pending.wait(plog.append(again), entry)
        elif isinstance(again, DuplicateAppend) and again.durable is not None:
            pending.wait(again.durable, entry)
        elif isinstance(again, DuplicateAppend):
            _succeed(entry, again.base_offset, -1, plog.log_start_offset, version)
        else:
            _fail(entry, again.error_code, again.message, version)
        pending.settled()


def _verification_error(error: ErrorCode, version: int) -> ErrorCode:
    """AddPartitionsToTxnManager's and ReplicaManager's mapping of the coordinator's answer."""
    if error in _RETRY_LATER:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH  # "producers expect INVALID_PRODUCER_EPOCH here"
    if error is ErrorCode.TRANSACTION_ABORTABLE and version <= 10:
        return ErrorCode.INVALID_TXN_STATE  # defaultError: clients before KIP-890 part 1
    return error


def _succeed(entry: Entry, base_offset: int, append_time_ms: int, log_start: int, version: int) -> None:
    entry["error_code"] = ErrorCode.NONE
    entry["base_offset"] = base_offset
    entry["log_append_time_ms"] = append_time_ms
    if version >= 5:
        entry["log_start_offset"] = log_start


def _fail(entry: Entry, error: ErrorCode, message: str | None, version: int) -> None:
    entry["error_code"] = error
    entry["base_offset"] = -1
    entry["log_append_time_ms"] = -1
    if version >= 5:
        entry["log_start_offset"] = -1
    if version >= 8:
        entry["error_message"] = message


def _all(req: Request, error: ErrorCode, version: int) -> dict[str, Any]:
    topics = []
    for topic in req["topic_data"]:
        partitions = []
        for part in topic["partition_data"]:
            entry: Entry = {"index": int(part["index"])}
            _fail(entry, error, None, version)
            partitions.append(entry)
        topics.append({**_topic_entry(topic, version), "partition_responses": partitions})
    return {"responses": topics}


class _Pending:
    """The response, sent once every partition's append is durable (or failed), or with acks=all when
    the request's timeout_ms runs out first: the appends still waiting then answer REQUEST_TIMED_OUT,
    as Kafka's DelayedProduce.onExpiration does (in cluster mode a write of unknown outcome waits for
    its verdict, kcoord/cluster/doubt.py; the append itself goes on either way)."""

    __slots__ = ("_armed", "_expiry", "_outstanding", "_respond", "_timeout_ms", "_version", "_waiting",
                 "acks", "topics")  # fmt: skip

    def __init__(self, version: int, respond: Respond, acks: int, timeout_ms: int = 0) -> None:
        self._version = version
        self.acks = acks
        self._respond = respond
        self._timeout_ms = timeout_ms
        self._outstanding = 0
        self._armed = False
        self._waiting: dict[int, Entry] = {}  # id(entry) -> entry, of appends not answered yet
        self._expiry: asyncio.TimerHandle | None = None
        self.topics: list[Entry] = []

    def wait(self, future: asyncio.Future[AppendResult], entry: Entry) -> None:
        self._outstanding += 1
        self._waiting[id(entry)] = entry
        future.add_done_callback(self._on_done(entry))

    def _expire(self) -> None:
        self._expiry = None
        waiting, self._waiting = self._waiting, {}
        for entry in waiting.values():
            _fail(entry, ErrorCode.REQUEST_TIMED_OUT, "the request's timeout ran out", self._version)
        self._outstanding -= len(waiting)
        self._maybe_respond()

    def _on_done(self, entry: Entry) -> Callable[[asyncio.Future[AppendResult]], None]:
        def done(future: asyncio.Future[AppendResult]) -> None:
            if self._waiting.pop(id(entry), None) is None:
                return  # answered REQUEST_TIMED_OUT already (`_expire`)
            error = None if future.cancelled() else future.exception()
            if isinstance(error, NotLeader):  # cluster mode: another node took the partition over
                _fail(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER, str(error), self._version)
            elif isinstance(error, OutcomeUnknown):  # cluster mode: perhaps written (possibly persisted)
                _fail(entry, ErrorCode.REQUEST_TIMED_OUT, str(error), self._version)
            elif future.cancelled() or error is not None:
                message = f"storage failure: {error}" if isinstance(error, storage.StorageError) else None
                _fail(entry, ErrorCode.KAFKA_STORAGE_ERROR, message, self._version)
            else:
                result = future.result()
                _succeed(
                    entry,
                    result.base_offset,
                    result.log_append_time_ms,
                    result.log_start_offset,
                    self._version,
                )
            self._outstanding -= 1
            self._maybe_respond()

        return done

    @property
    def version(self) -> int:
        return self._version

    def hold(self) -> None:
        """A partition waits for something other than its append (the V2 implicit add)."""
        self._outstanding += 1

    def settled(self) -> None:
        """What `hold` waited for is done (its append, if any, is counted on its own)."""
        self._outstanding -= 1
        self._maybe_respond()

    def arm(self) -> None:
        self._armed = True
        self._maybe_respond()
        if self.acks == -1 and self._outstanding and self._waiting and self._timeout_ms > 0:
            self._expiry = asyncio.get_running_loop().call_later(self._timeout_ms / 1000, self._expire)

    def _maybe_respond(self) -> None:
        if self._armed and self._outstanding == 0:
            if self._expiry is not None:
                self._expiry.cancel()
                self._expiry = None
            self._respond({"responses": self.topics})
