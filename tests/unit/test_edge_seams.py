"""The edge's seams (issue 32): the middleware list around the handlers, the transaction-verification
port's local implementation and the owner's answers the remote one hands on, and the Produce batch header
read once (`ProducedBatch`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.middleware import Layer, handler_table
from kcoord.broker.verification import LOCAL, Partition, TxnAnswers, TxnCheck
from kcoord.cluster.edge import ClusterRouting
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.txn_verify import OwnerAnswers, RemoteVerification, errors_of, request_body
from kcoord.coordinator.runtime import Phase
from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.producers import ProducerStates
from kcoord.partition_log.stamp import stamp
from kcoord.partition_log.validation import AppendError, ValidatedAppend, check_append
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import ProducedBatch
from kcoord.wiring.controls.faults import FaultTable
from kcoord.wiring.controls.wiring import ControlsLayer, RequestLog

META = RequestMeta(4, "c", "/127.0.0.1")
NOW = 1_700_000_000_000


# -- middlewares ------------------------------------------------------------------------------------------
class _Tagging:
    """A middleware that records its name before the inner handler runs, for the APIs in `keys`."""

    def __init__(self, name: str, layer: Layer, seen: list[str], keys: frozenset[int]) -> None:
        self.name, self.layer, self._seen, self._keys = name, layer, seen, keys

    def wrap(self, api_key: int, inner: Handler) -> Handler:
        if api_key not in self._keys:
            return inner

        def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
            self._seen.append(self.name)
            inner(ctx, req, meta, respond)

        return handle


def _plain(seen: list[str]) -> dict[int, Handler]:
    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        seen.append("handler")

    return {3: handle, 12: handle}


def test_middlewares_wrap_in_layer_order_whatever_order_they_are_given_in() -> None:
    seen: list[str] = []
    routing = _Tagging("routing", Layer.CLUSTER_ROUTING, seen, frozenset({12}))
    controls = _Tagging("controls", Layer.TEST_CONTROLS, seen, frozenset({3, 12}))
    for given in ([routing, controls], [controls, routing]):
        seen.clear()
        table = handler_table(given, _plain(seen))
        table[12](None, {}, META, lambda body: None)  # type: ignore[arg-type]
        assert seen == ["controls", "routing", "handler"]


def test_an_api_no_middleware_applies_to_is_called_directly() -> None:
    seen: list[str] = []
    plain = _plain(seen)
    routing = _Tagging("routing", Layer.CLUSTER_ROUTING, seen, frozenset({12}))
    table = handler_table([routing], plain)
    assert table[3] is plain[3]  # no call added per request
    assert table[12] is not plain[12]
    assert handler_table([], plain) == plain


def test_two_middlewares_of_one_layer_keep_the_given_order_first_outermost() -> None:
    seen: list[str] = []
    first = _Tagging("first", Layer.TEST_CONTROLS, seen, frozenset({3}))
    second = _Tagging("second", Layer.TEST_CONTROLS, seen, frozenset({3}))
    handler_table([first, second], _plain(seen))[3](None, {}, META, lambda body: None)  # type: ignore[arg-type]
    assert seen == ["first", "second", "handler"]


async def test_test_controls_see_a_request_before_cluster_routing_refuses_it() -> None:
    """The real layers: the request log records routing's refusal, and an armed fault answers before
    routing is asked."""
    served: list[str] = []

    def heartbeat(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        served.append(req["group_id"])

    faults, requests = FaultTable(), RequestLog(lambda: NOW)
    routing = ClusterRouting(lambda shard: Phase.NOT_OWNED, ClusterView, 50)
    table = handler_table([routing, ControlsLayer(faults, requests)], {12: heartbeat})
    ctx: Any = SimpleNamespace(topics=SimpleNamespace(name_for_id=lambda topic_id: None))
    answers: list[dict[str, Any]] = []
    table[12](ctx, {"group_id": "g"}, META, answers.append)
    assert answers[-1]["error_code"] == ErrorCode.NOT_COORDINATOR and not served
    assert requests.since(0)[-1]["error_codes"] == [int(ErrorCode.NOT_COORDINATOR)]
    fault = faults.add(kind="error", api_key=12, count=1, error=ErrorCode.REBALANCE_IN_PROGRESS)
    table[12](ctx, {"group_id": "g"}, META, answers.append)
    assert answers[-1]["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert requests.since(0)[-1]["fault"] == fault.id


def test_cluster_routing_serves_find_coordinator_from_the_view_and_leaves_other_apis_alone() -> None:
    plain: dict[int, Handler] = {3: lambda *_: None, 10: lambda *_: None, 12: lambda *_: None}
    table = handler_table([ClusterRouting(lambda shard: Phase.ACTIVE, ClusterView, 50)], plain)
    assert table[3] is plain[3]
    assert table[10] is not plain[10] and table[12] is not plain[12]


# -- the verification port ----------------------------------------------------------------------------------
class _Coordinator:
    """A transaction coordinator's verification surface that knows which partitions the transaction has."""

    def __init__(self, has: set[Partition]) -> None:
        self.has = has

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition]
    ) -> Mapping[Partition, ErrorCode]:
        return {p: ErrorCode.NONE if p in self.has else ErrorCode.TRANSACTION_ABORTABLE for p in partitions}

    def add_partitions_implicit(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[ErrorCode], None],
    ) -> None:
        self.has.update(partitions)
        done(ErrorCode.NONE)


