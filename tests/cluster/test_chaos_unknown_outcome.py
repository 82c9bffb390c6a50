"""The duplicates the chaos run found (issue 35 item 8): a `kcoord_flush` call that PostgreSQL committed
but whose answer was lost (the connection closed in the middle of the call) was answered as refused,
so the producer sent the batch again, under a new epoch after librdkafka's epoch bump, and it was
appended twice. Now such a call is an unknown outcome (kcoord/cluster/write_outcome.py): its batches
are answered only once the partition is reloaded at a fenced epoch and the table tells, so a committed
batch is acknowledged at its offset and a batch never written is refused (the retry appended once).
When another node took the lease, the table is read back once its epoch fenced the call
(kcoord/cluster/doubt.py): answering REQUEST_TIMED_OUT there duplicated a stored batch in the stop 43
chaos run, librdkafka renumbering it under a bumped epoch.

Deterministic, on a real PostgreSQL: a proxy (commit_drop_proxy.py) drops the pool's connection right
after the call committed, or right before it reaches PostgreSQL. The classification is checked on
errors a real server and a real broken connection raise."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.partition_store import (
    PartitionFenced,
    PartitionWriteFailed,
    PartitionWriteUnknown,
    PgPartitionLog,
)
from kcoord.cluster.partitions import ClusterPartitions
from kcoord.cluster.write_outcome import outcome_unknown
from kcoord.partition_log import AppendResult, DuplicateAppend, PartitionConfig, ValidatedAppend
from kcoord.partition_log.results import OutcomeUnknown
from tests.cluster.commit_drop_proxy import CommitDropProxy
from tests.cluster.helpers import init
from tests.postgres import PgServer

NOW = time.time_ns() // 1_000_000
CONFIG = PartitionConfig()
KEY = ("t", 0)
PRODUCER = 4242


def batch(sequence: int, count: int = 3, epoch: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, PRODUCER, epoch, sequence, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, NOW + i, b"k", b"v%d" % (sequence + i), [])
    return bytes(builder.build())


@pytest.fixture
async def proxy(pg_server: PgServer) -> AsyncIterator[CommitDropProxy]:
    made = CommitDropProxy(pg_server.port)
    await made.start()
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def pool(cluster_dsn: str, proxy: CommitDropProxy) -> AsyncIterator[Any]:
    """The node's pool, through the proxy (unencrypted, so the proxy can read the calls)."""
    await init(cluster_dsn, 4)
    made = await asyncpg.create_pool(
        proxy.dsn(cluster_dsn.rsplit("/", 1)[1]), ssl=False, min_size=1, max_size=4
    )
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def partitions(pool: Any, tmp_path: Path) -> AsyncIterator[ClusterPartitions]:
    made = ClusterPartitions(pool, PartitionLeases(pool, 1, 60_000), tmp_path, lambda _: CONFIG, lambda: NOW)
    try:
        yield made
    finally:
        await made.close()


def append(plog: PgPartitionLog, records: bytes) -> asyncio.Future[AppendResult] | int:
    """The append's future, or the offset a duplicate is answered with."""
    checked = plog.validate(records, NOW)
    if isinstance(checked, DuplicateAppend):
        return checked.base_offset
    assert isinstance(checked, ValidatedAppend), checked
    return plog.append(checked, NOW)


async def offset_of(plog: PgPartitionLog, records: bytes) -> int:
    made = append(plog, records)
    return made if isinstance(made, int) else (await made).base_offset


