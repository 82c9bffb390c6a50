"""Transactions in partition logs on real files: markers, the last stable offset, read_committed reads
with their aborted lists, `.txnindex` files, recovery, retention and DeleteRecords, verify."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

import kcoord.partition_log.logs as partition_logs
from kcoord.partition_log import (
    READ_COMMITTED,
    AppendError,
    DuplicateAppend,
    PartitionConfig,
    PartitionLog,
    PartitionLogs,
    ValidatedAppend,
)
from kcoord.partition_log.inspect import dump_partitions, verify_partitions
from kcoord.partition_log.txn_index import AbortedTxn, decode_entries
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

NOW = 1_700_000_000_000
SMALL = PartitionConfig(segment_bytes=300, index_interval_bytes=1)


def batch(
    producer: tuple[int, int, int] = (-1, -1, -1), count: int = 1, transactional: bool = False
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, *producer, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, NOW + i, b"k", b"v%d" % i, [])
    return bytes(builder.build())


class Partition:
    """One partition log `t-0` of a data directory, with helpers that await durability."""

    def __init__(self, logs: PartitionLogs, config: PartitionConfig) -> None:
        self.logs = logs
        self.log: PartitionLog = logs.ensure("t", 0, config)

    async def data(self, producer: tuple[int, int, int], count: int = 1, transactional: bool = True) -> int:
        checked = self.log.validate(batch(producer, count, transactional), NOW)
        assert isinstance(checked, ValidatedAppend), checked
        return (await self.log.append(checked, NOW)).base_offset

    async def marker(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> int:
        future = self.log.append_marker(producer_id, epoch, commit, coordinator_epoch, NOW)
        assert not isinstance(future, AppendError), future
        return (await future).base_offset

    def committed(self, offset: int, max_bytes: int = 1 << 20) -> tuple[list[tuple[int, int]], list[int]]:
        """(aborted list, base offsets of the batches returned) of a READ_COMMITTED read."""
        result = self.log.read(offset, max_bytes, READ_COMMITTED)
        assert result is not None and result.aborted_transactions is not None
        return result.aborted_transactions, base_offsets(result.records)


def base_offsets(records: bytes) -> list[int]:
    offsets, position = [], 0
    while position < len(records):
        one = DefaultRecordBatch(records[position:])
        offsets.append(one.base_offset)
        position += one.size_in_bytes
    return offsets


def run(
    root: Path, scenario: Callable[[Partition], Awaitable[None]], config: PartitionConfig = SMALL
) -> None:
    async def main() -> None:
        logs = await PartitionLogs.open(root, fsync="always", now_ms=lambda: NOW)
        try:
            await scenario(Partition(logs, config))
        finally:
            await logs.close()

    asyncio.run(main())


def test_an_open_transaction_holds_the_last_stable_offset_until_its_commit(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        assert await p.data((-1, -1, -1), 2, transactional=False) == 0
        assert await p.data((5, 0, 0), 2) == 2
        assert await p.data((-1, -1, -1), transactional=False) == 4
        assert (p.log.high_watermark, p.log.last_stable_offset) == (5, 2)
        assert p.committed(0) == ([], [0])  # only what is below the LSO
        assert p.committed(2) == ([], [])  # at the LSO: nothing yet
        assert p.committed(4) == ([], [])
        uncommitted = p.log.read(0, 1 << 20)
        assert uncommitted is not None and base_offsets(uncommitted.records) == [0, 2, 4]
        assert uncommitted.aborted_transactions is None and uncommitted.last_stable_offset == 2
        [row] = p.log.producer_states()
        assert (row.producer_id, row.producer_epoch, row.last_sequence, row.current_txn_start_offset) == (
            5,
            0,
            1,
            2,
        )
        future = p.log.append_marker(5, 0, True, 0, NOW)
        assert not isinstance(future, AppendError)
        assert p.log.last_stable_offset == 2, "a marker not yet durable still holds the LSO"
        assert (await future).base_offset == 5
        assert (p.log.high_watermark, p.log.last_stable_offset) == (6, 6)
        assert p.committed(2) == ([], [2, 4, 5])
        assert p.log.producer_states()[0].current_txn_start_offset == -1

    run(tmp_path, scenario, PartitionConfig())


def test_an_aborted_transaction_is_listed_for_read_committed_reads(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((5, 0, 0), 2)  # 0-1
        await p.data((6, 0, 0))  # 2: producer 6's transaction
        await p.data((5, 0, 2))  # 3
        assert await p.marker(5, 0, commit=False, coordinator_epoch=4) == 4
        assert p.log.last_stable_offset == 2  # producer 6 is still open
        assert p.committed(0) == ([(5, 0)], [0])
        assert await p.marker(6, 0, commit=True) == 5
        assert p.committed(0) == ([(5, 0)], [0, 2, 3, 4, 5])
        assert p.committed(4) == ([(5, 0)], [4, 5])
        assert p.committed(5) == ([], [5])  # the range read starts after the aborted transaction
        assert p.committed(0, max_bytes=1) == ([(5, 0)], [0])
        assert p.committed(2, max_bytes=1) == ([(5, 0)], [2])  # it spans 0-4, so it overlaps [2, 3)
        segment = p.log.segments[-1]
        assert segment.aborted == [AbortedTxn(5, 0, 4, 2)]
        [row] = [r for r in p.log.producer_states() if r.producer_id == 5]
        assert row.coordinator_epoch == 4

    run(tmp_path, scenario, PartitionConfig())


def test_marker_errors_change_nothing(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((5, 1, 0))
        await p.marker(5, 1, commit=False, coordinator_epoch=3)
        await p.data((5, 1, 1))
        end = p.log.log_end_offset
        older = p.log.append_marker(5, 0, True, 3, NOW)
        assert isinstance(older, AppendError) and older.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        fenced = p.log.append_marker(5, 1, True, 2, NOW)
        assert (
            isinstance(fenced, AppendError) and fenced.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
        )
        assert p.log.log_end_offset == end and p.log.last_stable_offset == 2
        plain = p.log.validate(batch((5, 1, 2)), NOW)
        assert isinstance(plain, AppendError) and plain.error_code == ErrorCode.INVALID_TXN_STATE
        control = p.log.validate(bytes(p.log.segments[-1].read(p.log.segments[-1].positions[1], 78)), NOW)
        assert isinstance(control, AppendError) and control.error_code == ErrorCode.INVALID_RECORD

    run(tmp_path, scenario)


def test_an_empty_transaction_writes_a_marker_without_an_index_entry(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((6, 0, 0))  # 0: producer 6 open
        assert await p.marker(5, 0, commit=False) == 1  # producer 5 wrote nothing
        assert p.log.last_stable_offset == 0 and p.log.high_watermark == 2
        assert await p.marker(6, 0, commit=True) == 2
        assert p.log.last_stable_offset == 3
        assert all(not s.aborted for s in p.log.segments)

    run(tmp_path, scenario)


def test_txnindex_files_are_written_with_sealed_segments_and_rebuilt_when_missing_or_corrupt(
    tmp_path: Path,
) -> None:
    async def write(p: Partition) -> None:
        for i in range(6):  # an aborted transaction per segment or so (segment.bytes=300)
            await p.data((5, 0, 2 * i), 2)
            await p.marker(5, 0, commit=i % 2 == 1)

    run(tmp_path, write)
    files = sorted((tmp_path / "t-0").glob("*.txnindex"))
    assert len(files) == len(list((tmp_path / "t-0").glob("*.log"))) - 1, "every sealed segment has one"
    good = {f: f.read_bytes() for f in files}
    for data in good.values():
        assert len(data) % 34 == 0 and all(e.producer_id == 5 for e in decode_entries(data))
    assert verify_partitions(tmp_path, out=lambda _: None) == 0
    with_entries = [f for f in files if good[f]]
    assert len(with_entries) >= 2, "several sealed segments hold an aborted transaction"
    with_entries[0].unlink()
    with_entries[-1].write_bytes(good[with_entries[-1]][:-5])
    problems: list[str] = []
    assert verify_partitions(tmp_path, out=problems.append) == 2, problems
    assert any("missing" in p for p in problems) and any("34-byte" in p for p in problems)

    async def reopen(p: Partition) -> None:
        assert p.log.last_stable_offset == p.log.high_watermark == 18

    run(tmp_path, reopen)
    assert {f: f.read_bytes() for f in files} == good
    assert verify_partitions(tmp_path, out=lambda _: None) == 0


def test_verify_reports_an_index_entry_that_the_log_does_not_support(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        for i in range(4):
            await p.data((5, 0, 2 * i), 2)
            await p.marker(5, 0, commit=False)

    run(tmp_path, write)
    first = sorted((tmp_path / "t-0").glob("*.txnindex"))[0]
    data = bytearray(first.read_bytes())
    data[2:10] = (9).to_bytes(8, "big")  # another producer id
    first.write_bytes(bytes(data))
    problems: list[str] = []
    assert verify_partitions(tmp_path, out=problems.append) == 1
    assert "txnindex" in problems[0]

    async def reopen(p: Partition) -> None:  # the entry fits no marker: the index is derived again
        assert p.log.segments[0].aborted == [AbortedTxn(5, 0, 2, 3)]

    run(tmp_path, reopen)
    assert verify_partitions(tmp_path, out=lambda _: None) == 0


def test_recovery_keeps_an_open_transaction_older_than_producer_expiry(tmp_path: Path) -> None:
    old = NOW - 2 * 86_400_000

    async def write(p: Partition) -> None:
        builder = DefaultRecordBatchBuilder(2, 0, True, 5, 0, 0, batch_size=1 << 30)
        builder.append(0, old, b"k", b"v", [])
        checked = p.log.validate(bytes(builder.build()), old)
        assert isinstance(checked, ValidatedAppend)
        await p.log.append(checked, old)
        idle = DefaultRecordBatchBuilder(2, 0, False, 6, 0, 0, batch_size=1 << 30)
        idle.append(0, old, b"k", b"v", [])
        checked = p.log.validate(bytes(idle.build()), old)
        assert isinstance(checked, ValidatedAppend)
        await p.log.append(checked, old)
        await p.data((-1, -1, -1), transactional=False)

    run(tmp_path, write)

    async def reopen(p: Partition) -> None:
        assert [r.producer_id for r in p.log.producer_states()] == [5]  # 6 expired, 5 never (KAFKA-9144)
        assert p.log.last_stable_offset == 0 and p.log.high_watermark == 3
        assert p.log.has_ongoing_transaction(5) and not p.log.has_ongoing_transaction(6)
        assert await p.marker(5, 0, commit=False) == 3
        assert p.log.last_stable_offset == 4

    run(tmp_path, reopen)


def test_a_torn_tail_inside_a_transaction(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        await p.data((5, 0, 0), 2)  # 0-1
        await p.data((6, 0, 0), transactional=False)  # 2
        await p.marker(5, 0, commit=False)  # 3

    run(tmp_path, write, PartitionConfig())
    segment = next((tmp_path / "t-0").glob("*.log"))
    segment.write_bytes(segment.read_bytes()[:-10])  # the marker is torn

    async def reopen(p: Partition) -> None:
        assert p.log.high_watermark == 3 and p.log.last_stable_offset == 0
        assert p.log.has_ongoing_transaction(5)
        assert p.committed(0) == ([], [])
        assert await p.marker(5, 0, commit=False) == 3
        assert p.committed(0) == ([(5, 0)], [0, 2, 3])

    run(tmp_path, reopen, PartitionConfig())


def test_retention_and_delete_records_stop_at_the_first_unstable_offset(tmp_path: Path) -> None:
    config = PartitionConfig(segment_bytes=300, retention_ms=1000)

    async def scenario(p: Partition) -> None:
        for _ in range(3):
            await p.data((-1, -1, -1), 3, transactional=False)  # 0-8
        first_unstable = await p.data((5, 0, 0))  # 9
        for _ in range(6):
            await p.data((-1, -1, -1), 3, transactional=False)
        assert len(p.log.segments) > 3
        assert await p.log.delete_records(p.log.high_watermark) == first_unstable
        assert p.log.log_start_offset == first_unstable
        assert p.log.expired_start(NOW + 10_000) is None  # every older segment would be expired
        await p.marker(5, 0, commit=True)
        expired = p.log.expired_start(NOW + 10_000)
        assert expired is not None and expired > first_unstable
        assert await p.log.delete_records(p.log.high_watermark) == p.log.high_watermark

    run(tmp_path, scenario, config)


@pytest.fixture
def failing_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Fail the next write with ENOSPC (a transient fault, the file is cut back) while the list is set."""
    fail: list[int] = []
    real = partition_logs._pwrite_all

    def pwrite(fd: int, data: bytes, position: int) -> None:
        if fail:
            fail.pop()
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data, position)

    monkeypatch.setattr(partition_logs, "_pwrite_all", pwrite)
    yield fail


