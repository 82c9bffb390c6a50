"""Storage record type 6: TransactionLogKey v0 / TransactionLogValue v0-1 (Kafka's
transaction-coordinator/src/main/resources/common/message/TransactionLog*.json) through the codec,
`kcoord storage dump`'s rendering, and the Replayer."""

from __future__ import annotations

import pytest

from kcoord.coordinator.persistence import from_storage, render, to_storage
from kcoord.coordinator.transactions import TransactionRecord, TransactionState, TransactionValue
from kcoord.protocol.messages.records import RECORD_TYPES, TRANSACTION_LOG_VALUE, decode_exact

S = TransactionState


def _value(state: TransactionState = S.ONGOING, tv: int = 0, nxt: int = -1) -> TransactionValue:
    parts = () if state is S.EMPTY else (("a", 0), ("a", 2), ("b", 1))
    return TransactionValue(7, -1, nxt, 3, 60_000, state, parts, 11, -1 if state is S.EMPTY else 10, tv)


@pytest.mark.parametrize("state", list(S)[:6])
def test_round_trip(state: TransactionState) -> None:
    record = TransactionRecord("tx", _value(state))
    stored = to_storage(record)
    assert stored.type == 6 and RECORD_TYPES[6].name == "transaction"
    assert from_storage(stored) == record


def test_value_v0_when_the_tagged_fields_are_defaults_else_v1() -> None:
    v0 = to_storage(TransactionRecord("tx", _value()))
    v1 = to_storage(TransactionRecord("tx", _value(tv=2, nxt=9)))
    assert v0.value is not None and v0.value[:2] == b"\x00\x00"
    assert v1.value is not None and v1.value[:2] == b"\x00\x01"
    assert decode_exact(TRANSACTION_LOG_VALUE, v1.value)["next_producer_id"] == 9


def test_key_bytes_are_kafkas() -> None:
    assert to_storage(TransactionRecord("tx", None)).key == b"\x00\x00\x00\x02tx"


def test_empty_stores_null_partitions() -> None:
    stored = to_storage(TransactionRecord("tx", _value(S.EMPTY)))
    assert stored.value is not None
    assert decode_exact(TRANSACTION_LOG_VALUE, stored.value)["transaction_partitions"] is None


def test_tombstone_and_render() -> None:
    tomb = to_storage(TransactionRecord("tx", None))
    assert tomb.value is None and from_storage(tomb) == TransactionRecord("tx", None)
    assert render(tomb) == "transaction transactional_id=tx tombstone"
    line = render(to_storage(TransactionRecord("tx", _value())))
    assert "state=Ongoing" in line and "partitions=[a-0,a-2,b-1]" in line and "producer_epoch=3" in line


def test_a_malformed_value_renders_undecodable() -> None:
    stored = to_storage(TransactionRecord("tx", _value()))
    bad = type(stored)(stored.type, stored.key, b"\x00\x00\x01")
    assert "undecodable" in render(bad)


def test_the_replayer_feeds_transaction_records_to_the_coordinator() -> None:
    from kcoord.coordinator.metadata import TopicRegistry
    from kcoord.coordinator.metadata.producer_ids import ProducerIds
    from kcoord.coordinator.persistence import Replayer
    from tests.unit.conftest import Harness
    from tests.unit.transactions.harness import Txn

    h = Harness(loaded=False)
    t = Txn(loaded=False)
    replayer = Replayer(h.mgr, TopicRegistry(h.log), ProducerIds(h.log), t.tc)  # type: ignore[arg-type]
    replayer.apply(to_storage(TransactionRecord("tx", _value())))
    replayer.apply(to_storage(TransactionRecord("gone", _value(S.EMPTY))))
    replayer.apply(to_storage(TransactionRecord("gone", None)))
    assert t.tc.metadata("gone") is None
    md = t.tc.metadata("tx")
    assert md is not None and (md.state, md.producer_epoch, md.partitions) == (
        S.ONGOING,
        3,
        {("a", 0), ("a", 2), ("b", 1)},
    )
    assert "transactions=3" in replayer.summary()