async def failed_with_a_call_in_doubt(
    partitions: ClusterPartitions, proxy: CommitDropProxy, *, after_commit: bool
) -> tuple[PgPartitionLog, asyncio.Future[AppendResult]]:
    """A led partition with one batch (offsets 0-2) durable, then the batch at 3-5 whose call's
    connection the proxy drops: the log has failed and the batch is not answered yet."""
    plog = await partitions.lead(KEY)
    assert plog is not None
    assert await offset_of(plog, batch(0)) == 0
    proxy.arm(after_commit=after_commit)
    doubtful = append(plog, batch(3))
    assert isinstance(doubtful, asyncio.Future)
    await asyncio.wait_for(proxy.dropped.wait(), 30)
    for _ in range(200):  # bounded: the writer settles the call once asyncpg sees the closed connection
        if plog.failure is not None:
            break
        await asyncio.sleep(0.01)
    assert isinstance(plog.failure, PartitionWriteUnknown), plog.failure
    assert partitions.get(*KEY) is None  # nothing more is taken until the reload
    assert not doubtful.done()  # neither acknowledged nor refused while the outcome is unknown
    return plog, doubtful


async def stored(pool: Any) -> list[tuple[int, int, int]]:
    rows = await pool.fetch(
        "SELECT base_offset, last_offset, base_sequence FROM kcoord_partition_batch ORDER BY 1"
    )
    return [(int(r[0]), int(r[1]), int(r[2])) for r in rows]