def test_a_failed_marker_write_leaves_the_transaction_open(tmp_path: Path, failing_writes: list[int]) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((5, 0, 0))
        failing_writes.append(1)
        future = p.log.append_marker(5, 0, False, 0, NOW)
        assert not isinstance(future, AppendError)
        with pytest.raises(StorageFault):
            await future
        assert p.log.has_ongoing_transaction(5) and p.log.last_stable_offset == 0
        assert p.log.log_end_offset == 1 and not p.log.segments[-1].aborted
        assert await p.marker(5, 0, commit=False) == 1
        assert p.log.segments[-1].aborted == [AbortedTxn(5, 0, 1, 2)]

    run(tmp_path, scenario)


def test_dump_shows_markers_and_txnindex_entries(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        for i in range(4):
            await p.data((5, 0, 2 * i), 2)
            await p.marker(5, 0, commit=i == 3, coordinator_epoch=7)

    run(tmp_path, write)
    lines: list[str] = []
    dump_partitions(tmp_path, out=lines.append)
    assert any("isTransactional=True isControl=True" in line for line in lines)
    assert any(line.endswith("endTxnMarker=ABORT coordinatorEpoch=7") for line in lines)
    assert any(line.endswith("endTxnMarker=COMMIT coordinatorEpoch=7") for line in lines)
    assert any(
        "version=0 producerId=5 firstOffset=0 lastOffset=2 lastStableOffset=3" in line for line in lines
    )


def test_an_aborted_transaction_spanning_segments_is_found_from_its_first_segment(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((5, 0, 0), 2)  # 0-1, producer 5's transaction starts in the first segment
        sequence = 2
        while len(p.log.segments) < 3:  # plain batches of another producer roll two segments
            await p.data((6, 0, sequence - 2), 3, transactional=False)
            sequence += 3
        await p.data((5, 0, 2))
        marker = await p.marker(5, 0, commit=False)
        assert [s.aborted for s in p.log.segments[:-1]] == [[], []]
        assert p.log.segments[-1].aborted == [AbortedTxn(5, 0, marker, marker + 1)]
        aborted, read = p.committed(0)
        assert aborted == [(5, 0)] and read[0] == 0  # the entry lives two segments later
        assert p.committed(p.log.segments[1].base_offset)[0] == [(5, 0)]

    run(tmp_path, scenario)
    assert verify_partitions(tmp_path, out=lambda _: None) == 0


def test_read_committed_offsets_between_the_lso_and_the_high_watermark_read_nothing(tmp_path: Path) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((5, 0, 0))  # 0
        await p.data((-1, -1, -1), 2, transactional=False)  # 1-2
        result = p.log.read(1, 1 << 20, READ_COMMITTED)
        assert result is not None and result.records == b"" and result.aborted_transactions == []
        assert (result.high_watermark, result.last_stable_offset) == (3, 0)
        assert p.log.read(4, 1 << 20, READ_COMMITTED) is None  # past the high watermark: out of range

    run(tmp_path, scenario)


def test_producer_snapshots_at_segment_boundaries_and_a_corrupt_one_is_skipped(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        await p.data((5, 0, 0), 2)  # producer 5's transaction stays open
        for i in range(8):
            await p.data((6, 0, 3 * i), 3, transactional=False)

    run(tmp_path, write)
    directory = tmp_path / "t-0"
    snapshots = sorted(directory.glob("*.producers"))
    bases = [int(p.stem) for p in sorted(directory.glob("*.log"))]
    assert snapshots and all(int(s.stem) in bases[1:] for s in snapshots), "written at each sealed end"

    async def check(p: Partition) -> None:
        assert p.log.last_stable_offset == 0 and p.log.has_ongoing_transaction(5)
        assert p.log.validate(batch((6, 0, 21), 3), NOW) == DuplicateAppend(23)  # the last five batches kept
        assert p.log.validate(batch((6, 0, 9), 3), NOW) == DuplicateAppend(11)

    run(tmp_path, check)
    newest = snapshots[-1]
    newest.write_bytes(newest.read_bytes()[:-3])  # torn: an older snapshot (or the log) is used instead
    run(tmp_path, check)
    for snapshot in directory.glob("*.producers"):
        snapshot.unlink()
    run(tmp_path, check)  # the whole log is replayed, and a snapshot is written at the last segment
    assert (directory / f"{bases[-1]:020d}.producers").exists()


def test_a_failed_round_that_rolled_a_segment_leaves_the_next_batch_readable(
    tmp_path: Path, failing_writes: list[int]
) -> None:
    async def scenario(p: Partition) -> None:
        await p.data((-1, -1, -1), 2, transactional=False)  # 0-1
        failing_writes.append(1)
        first = p.log.validate(batch(count=2), NOW)
        second = p.log.validate(batch(count=3), NOW)
        assert isinstance(first, ValidatedAppend) and isinstance(second, ValidatedAppend)
        futures = [p.log.append(first, NOW), p.log.append(second, NOW)]  # one round: 2-3, then 4-6 rolls
        assert len(p.log.segments) == 2
        for future in futures:
            with pytest.raises(StorageFault):
                await future
        assert p.log.log_end_offset == 2
        assert await p.data((-1, -1, -1), 1, transactional=False) == 2
        result = p.log.read(2, 1 << 20)
        assert result is not None and base_offsets(result.records) == [2]

    run(tmp_path, scenario, PartitionConfig(segment_bytes=250))

    async def reopen(p: Partition) -> None:
        assert p.log.high_watermark == 3
        result = p.log.read(2, 1 << 20)
        assert result is not None and base_offsets(result.records) == [2]

    run(tmp_path, reopen, PartitionConfig(segment_bytes=250))


def test_recovery_drops_an_empty_segment_file_before_the_last(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        for _ in range(6):
            await p.data((-1, -1, -1), 2, transactional=False)

    run(tmp_path, write)
    paths = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(paths) >= 2 and int(paths[1].stem) > 1
    stray = paths[0].with_name(f"{int(paths[1].stem) - 1:020d}.log")
    stray.write_bytes(b"")  # left by a roll whose write failed, between two real segments

    async def reopen(p: Partition) -> None:
        assert p.log.high_watermark == 12
        assert [s.base_offset for s in p.log.segments] == [int(path.stem) for path in paths]

    run(tmp_path, reopen)
    assert not stray.exists()


def test_verify_after_delete_records_checks_entries_exactly_from_the_snapshot(tmp_path: Path) -> None:
    async def write(p: Partition) -> None:
        for i in range(6):
            await p.data((5, 0, 2 * i), 2)
            await p.marker(5, 0, commit=False)
        await p.log.delete_records(p.log.segments[2].base_offset)

    run(tmp_path, write)
    directory = tmp_path / "t-0"
    assert int(sorted(directory.glob("*.log"))[0].stem) > 0, "the first segments were deleted"
    assert verify_partitions(tmp_path, out=lambda _: None) == 0
    target = next(f for f in sorted(directory.glob("*.txnindex")) if f.stat().st_size)
    data = bytearray(target.read_bytes())
    data[26:34] = (10**6).to_bytes(8, "big")  # a wrong last stable offset, still a well-formed entry
    target.write_bytes(bytes(data))
    problems: list[str] = []
    assert verify_partitions(tmp_path, out=problems.append) == 1 and "not the aborted" in problems[0]
