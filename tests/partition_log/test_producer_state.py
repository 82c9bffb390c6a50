"""Producer-state rules row by row (Kafka's ProducerAppendInfo / ProducerStateManager), on the pure
`ProducerStates`: every batch here is made durable at once, as recovery applies them."""

from __future__ import annotations

import pytest

from kcoord.partition_log.producers import ProducerEntry, ProducerStates, replay_batch
from kcoord.partition_log.txn_index import AbortedTxn, collect_aborted, decode_entries, encode_entries
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import (
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    end_txn_marker_batch,
    read_end_txn_marker,
    read_header,
)

NOW = 1_700_000_000_000


def header(
    producer_id: int, epoch: int, sequence: int, offset: int, count: int = 1, transactional: bool = False
) -> BatchHeader:
    attributes = TRANSACTIONAL_BIT if transactional else 0
    return BatchHeader(
        offset, 100, 0, 2, 0, attributes, count - 1, NOW, NOW, producer_id, epoch, sequence, count
    )


class Log:
    """Producer states fed batches at consecutive offsets, the way the partition log feeds them."""

    def __init__(self) -> None:
        self.states = ProducerStates()
        self.next_offset = 0
        self.aborted: list[AbortedTxn] = []

    def data(
        self, producer_id: int, epoch: int, sequence: int, count: int = 1, transactional: bool = False
    ) -> ErrorCode:
        h = header(producer_id, epoch, sequence, self.next_offset, count, transactional)
        error, duplicate = self.states.check(h)
        if error is ErrorCode.NONE and duplicate < 0:
            replay_batch(self.states, h, lambda: b"")
            self.next_offset += count
        return error

    def marker(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> ErrorCode:
        error = self.states.check_marker(producer_id, epoch, coordinator_epoch)
        if error is ErrorCode.NONE:
            data = end_txn_marker_batch(producer_id, epoch, commit, coordinator_epoch, NOW)
            h = read_header(data)._replace(base_offset=self.next_offset)
            found = replay_batch(self.states, h, lambda: data)
            if found is not None:
                self.aborted.append(found)
            self.next_offset += 1
        return error

    def open_txn(self, producer_id: int) -> int:
        entry = self.states.current(producer_id)
        assert entry is not None
        return entry.current_txn_first_offset


@pytest.mark.parametrize(
    ("known", "epoch", "sequence", "expected"),
    [
        (False, 0, 0, ErrorCode.NONE),
        (False, 3, 17, ErrorCode.NONE),  # no state (expired, removed by retention): any sequence (KIP-360)
        (True, 5, 2, ErrorCode.NONE),  # continues the last sequence (0-1)
        (True, 5, 3, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a gap
        (True, 5, 0, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # not the last five batches, not next
        (True, 4, 2, ErrorCode.INVALID_PRODUCER_EPOCH),  # an older epoch
        (True, 6, 0, ErrorCode.NONE),  # a new epoch starts over at 0
        (True, 6, 2, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a new epoch must start at 0
    ],
)
def test_epoch_and_sequence_rules(known: bool, epoch: int, sequence: int, expected: ErrorCode) -> None:
    log = Log()
    if known:
        assert log.data(7, 5, 0, count=2) is ErrorCode.NONE  # sequences 0-1 at epoch 5
        assert log.data(9, 0, 0, count=1) is ErrorCode.NONE
    assert log.data(7, epoch, sequence) is expected


def test_a_retry_of_one_of_the_last_five_batches_is_a_duplicate() -> None:
    log = Log()
    for i in range(6):
        assert log.data(7, 0, i) is ErrorCode.NONE
    assert log.states.check(header(7, 0, 5, 99)) == (ErrorCode.NONE, 5)
    assert log.states.check(header(7, 0, 1, 99)) == (ErrorCode.NONE, 1)
    assert log.states.check(header(7, 0, 0, 99))[0] is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # dropped


def test_a_transactional_batch_opens_the_transaction_once() -> None:
    log = Log()
    assert log.data(7, 0, 0, count=3, transactional=True) is ErrorCode.NONE
    assert log.data(7, 0, 3, transactional=True) is ErrorCode.NONE
    assert log.open_txn(7) == 0 and log.states.first_unstable_offset == 0
    assert log.states.ongoing == {0: 7}


def test_a_plain_batch_during_an_open_transaction_is_invalid_txn_state() -> None:
    log = Log()
    assert log.data(7, 0, 0, transactional=True) is ErrorCode.NONE
    assert log.data(7, 0, 1) is ErrorCode.INVALID_TXN_STATE
    before = log.states.current(7)
    assert log.data(7, 0, 1, transactional=True) is ErrorCode.NONE  # nothing changed by the refusal
    assert before is not None and before.current_txn_first_offset == 0
    log.marker(7, 0, commit=True)
    assert log.data(7, 0, 2) is ErrorCode.NONE  # after the marker plain batches are fine again


def test_epoch_and_sequence_checks_come_before_the_transaction_check() -> None:
    log = Log()
    assert log.data(7, 1, 0, transactional=True) is ErrorCode.NONE
    assert log.data(7, 0, 1) is ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.data(7, 1, 5) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.parametrize(
    ("marker_epoch", "coordinator_epoch", "expected"),
    [
        (2, 3, ErrorCode.NONE),
        (3, 3, ErrorCode.NONE),  # a bumped epoch (transactions V2 write markers with it)
        (1, 3, ErrorCode.INVALID_PRODUCER_EPOCH),
        (2, 2, ErrorCode.TRANSACTION_COORDINATOR_FENCED),  # lower than the last marker's (3)
        (1, 2, ErrorCode.INVALID_PRODUCER_EPOCH),  # the epoch is checked first
    ],
)
def test_marker_checks(marker_epoch: int, coordinator_epoch: int, expected: ErrorCode) -> None:
    log = Log()
    assert log.data(7, 2, 0, transactional=True) is ErrorCode.NONE
    assert log.marker(7, 2, commit=True, coordinator_epoch=3) is ErrorCode.NONE
    assert log.data(7, 2, 1, transactional=True) is ErrorCode.NONE
    assert log.marker(7, marker_epoch, commit=False, coordinator_epoch=coordinator_epoch) is expected
    assert (log.open_txn(7) == -1) is (expected is ErrorCode.NONE)


def test_a_marker_keeps_the_sequence_unless_the_epoch_changes() -> None:
    log = Log()
    assert log.data(7, 0, 0, count=2, transactional=True) is ErrorCode.NONE
    log.marker(7, 0, commit=True)
    assert log.data(7, 0, 0) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # same epoch: continue at 2
    assert log.data(7, 0, 2) is ErrorCode.NONE
    log.marker(7, 1, commit=False)  # an epoch bump by the marker clears the batches
    entry = log.states.current(7)
    assert entry == ProducerEntry(1, (), 0, NOW, -1)
    assert log.data(7, 1, 0) is ErrorCode.NONE


def test_an_aborted_transaction_with_data_gets_an_index_entry_a_commit_or_empty_one_none() -> None:
    log = Log()
    log.data(7, 0, 0, count=2, transactional=True)  # 0-1
    log.marker(7, 0, commit=False)  # 2
    log.marker(7, 0, commit=False)  # 3: an empty transaction
    log.data(8, 0, 0, transactional=True)  # 4
    log.marker(8, 0, commit=True)  # 5
    assert log.aborted == [AbortedTxn(7, 0, 2, 3)]
    assert log.states.first_unstable_offset is None and not log.states.ongoing


def test_the_index_entry_records_the_next_open_transaction_of_another_producer() -> None:
    log = Log()
    log.data(1, 0, 0, transactional=True)  # 0
    log.data(2, 0, 0, transactional=True)  # 1
    log.data(3, 0, 0, transactional=True)  # 2
    log.marker(2, 0, commit=False)  # 3: producer 1's transaction (0) is still open
    assert log.states.first_unstable_offset == 0
    log.marker(1, 0, commit=False)  # 4: producer 3's (2) is open
    assert log.states.first_unstable_offset == 2
    log.marker(3, 0, commit=False)  # 5: none open
    assert log.aborted == [AbortedTxn(2, 1, 3, 0), AbortedTxn(1, 0, 4, 2), AbortedTxn(3, 2, 5, 6)]
    assert log.states.first_unstable_offset is None


def test_an_empty_transaction_does_not_move_the_first_unstable_offset() -> None:
    log = Log()
    log.data(1, 0, 0, transactional=True)  # 0
    log.marker(2, 0, commit=True)  # 1: producer 2 had nothing open
    assert log.states.first_unstable_offset == 0 and log.open_txn(1) == 0


def test_expiry_forgets_idle_producers_but_never_one_with_an_open_transaction() -> None:
    log = Log()
    log.data(1, 0, 0)
    log.data(2, 0, 0, transactional=True)
    log.states.remove_expired(NOW + 86_400_000, 86_400_000)
    assert set(log.states.durable) == {2}
    rows = log.states.rows()
    assert [(r.producer_id, r.producer_epoch, r.last_sequence, r.current_txn_start_offset) for r in rows] == [
        (2, 0, 0, 1)
    ]


def test_txn_index_entries_round_trip_in_kafkas_34_byte_format() -> None:
    entries = [AbortedTxn(7, 0, 2, 3), AbortedTxn(-5, 1 << 40, (1 << 40) + 9, 12)]
    data = encode_entries(entries)
    assert len(data) == 68 and data[:2] == b"\x00\x00" and data[2:10] == (7).to_bytes(8, "big")
    assert decode_entries(data) == entries
    with pytest.raises(ValueError, match="whole number"):
        decode_entries(data[:-1])
    with pytest.raises(ValueError, match="version"):
        decode_entries(b"\x00\x01" + data[2:34])


def test_collect_aborted_stops_at_an_entry_whose_last_stable_offset_passes_the_bound() -> None:
    first = [AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 8, 9)]
    second = [AbortedTxn(3, 9, 12, 13)]
    assert collect_aborted([first, second], 4, 9) == [(1, 0), (2, 3)]  # stops at the second entry
    assert collect_aborted([first, second], 6, 20) == [(2, 3), (3, 9)]
    assert collect_aborted([first, second], 13, 20) == []


def test_marker_batches_are_kafkas_control_batches() -> None:
    data = end_txn_marker_batch(7, 3, False, 11, NOW)
    h = read_header(data)
    assert len(data) == 78  # RECORD_BATCH_OVERHEAD + EndTransactionMarker's record
    assert h.attributes == TRANSACTIONAL_BIT | CONTROL_BIT and h.base_sequence == -1 and h.records_count == 1
    assert (h.producer_id, h.producer_epoch, h.base_timestamp, h.max_timestamp) == (7, 3, NOW, NOW)
    marker = read_end_txn_marker(data)
    assert marker is not None and (marker.commit, marker.coordinator_epoch) == (False, 11)