async def test_a_committed_call_whose_answer_was_lost_is_acknowledged_after_the_reload(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    _, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    reloaded = await partitions.reload(KEY)
    assert reloaded is not None and reloaded.log_end_offset == 6  # the call had committed
    assert (await asyncio.wait_for(doubtful, 10)).base_offset == 3  # acknowledged where it is
    assert append(reloaded, batch(3)) == 3  # a retry anyway: a duplicate, answered with its offset
    assert await offset_of(reloaded, batch(6)) == 6
    assert await stored(pool) == [(0, 2, 0), (3, 5, 3), (6, 8, 6)]  # each batch once


async def test_a_call_that_never_reached_postgresql_is_refused_after_the_reload(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    _, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=False)
    reloaded = await partitions.reload(KEY)
    assert reloaded is not None and reloaded.log_end_offset == 3  # nothing of the call was written
    with pytest.raises(PartitionWriteFailed) as refused:
        await asyncio.wait_for(doubtful, 10)
    assert not isinstance(refused.value, OutcomeUnknown)  # known: not written (KAFKA_STORAGE_ERROR)
    assert await offset_of(reloaded, batch(3)) == 3  # the client's retry, with the same sequence
    assert await stored(pool) == [(0, 2, 0), (3, 5, 3)]


async def test_a_call_in_doubt_is_resolved_when_this_node_takes_its_expired_lease_again(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """PostgreSQL restarted: the lease ran out meanwhile and the node acquires it again (one epoch up,
    so nobody else held it): the stored log end is still the verdict."""
    _, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    await pool.execute(  # the lease runs out
        "UPDATE kcoord_partition_lease SET expires_at = '-infinity' WHERE topic = $1 AND partition = $2", *KEY
    )
    again = await partitions.lead(KEY)
    assert again is not None and again.log_end_offset == 6
    assert (await asyncio.wait_for(doubtful, 10)).base_offset == 3


async def _another_node_leads(
    partitions: ClusterPartitions, pool: Any, plog: PgPartitionLog
) -> PartitionLeases:
    """This node's lease runs out, a second node on the same database takes it (one epoch up) and keeps
    it, and this node's next renewal finds it lost."""
    await _lease_runs_out(pool)
    other = PartitionLeases(pool, 2, 60_000)
    assert await other.acquire(KEY) == plog.epoch + 1
    assert KEY in await partitions.renew()
    return other


async def _lease_runs_out(pool: Any) -> None:
    await pool.execute(
        "UPDATE kcoord_partition_lease SET expires_at = '-infinity' WHERE topic = $1 AND partition = $2", *KEY
    )


async def test_a_committed_call_in_doubt_is_acknowledged_when_another_node_took_the_lease(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """Another node's acquire fenced the call (it waits for the flush's lock on the lease row), so the
    table is the verdict: the batch found at its offset with its producer id, epoch and sequence is
    acknowledged there. Answered unknown instead, librdkafka's next epoch bump sent it again under a
    new epoch: the duplicate of the stop 43 chaos run (kcoord/cluster/doubt.py)."""
    plog, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    await _another_node_leads(partitions, pool, plog)
    assert (await asyncio.wait_for(doubtful, 10)).base_offset == 3
    assert plog.unresolved == []
    assert await stored(pool) == [(0, 2, 0), (3, 5, 3)]


async def test_a_call_in_doubt_that_never_committed_is_refused_not_leader_when_another_node_leads(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """Not in the table once another epoch fenced the call: never written, and answered as the fenced
    write it is (NOT_LEADER_OR_FOLLOWER: not persisted, the client retries with its sequence)."""
    plog, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=False)
    await _another_node_leads(partitions, pool, plog)
    with pytest.raises(PartitionFenced):
        await asyncio.wait_for(doubtful, 10)
    assert await stored(pool) == [(0, 2, 0)]


async def test_another_batch_at_the_offsets_of_a_call_in_doubt_is_not_taken_for_it(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy, tmp_path: Path
) -> None:
    """The next leader stored another producer's batch at offset 3 (the call had not committed): the
    call in doubt is refused, not acknowledged with the other batch's offset."""
    _, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=False)
    await _lease_runs_out(pool)
    other = ClusterPartitions(pool, PartitionLeases(pool, 2, 60_000), tmp_path / "2", lambda _: CONFIG,
                              lambda: NOW)  # fmt: skip
    try:
        theirs = await other.lead(KEY)
        assert theirs is not None and theirs.log_end_offset == 3
        builder = DefaultRecordBatchBuilder(2, 0, False, PRODUCER + 1, 0, 0, batch_size=1 << 30)
        for i in range(3):
            builder.append(i, NOW + i, b"k", b"theirs", [])
        assert await offset_of(theirs, bytes(builder.build())) == 3
        assert KEY in await partitions.renew()
        with pytest.raises(PartitionFenced):
            await asyncio.wait_for(doubtful, 10)
    finally:
        await other.close()


async def test_a_call_in_doubt_is_answered_as_unknown_while_the_lease_is_not_fenced_by_then(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """Nobody fences the call before the bound (`partition_store.RESOLVE_WITHIN_S`, shortened here):
    Produce answers REQUEST_TIMED_OUT (possibly persisted), as Kafka does when an acks=all wait expires."""
    plog, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    partitions.leases.forget(KEY)  # this node lets go, the lease row stays at the call's epoch
    partitions._resolve(KEY, None, None)  # as the lease clock running out does (`_doubt_expired`)
    await asyncio.sleep(0.5)
    assert not doubtful.done()  # still waiting for another epoch to fence the call
    plog.resolve(None)  # the bound
    with pytest.raises(OutcomeUnknown):
        await asyncio.wait_for(doubtful, 10)
    assert plog.unresolved == []


async def test_a_graceful_stop_answers_a_call_whose_verdict_is_still_being_read_back(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """SIGTERM while a call in doubt waits for another epoch to fence it: the stop answers it unknown
    (REQUEST_TIMED_OUT) at once instead of waiting out the 15 s bound."""
    plog, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    partitions.leases.forget(KEY)
    partitions._resolve(KEY, None, None)  # as the lease clock running out does: the read-back starts
    await asyncio.sleep(0.3)
    assert not doubtful.done()
    await asyncio.wait_for(partitions.close(), 5)
    with pytest.raises(OutcomeUnknown):
        await asyncio.wait_for(doubtful, 1)
    assert plog.unresolved == []


async def test_errors_are_classified_by_whether_the_call_may_have_committed(cluster_dsn: str) -> None:
    conn = await asyncpg.connect(cluster_dsn)
    killer = await asyncpg.connect(cluster_dsn)
    try:
        with pytest.raises(asyncpg.PostgresError) as refused:
            await conn.fetchval("SELECT 1 / 0")  # raised inside the transaction: rolled back
        assert not outcome_unknown(refused.value)
        pid = conn.get_server_pid()
        call = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
        for _ in range(200):  # bounded: until the call is running on the server
            if await killer.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND "
                                     "query LIKE 'SELECT pg_sleep%'", pid):  # fmt: skip
                break
            await asyncio.sleep(0.01)
        await killer.fetchval("SELECT pg_terminate_backend($1)", pid)  # what a restart does
        with pytest.raises(Exception) as terminated:
            await asyncio.wait_for(call, 10)
        assert isinstance(terminated.value, asyncpg.PostgresError)  # asyncpg files it under PostgresError
        assert outcome_unknown(terminated.value), repr(terminated.value)
        with pytest.raises(Exception) as closed:
            await conn.fetchval("SELECT 1")  # the connection it left behind
        assert outcome_unknown(closed.value), repr(closed.value)
    finally:
        conn.terminate()
        await killer.close()
    assert outcome_unknown(asyncpg.exceptions.ConnectionDoesNotExistError("closed in the middle"))
    assert outcome_unknown(TimeoutError()) and outcome_unknown(ConnectionResetError())


async def test_a_crash_answers_nothing_of_a_call_in_doubt(
    partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """`abandon()` (the test controls' crash): as after kill -9, nothing more is answered."""
    plog, doubtful = await failed_with_a_call_in_doubt(partitions, proxy, after_commit=True)
    partitions.abandon()
    assert plog.unresolved == []  # the resolve timer finds nothing to answer
    assert await partitions.reload(KEY) is not None  # a new log (App.abandon makes a new App) ...
    assert not doubtful.done()  # ... which never answers the crashed log's requests


async def test_a_retry_of_a_batch_still_in_flight_is_not_acknowledged_before_it_is_durable(
    pool: Any, partitions: ClusterPartitions, proxy: CommitDropProxy
) -> None:
    """The 1,000-fault run's loss: a retry (same producer, epoch, sequence) arrived while the first copy's
    call was still in flight and was answered at once with the first copy's offset; that call then
    failed, so an acknowledged batch was never stored. Kafka answers such a duplicate only once the
    high watermark passes it (the produce waits in its purgatory): here the retry is answered as the
    first copy is, so a call that never reached PostgreSQL fails both."""
    plog = await partitions.lead(KEY)
    assert plog is not None
    assert await offset_of(plog, batch(0)) == 0
    proxy.arm(after_commit=False)  # the first copy's call never reaches PostgreSQL
    first = append(plog, batch(3))
    assert isinstance(first, asyncio.Future)
    retry = plog.validate(batch(3), NOW)
    assert isinstance(retry, DuplicateAppend) and retry.durable is not None
    assert not retry.durable.done(), "a duplicate of a batch not yet durable, answered"
    await asyncio.wait_for(proxy.dropped.wait(), 30)
    reloaded = await partitions.reload(KEY)
    assert reloaded is not None
    for copy in (first, retry.durable):
        with pytest.raises(PartitionWriteFailed):
            await asyncio.wait_for(copy, 10)
    assert await offset_of(reloaded, batch(3)) == 3  # the client's retry, appended once
    assert append(reloaded, batch(3)) == 3  # and now a duplicate of a durable batch
    assert await stored(pool) == [(0, 2, 0), (3, 5, 3)]


async def test_a_retry_of_a_batch_whose_call_commits_is_acknowledged_at_its_offset(
    pool: Any, partitions: ClusterPartitions
) -> None:
    """Refused instead (REQUEST_TIMED_OUT, possibly persisted), the retry was renumbered by librdkafka's
    next epoch bump and stored again: it waits for the first copy and gets its offset."""
    plog = await partitions.lead(KEY)
    assert plog is not None
    assert await offset_of(plog, batch(0)) == 0
    first = append(plog, batch(3))
    assert isinstance(first, asyncio.Future)
    retry = plog.validate(batch(3), NOW)
    assert isinstance(retry, DuplicateAppend) and retry.durable is not None
    assert (await asyncio.wait_for(retry.durable, 10)).base_offset == 3
    assert (await first).base_offset == 3
    assert await stored(pool) == [(0, 2, 0), (3, 5, 3)]
