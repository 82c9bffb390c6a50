"""kcoord/pipeline/cluster_reader.py against a real PostgreSQL, no Spark: a cluster's records written by
its own writers (ShardRecordLog) read back as the data directory's reader decodes the same bytes; a
partition's batches read as the segment files holding the same batches are, for every range split;
the one-line failures."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.postgres import REQUIRED, PgServer

if not REQUIRED:
    pytest.importorskip("asyncpg", reason="the cluster extra (asyncpg) is not installed")
    pytest.importorskip("psycopg", reason="psycopg (the pipeline extra) is not installed")

from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.cluster.shard_log import LSN_EPOCH_SHIFT
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    MemberRecord,
    OffsetCommitRecord,
    OffsetTombstone,
)
from kcoord.coordinator.metadata.topic_records import TopicRecord, TopicTombstone
from kcoord.coordinator.persistence.codec import to_storage
from kcoord.partition_log import PartitionConfig, PartitionLogs, ValidatedAppend
from kcoord.pipeline import cluster_reader, cluster_tables, reader, topic_reader
from kcoord.pipeline.reader import PipelineError
from kcoord.pipeline.topic_reader import Bounds
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO
from tests.pipeline import pg_cluster

NUM_SHARDS = 8
NOW = 1_700_000_000_000


@pytest.fixture
def fresh(pg_server: PgServer) -> str:
    return asyncio.run(pg_cluster.new_database(pg_server))


def _commit(group: str, partition: int, offset: int, ts: int = NOW) -> OffsetCommitRecord:
    return OffsetCommitRecord(group, "events", partition, offset, 3, f"m{offset}", ts)


def _group(group: str, generation: int) -> GroupMetadataRecord:
    member = MemberRecord("m-1", None, "client", "/127.0.0.1", 60_000, 10_000, b"", b"")
    return GroupMetadataRecord(group, "consumer", generation, "range", "m-1", NOW + generation, (member,))


def _all_rows(dsn: str, part_rows: int = cluster_reader.PART_ROWS) -> list[tuple[Any, ...]]:
    parts = cluster_reader.plan_shards(dsn, part_rows)
    return [
        cluster_reader.decode(raw) for part in parts for raws in cluster_reader.raw_rows(part) for raw in raws
    ]


def test_records_are_the_newest_per_key_decoded_as_the_local_log_decodes_them(fresh: str) -> None:
    groups = [f"g{i}" for i in range(12)]
    history = [
        *(_commit(g, p, 10 * p, NOW + p) for g in groups for p in range(3)),
        *(_group(g, 1) for g in groups),
        *(_commit(g, 0, 99, NOW + 500) for g in groups[:4]),  # re-commits: the newest wins
        OffsetTombstone(groups[5], "events", 2),  # deleted: the row is gone
        _group(groups[6], 2),
        TopicRecord("events", uuid.UUID(int=7), 3),
        TopicRecord("gone", uuid.UUID(int=8), 1),
        TopicTombstone("gone"),  # cluster-wide: kept as a NULL value
    ]
    asyncio.run(pg_cluster.init(fresh, NUM_SHARDS))
    counts = asyncio.run(pg_cluster.write(fresh, [to_storage(r) for r in history], NUM_SHARDS))
    assert len(counts) > 2  # several shards hold records

    parts = cluster_reader.plan_shards(fresh, part_rows=10)
    shards = [s for part in parts for s in part.shards]
    assert sorted(shards) == list(range(NUM_SHARDS))  # every shard exactly once
    assert [p.metadata for p in parts].count(True) == 1 and len(parts) > 2

    newest: dict[tuple[int, bytes], bytes | None] = {}
    for record in map(to_storage, history):
        newest[(record.type, record.key)] = record.value
    expected = {
        key: reader.decode_row_tuple(reader.Raw(0, 0, key[0], key[1], value))
        for key, value in newest.items()
        if value is not None or key[0] == reader.TOPIC_TYPE
    }
    rows = _all_rows(fresh, part_rows=10)
    got = {(r[2], r[20]): r for r in rows}
    assert len(got) == len(rows) == len(expected)
    for key, row in expected.items():
        # every column but lsn and timestamp_ms is the data directory reader's
        assert got[key][2:] == row[2:], key
    by_name = {r[4]: r for r in rows if r[2] == reader.TOPIC_TYPE}
    assert by_name["gone"][19] is True and by_name["events"][18] == 3  # tombstone, num_partitions
    commits = [r for r in rows if r[2] == reader.OFFSET_COMMIT_TYPE]
    assert all(r[1] == r[9] for r in commits)  # timestamp_ms: the commit's own time
    metadata = [r for r in rows if r[2] == reader.GROUP_METADATA_TYPE]
    assert {r[1] for r in metadata} == {NOW + 1, NOW + 2}  # the group's state time
    assert all(r[0] >> LSN_EPOCH_SHIFT == 1 for r in commits + metadata)  # lsn from the table: epoch 1


def test_a_cluster_without_metadata_or_partition_tables(fresh: str) -> None:
    asyncio.run(pg_cluster.init(fresh, NUM_SHARDS, later_tables=False))
    asyncio.run(pg_cluster.write(fresh, [to_storage(_commit("solo", 0, 5))], NUM_SHARDS))
    parts = cluster_reader.plan_shards(fresh)
    assert len(parts) == 1 and not parts[0].metadata  # migration 2 absent: no metadata part
    assert [r[6] for r in _all_rows(fresh)] == [5]
    with pytest.raises(PipelineError, match="keeps no partitions in PostgreSQL"):
        cluster_reader.partition_ends(fresh)


def _batch(count: int, codec: int, ts: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, ts + i, b"k%d" % (i % 3), b"v%d-%d" % (ts, i), [("h", b"x%d" % i)])
    return bytes(builder.build())


async def _local_partitions(root: Path) -> None:
    logs = await PartitionLogs.open(root, fsync="never", now_ms=lambda: NOW)
    for partition, count in ((0, 14), (1, 3)):
        plog = logs.ensure("events", partition, PartitionConfig())
        for n in range(count):
            checked = plog.validate(_batch(1 + n % 5, n % 5, NOW + 100 * n), NOW)
            assert isinstance(checked, ValidatedAppend), checked
            await plog.append(checked, NOW)
    await logs.close()


def test_batches_read_as_the_segments_holding_them_for_any_range_split(fresh: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    asyncio.run(_local_partitions(data / "topics"))
    asyncio.run(pg_cluster.init(fresh, NUM_SHARDS))
    ends = asyncio.run(pg_cluster.copy_partitions(fresh, data))
    assert cluster_reader.partition_ends(fresh) == ends == topic_reader.log_ends(str(data))
    for bounds in (Bounds(), Bounds(lo=7, hi=30), Bounds(partitions=frozenset({1})), Bounds(lo=40)):
        local = [
            (p.topic, p.partition, row)
            for p in topic_reader.plan(str(data), bounds)
            for row in topic_reader.records(p, bounds)
        ]
        for per_part in (1, 4, 1000):
            parts = cluster_reader.plan_batches(fresh, bounds, per_part)
            cluster = [
                (p.topic, p.partition, row) for p in parts for row in cluster_reader.batch_records(p, bounds)
            ]
            assert sorted(cluster) == sorted(local), (bounds, per_part)
            if bounds == Bounds() and per_part == 4:
                assert len(parts) > 3  # partitions split into ranges
    assert len(local) == 0  # lo=40 is past every log end


def test_a_corrupt_stored_batch_fails_in_one_line_naming_it(fresh: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    asyncio.run(_local_partitions(data / "topics"))
    asyncio.run(pg_cluster.init(fresh, NUM_SHARDS))
    asyncio.run(pg_cluster.copy_partitions(fresh, data))

    async def damage() -> None:
        import asyncpg

        conn = await asyncpg.connect(fresh)
        await conn.execute(
            "UPDATE kcoord_partition_batch SET batch = overlay(batch placing '\\xff'::bytea from 70)"
            " WHERE topic = 'events' AND partition = 1 AND base_offset = 1"
        )
        await conn.close()

    asyncio.run(damage())
    parts = cluster_reader.plan_batches(fresh, Bounds(partitions=frozenset({1})))
    with pytest.raises(
        PipelineError, match=r"kcoord_partition_batch events-1: corrupt batch at offset 1: CRC"
    ):
        [row for p in parts for row in cluster_reader.batch_records(p)]


def test_redact_hides_every_form_of_password() -> None:
    assert cluster_tables.redact("postgresql://u:s3cret@h:5/db") == "postgresql://u:***@h:5/db"
    assert cluster_tables.redact("postgresql://h/db?user=u&password=s3cret&x=1").count("s3cret") == 0
    assert "s3cret" not in cluster_tables.redact("host=h password=s3cret dbname=d")


def _pipeline(*args: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "pipeline", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_refuses_in_one_line_before_spark_starts(pg_server: PgServer, fresh: str, tmp_path: Path) -> None:
    from tests.postgres import free_port

    out = str(tmp_path / "out")
    unreachable = f"postgresql://kc:s3cret@127.0.0.1:{free_port()}/x"
    done = _pipeline("offsets", "--cluster", unreachable, "--out", out)
    assert done.returncode == 2 and "s3cret" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kcoord pipeline: cluster postgresql://kc:***@"), lines
    assert "cannot connect" in lines[0]
    done = _pipeline("lag", "--cluster", fresh, "--out", out)  # an empty database: no cluster
    assert done.returncode == 2 and "not a kcoord cluster (run `kcoord cluster init`)" in done.stderr
    done = _pipeline("offsets", "--cluster", fresh, "--data-dir", str(tmp_path), "--out", out)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
    done = _pipeline("offsets", "--out", out)
    assert done.returncode == 2 and "one of the arguments --data-dir --cluster is required" in done.stderr


def test_column_wise_rows_equal_the_row_wise_decode() -> None:
    import pyarrow as pa

    from kcoord.pipeline.cluster_source import raws_batches
    from kcoord.pipeline.columnar import rows_batch

    records = [_commit(f"g{i % 3}", i, 10 * i, -1 if i == 3 else NOW + i) for i in range(40)]
    records += [_group("g0", 4), OffsetTombstone("g1", "events", 1)]
    records.append(TopicRecord("events", uuid.UUID(int=1), 2))
    raws = [reader.Raw(lsn, -1, r.type, r.key, r.value) for lsn, r in enumerate(map(to_storage, records))]
    fast = pa.Table.from_batches(list(raws_batches(raws))).sort_by("lsn")
    slow = pa.Table.from_batches([rows_batch(cluster_reader.decode(raw) for raw in raws)]).sort_by("lsn")
    assert fast.equals(slow) and fast.num_rows == len(records)
    assert fast.column("timestamp_ms").to_pylist()[:5] == [NOW, NOW + 1, NOW + 2, None, NOW + 4]


def test_without_psycopg_the_cli_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # import psycopg now raises ImportError, as when it is absent\n"
        "from kcoord.wiring.cli import main\n"
        "argv = ['pipeline', 'offsets', '--cluster', 'postgresql://127.0.0.1/x', '--out', sys.argv[1]]\n"
        "sys.exit(main(argv))\n"
    )
    argv = [sys.executable, "-c", code, str(tmp_path)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == "kcoord pipeline: --cluster needs psycopg 3: pip install 'kcoord[pipeline]'"
