"""How a node reaches its database through a multi-host DSN (kcoord/cluster/pg.py), on the session's
real server: a first host that black-holes (its machine lost, no RST) costs only its share of the
connect timeout, after which the host that accepted is tried first; a DSN whose hosts all answer but
none as `target_session_attrs` asks is a one-line failure, as an unreachable one is."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from kcoord.cluster.pg import connect, create_pool, hosts_of, redact
from tests.cluster.pg_proxy import BlackHoleProxy
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO
from tests.postgres import PgServer


def test_hosts_of_splits_a_multi_host_url_keeping_user_database_and_parameters() -> None:
    dsn = "postgresql://kc:pw@db1:5432,db2,[::1]:6543/kcoord?target_session_attrs=read-write&sslmode=disable"
    assert hosts_of(dsn) == [
        "postgresql://kc:pw@db1:5432/kcoord?target_session_attrs=read-write&sslmode=disable",
        "postgresql://kc:pw@db2/kcoord?target_session_attrs=read-write&sslmode=disable",
        "postgresql://kc:pw@[::1]:6543/kcoord?target_session_attrs=read-write&sslmode=disable",
    ]
    assert hosts_of("postgres://db1:1,db2:2") == ["postgres://db1:1", "postgres://db2:2"]
    for single in ("postgresql://kc@db1:5432/kcoord", "host=db1,db2 port=1,2 dbname=k", "postgresql:///k"):
        assert hosts_of(single) == [single]
    assert redact(dsn) == dsn.replace(":pw@", ":***@")


@pytest.fixture
def black_hole(pg_server: PgServer) -> Iterator[BlackHoleProxy]:
    """A host that accepts TCP connections and then never answers (the proxy, cut)."""
    proxy = BlackHoleProxy(pg_server.port)
    proxy.start()
    proxy.cut()
    try:
        yield proxy
    finally:
        proxy.close()


def _two_hosts(dead: BlackHoleProxy, cluster_dsn: str) -> str:
    live_port = cluster_dsn.split("@127.0.0.1:", 1)[1].split("/", 1)[0]
    database = cluster_dsn.rsplit("/", 1)[1]
    hosts = f"127.0.0.1:{dead.port},127.0.0.1:{live_port}"
    return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"


async def test_a_black_holed_first_host_costs_only_its_share_of_the_timeout(
    black_hole: BlackHoleProxy, cluster_dsn: str
) -> None:
    """asyncpg alone spends the whole timeout on the first host and fails; split per host, the
    second is reached after half of it, and first from then on."""
    dsn = _two_hosts(black_hole, cluster_dsn)
    started = time.monotonic()
    conn = await connect(dsn, timeout_s=4.0)
    try:
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()
    assert 1.5 < time.monotonic() - started < 4.0
    started = time.monotonic()  # the next connection (a node's LISTEN, again) goes to the live host first
    conn = await connect(dsn, timeout_s=4.0)
    await conn.close()
    assert time.monotonic() - started < 1.5


async def test_a_pool_remembers_the_host_that_accepted(black_hole: BlackHoleProxy, cluster_dsn: str) -> None:
    """The pool's first connection pays for the dead host once; the next ones go to the live one
    first (here the pool opens two at start, then a third on demand)."""
    pool = await create_pool(_two_hosts(black_hole, cluster_dsn), min_size=1, max_size=3, timeout_s=4.0)
    try:
        started = time.monotonic()
        async with pool.acquire() as one, pool.acquire() as two, pool.acquire() as three:
            values = [await c.fetchval("SELECT 1") for c in (one, two, three)]
        assert values == [1, 1, 1]
        assert time.monotonic() - started < 1.5  # no connection waited for the black hole again
    finally:
        await pool.close()


def test_no_host_as_target_session_attrs_asks_is_one_line(cluster_dsn: str) -> None:
    """The only host is a primary and the DSN asks for a read-only session (as a standby not yet
    promoted answers a read-write one): refused in one line, exit 1, no traceback."""
    done = run_command(
        [sys.executable, "-m", "kcoord", "cluster", "init", "--cluster",
         f"{cluster_dsn}?target_session_attrs=read-only"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "TargetServerAttributeNotMatched" in done.stderr
