"""The transaction inspector's views, its control answers in HTTP, and the transaction metrics: on the
unit-test transaction coordinator (fake clock, in-memory log, held markers) and real partition logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcoord.coordinator.transactions import ControlResult
from kcoord.partition_log import PartitionConfig, PartitionLog, PartitionLogs, ValidatedAppend
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.txn_metrics import TransactionCollector, lso_lags
from kcoord.wiring.txn_views import all_transactions, control_status, parse_states, transaction_summary
from tests.partition_log.test_transactions import NOW, batch
from tests.unit.transactions.harness import Txn


def _samples(collector: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in collector.collect()
        for s in family.samples
    }


def _collector(
    t: Txn, logs: list[PartitionLog] | None = None, max_partitions: int = 10
) -> TransactionCollector:
    return TransactionCollector(t.tc, lambda: logs or [], t.clock.now_ms, max_partitions)


def test_views_show_the_open_transaction_its_age_and_the_transition_in_flight() -> None:
    t = Txn()
    t.ready("idle")
    pid, epoch = t.ongoing("open", ("b", 1), ("a", 0), ("a", 2))
    t.clock.advance(1500)
    open_ = transaction_summary(t.tc, t.md("open"), t.clock.now_ms())
    assert (open_["state"], open_["pending_state"], open_["producer_id"], open_["producer_epoch"]) == (
        "Ongoing", None, pid, epoch,
    )  # fmt: skip
    assert open_["partitions"] == {"a": [0, 2], "b": [1]} and open_["age_ms"] == 1500
    assert open_["transaction_state_partition"] == t.tc.partition_for("open")
    idle = transaction_summary(t.tc, t.md("idle"), t.clock.now_ms())
    assert (idle["transaction_start_time_ms"], idle["age_ms"], idle["partitions"]) == (None, None, {})

    t.markers.hold = True  # the commit is decided, its markers not written: PrepareCommit -> CompleteCommit
    t.end(pid, epoch, tid="open")
    deciding = transaction_summary(t.tc, t.md("open"), t.clock.now_ms())
    assert (deciding["state"], deciding["pending_state"], deciding["age_ms"]) == (
        "PrepareCommit", "CompleteCommit", 1500,
    )  # fmt: skip
    assert [md.transactional_id for md in all_transactions(t.tc)] == ["idle", "open"]
    states = parse_states(["PrepareCommit"])
    assert not isinstance(states, str) and [md.transactional_id for md in all_transactions(t.tc, states)] == [
        "open"
    ]
    assert isinstance(parse_states(["Dead"]), str) and isinstance(parse_states(["ongoing"]), str)


def test_control_answers_map_to_http_statuses() -> None:
    t = Txn()
    t.ready("idle")
    pid, epoch = t.ongoing("open")
    assert control_status(t.abort("nope").value) == 404
    assert control_status(t.abort("idle").value) == 409  # INVALID_TXN_STATE: nothing open
    assert control_status(t.expire("open").value) == 409  # an open transaction never expires
    t.markers.hold = True
    t.end(pid, epoch, tid="open")
    busy = t.abort("open").value
    assert busy.error is ErrorCode.CONCURRENT_TRANSACTIONS and control_status(busy) == 409
    assert control_status(t.expire("idle").value) == 200
    assert control_status(ControlResult(ErrorCode.NOT_COORDINATOR)) == 503
    assert control_status(ControlResult(ErrorCode.INVALID_PRODUCER_EPOCH)) == 500


def test_metrics_count_ids_by_state_open_transactions_their_age_and_completions() -> None:
    t = Txn()
    t.ready("idle")
    pid, epoch = t.ongoing("first")
    t.clock.advance(2000)
    t.ongoing("second")
    m = _samples(_collector(t))
    assert m[("kcoord_transactions_open", ())] == 2
    assert m[("kcoord_transaction_oldest_open_age_seconds", ())] == 2.0
    assert m[("kcoord_transactional_ids", (("state", "Ongoing"),))] == 2
    assert m[("kcoord_transactional_ids", (("state", "Empty"),))] == 1
    assert m[("kcoord_transactional_ids", (("state", "PrepareAbort"),))] == 0  # every live state has a series
    assert ("kcoord_transactional_ids", (("state", "Dead"),)) not in m

    t.end(pid, epoch, tid="first")  # markers written at once: CompleteCommit
    t.abort("second")
    m = _samples(_collector(t))
    assert m[("kcoord_transactions_open", ())] == 0
    assert m[("kcoord_transaction_oldest_open_age_seconds", ())] == 0
    assert m[("kcoord_transactions_completed_total", (("result", "commit"),))] == 1
    assert m[("kcoord_transactions_completed_total", (("result", "abort"),))] == 1


async def _append(log: PartitionLog, producer: tuple[int, int, int], count: int, transactional: bool) -> None:
    checked = log.validate(batch(producer, count, transactional), NOW)
    assert isinstance(checked, ValidatedAppend), checked
    await log.append(checked, NOW)


async def test_lso_lag_covers_transactional_partitions_largest_first_and_capped(tmp_path: Path) -> None:
    logs = await PartitionLogs.open(tmp_path, fsync="always", now_ms=lambda: NOW)
    try:
        config = PartitionConfig()
        open_, done, idempotent, plain = (logs.ensure(name, 0, config) for name in ("o", "d", "i", "p"))
        await _append(open_, (-1, -1, -1), 2, False)
        await _append(open_, (7, 0, 0), 3, True)  # open at offset 2: 3 records past the LSO
        await _append(done, (8, 0, 0), 1, True)
        marker = done.append_marker(8, 0, True, 0, NOW)
        assert not isinstance(marker, Exception)
        await marker
        await _append(idempotent, (9, 0, 0), 1, False)
        await _append(plain, (-1, -1, -1), 1, False)
        assert lso_lags(logs.partitions()) == [("o", 0, 3), ("d", 0, 0)]

        t = Txn()
        m = _samples(_collector(t, logs.partitions()))
        assert m[("kcoord_partition_lso_lag_offsets", (("partition", "0"), ("topic", "o")))] == 3
        assert m[("kcoord_partition_lso_lag_offsets", (("partition", "0"), ("topic", "d")))] == 0
        assert m[("kcoord_metrics_partitions_omitted", ())] == 0
        one = _samples(_collector(t, logs.partitions(), max_partitions=1))
        assert [k for k in one if k[0] == "kcoord_partition_lso_lag_offsets"] == [
            ("kcoord_partition_lso_lag_offsets", (("partition", "0"), ("topic", "o")))
        ]
        assert one[("kcoord_metrics_partitions_omitted", ())] == 1
    finally:
        await logs.close()