CHECK = TxnCheck("tx", 7, 1, (("t", 0), ("t", 1)), add=False)


def test_the_local_verification_answers_with_this_nodes_coordinator_at_once() -> None:
    local = _Coordinator({("t", 0)})
    got: list[TxnAnswers] = []
    LOCAL.answers(local, CHECK, "PLAINTEXT", got.append)
    assert got == [local]


def test_the_owners_answers_read_as_the_local_coordinators_would() -> None:
    answers = OwnerAnswers({("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.TRANSACTION_ABORTABLE})
    assert answers.verify_partitions("tx", 7, 1, [("t", 0), ("t", 1), ("t", 2)]) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.TRANSACTION_ABORTABLE,
        ("t", 2): ErrorCode.COORDINATOR_NOT_AVAILABLE,  # not answered for: retriable
    }
    added: list[ErrorCode] = []
    answers.add_partitions_implicit("tx", 7, 1, [("t", 0)], added.append)
    answers.add_partitions_implicit("tx", 7, 1, [("t", 0), ("t", 1)], added.append)
    OwnerAnswers({}).add_partitions_implicit("tx", 7, 1, [("t", 0)], added.append)  # no owner, no answer
    assert added == [ErrorCode.NONE, ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE]


def test_the_owner_is_asked_one_add_partitions_to_txn_and_its_answer_read_per_partition() -> None:
    body = request_body(TxnCheck("tx", 7, 1, (("t", 0), ("u", 2), ("t", 1)), add=True))
    assert body == {"transactions": [{
        "transactional_id": "tx", "producer_id": 7, "producer_epoch": 1, "verify_only": False,
        "topics": [{"name": "t", "partitions": [0, 1]}, {"name": "u", "partitions": [2]}],
    }]}  # fmt: skip
    partitions = [{"partition_index": 0, "partition_error_code": 0},
                  {"partition_index": 1, "partition_error_code": 48}]  # fmt: skip
    topic = {"name": "t", "results_by_partition": partitions}
    answer = {
        "error_code": 0,
        "results_by_transaction": [{"transactional_id": "tx", "topic_results": [topic]}],
    }
    assert errors_of(answer, CHECK.partitions) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.INVALID_TXN_STATE,
    }
    refused = {"error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "results_by_transaction": []}
    assert errors_of(refused, CHECK.partitions) == dict.fromkeys(
        CHECK.partitions, ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    )


def test_the_remote_verification_asks_its_own_coordinator_for_the_shards_it_serves() -> None:
    local = _Coordinator(set())
    got: list[TxnAnswers] = []
    RemoteVerification(lambda shard: Phase.ACTIVE, ClusterView, 50).answers(local, CHECK, "X", got.append)
    assert got == [local]


def test_the_remote_verification_without_a_live_owner_answers_not_available() -> None:
    got: list[TxnAnswers] = []
    for state in (Phase.NOT_OWNED, Phase.LOADING):
        remote = RemoteVerification(dict.fromkeys(range(50), state).__getitem__, ClusterView, 50)
        remote.answers(_Coordinator(set()), CHECK, "X", got.append)
    assert [a.verify_partitions("tx", 7, 1, [("t", 0)]) for a in got] == [
        {("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    ] * 2


# -- the batch header, read once ----------------------------------------------------------------------------
def _batch(transactional: bool) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, 7, 1, 0, batch_size=1 << 30)
    builder.append(0, NOW, None, b"v", [])
    return bytes(builder.build())


def test_a_produced_batch_reads_its_header_once_and_validation_uses_it() -> None:
    data = _batch(transactional=True)
    batch = ProducedBatch.read(data)
    assert batch.header is not None and batch.transactional_producer is batch.header
    assert (batch.header.producer_id, batch.header.producer_epoch) == (7, 1)
    checked = check_append(batch, PartitionConfig(), ProducerStates(), NOW)
    assert isinstance(checked, ValidatedAppend) and checked.header is batch.header  # handed on, not re-read
    assert ProducedBatch.read(_batch(transactional=False)).transactional_producer is None
    assert ProducedBatch.read(None) == ProducedBatch(b"", None)
    short = check_append(ProducedBatch.read(data[:40]), PartitionConfig(), ProducerStates(), NOW)
    assert isinstance(short, AppendError) and short.error_code is ErrorCode.INVALID_RECORD


def test_the_place_written_into_a_batch_reads_back_as_kafka_reads_it() -> None:
    """`stamp` (through the batch format's `with_place`) checked by kafka-python's own batch reader."""
    data = _batch(transactional=False)
    header = ProducedBatch.read(data).header
    assert header is not None
    for timestamp_type, expected_max in (("CreateTime", NOW), ("LogAppendTime", NOW + 5000)):
        config = PartitionConfig(message_timestamp_type=timestamp_type)
        stamped = stamp(data, header, 42, config, NOW + 5000, leader_epoch=3)
        batch = DefaultRecordBatch(stamped.data)
        assert (batch.base_offset, batch.leader_epoch, batch.max_timestamp) == (42, 3, expected_max)
        assert batch.validate_crc() and batch.timestamp_type == (timestamp_type == "LogAppendTime")
        assert stamped.max_timestamp == expected_max
        assert stamped.append_time_ms == (NOW + 5000 if timestamp_type == "LogAppendTime" else -1)
        assert stamped.data[16:] == data[16:] or timestamp_type == "LogAppendTime"  # only the place changed
