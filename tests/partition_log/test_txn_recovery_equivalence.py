"""Property: after any interleaving of transactional and plain batches, COMMIT/ABORT markers (refused
ones included), DeleteRecords and failed writes, a partition log reopened from its files has the state
the live log had: the producers (epochs, batches, coordinator epochs, open transactions), the first
unstable and last stable offsets, every segment's aborted-transaction index (on disk for sealed
segments), and what every read at every offset answers under both isolation levels."""

from __future__ import annotations

import asyncio
import errno
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

import kcoord.partition_log.log as partition_log
import kcoord.partition_log.logs as partition_logs
from kcoord.partition_log import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    AppendError,
    PartitionConfig,
    PartitionLog,
    PartitionLogs,
    ValidatedAppend,
)
from kcoord.partition_log.inspect import verify_partitions
from kcoord.protocol.record_batch import read_header
from kcoord.storage.faults import StorageFault

NOW = 1_700_000_000_000
CONFIG = PartitionConfig(segment_bytes=400, index_interval_bytes=1)
PRODUCERS = st.sampled_from([1, 2])
DATA = st.tuples(st.just("data"), PRODUCERS, st.booleans(), st.integers(1, 3))
MARKER = st.tuples(st.just("marker"), PRODUCERS, st.booleans(), st.integers(0, 2))
OPS = st.lists(
    st.one_of(  # data and markers most of the time, so that transactions open and end
        DATA,
        DATA,
        DATA,
        MARKER,
        MARKER,
        st.tuples(st.just("bump"), PRODUCERS),
        st.tuples(st.just("plain"), st.integers(1, 2)),
        st.tuples(st.just("burst"), st.integers(2, 4)),  # plain batches written in one round
        st.tuples(st.just("fail")),
        st.tuples(st.just("delete")),  # DeleteRecords up to the high watermark (bounded by the LSO)
    ),
    max_size=40,
)


def _batch(producer_id: int, epoch: int, sequence: int, count: int, transactional: bool) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, producer_id, epoch, sequence, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, NOW + i, None, b"v%d" % i, [])
    return bytes(builder.build())


class Driver:
    def __init__(self, plog: PartitionLog, fail: list[int]) -> None:
        self.plog = plog
        self.fail = fail
        self.epochs = {1: 0, 2: 0}

    def _next_sequence(self, producer_id: int) -> int:
        entry = self.plog.producers.current(producer_id)
        if entry is None or entry.epoch != self.epochs[producer_id]:
            return 0
        return entry.last_sequence + 1

    async def run(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "fail":
            self.fail[:] = [1]  # the next write fails
        elif kind == "delete":
            start = await self.plog.delete_records(self.plog.high_watermark)
            assert start == self.plog.log_start_offset == self.plog.last_stable_offset
        elif kind == "bump":
            self.epochs[op[1]] += 1
        elif kind == "plain":
            await self._append(_batch(-1, -1, -1, op[1], False))
        elif kind == "burst":
            checked = [self.plog.validate(_batch(-1, -1, -1, 2, False), NOW) for _ in range(op[1])]
            futures = [self.plog.append(c, NOW) for c in checked if isinstance(c, ValidatedAppend)]
            for future in futures:
                await self._settle(future)
        elif kind == "data":
            _, producer_id, transactional, count = op
            data = _batch(
                producer_id, self.epochs[producer_id], self._next_sequence(producer_id), count, transactional
            )
            await self._append(data)
        else:
            _, producer_id, commit, coordinator_epoch = op
            end = self.plog.log_end_offset
            future = self.plog.append_marker(
                producer_id, self.epochs[producer_id], commit, coordinator_epoch, NOW
            )
            if isinstance(future, AppendError):
                assert self.plog.log_end_offset == end  # a refused marker changes nothing
                return
            await self._settle(future)

    async def _append(self, data: bytes) -> None:
        checked = self.plog.validate(data, NOW)
        if isinstance(checked, ValidatedAppend):
            await self._settle(self.plog.append(checked, NOW))

    async def _settle(self, future: asyncio.Future[Any]) -> None:
        try:
            await future
        except StorageFault:
            assert not self.fail


def _state(plog: PartitionLog) -> dict[str, Any]:
    return {
        "producers": dict(plog.producers.durable),
        "ongoing": dict(plog.producers.ongoing),
        "first_unstable": plog.producers.first_unstable_offset,
        "lso": plog.last_stable_offset,
        "hw": plog.high_watermark,
        "aborted": {s.base_offset: list(s.aborted) for s in plog.segments if not s.empty},
        "rows": plog.producer_states(),
        "reads": [
            plog.read(offset, 1 << 20, isolation)
            for offset in range(plog.log_start_offset, plog.high_watermark + 1)
            for isolation in (READ_UNCOMMITTED, READ_COMMITTED)
        ],
    }


async def _scenario(root: Path, ops: list[tuple[Any, ...]]) -> None:
    fail: list[int] = []
    real = partition_logs._pwrite_all

    def pwrite(fd: int, data: bytes, position: int) -> None:
        if fail:
            fail.pop()
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data, position)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(partition_logs, "_pwrite_all", pwrite)
        logs = await PartitionLogs.open(root, fsync="always", now_ms=lambda: NOW)
        plog = logs.ensure("t", 0, CONFIG)
        driver = Driver(plog, fail)
        for op in ops:
            await driver.run(op)
        live = _state(plog)
        for offset in range(plog.log_start_offset, plog.high_watermark):  # every offset is readable
            result = plog.read(offset, 1, READ_UNCOMMITTED)
            assert result is not None and result.records, offset
            assert (
                read_header(result.records).base_offset <= offset <= read_header(result.records).last_offset
            )
        await logs.close()
    for segment in plog.segments:
        if segment.index_path.exists():  # sealed: its .txnindex is on disk
            assert segment.txn_index_matches(), segment.path
    assert verify_partitions(root, out=lambda _: None) == 0
    for _ in range(2):  # from the live log's snapshots, then from the one the first recovery wrote
        reopened = await PartitionLogs.open(root, fsync="always", now_ms=lambda: NOW)
        recovered = _state(reopened.ensure("t", 0, CONFIG))
        await reopened.close()
        assert recovered == live
        assert recovered["reads"][-1] is not None  # the reads compared are real ones


# A failed roll, then DeleteRecords deleting every segment that producer 1's batches were in: recovery
# must still know producer 1 (from the snapshot at the new log start).
FAILED_ROLL_THEN_DELETE: list[tuple[Any, ...]] = [
    ("data", 1, False, 1),
    ("data", 1, False, 1),
    ("burst", 2),
    ("data", 1, False, 1),
    ("fail",),
    ("data", 1, False, 1),
    ("delete",),
]


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
@example(ops=FAILED_ROLL_THEN_DELETE)
def test_recovered_partition_state_equals_the_live_state(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_scenario(Path(directory), ops))


def test_a_log_start_move_without_the_snapshot_at_the_new_start_keeps_the_segments(tmp_path: Path) -> None:
    """The snapshot cannot be written: DeleteRecords still moves the log start, but the segments below it
    stay, so recovery replays them and still knows producer 1."""

    def refuse(directory: Path, offset: int, producers: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(partition_log, "write_snapshot", refuse)
        asyncio.run(_scenario(tmp_path, FAILED_ROLL_THEN_DELETE))
    assert (tmp_path / "t-0" / f"{0:020d}.log").exists()
