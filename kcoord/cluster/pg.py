"""Connecting to the cluster's PostgreSQL (asyncpg), and what a connection failure looks like.

asyncpg is the optional extra `kcoord[cluster]`: only `kcoord.cluster` imports it.
"""

from __future__ import annotations

import asyncio
import functools
import re
from typing import Any

import asyncpg

__all__ = [
    "COMMAND_TIMEOUT_S",
    "CONNECT_ERRORS",
    "LOAD_TIMEOUT_S",
    "connect",
    "create_pool",
    "hosts_of",
    "redact",
]

CONNECT_TIMEOUT_S = 10.0

# A node's statements end within this on the client's side, answered or not: a database that has
# gone silent (a partition black-holing the packets, no RST) would otherwise leave a write, a lease
# renewal or a poll waiting until TCP gives up, minutes later. After the timeout asyncpg cancels the
# statement and, if the cancel cannot reach the server either, closes the connection; the pool
# opens another. Kafka's coordinator bounds a write the same way: `offsets.commit.timeout.ms`
# (5000, GroupCoordinatorConfig), then REQUEST_TIMED_OUT, which a group API answers as
# COORDINATOR_NOT_AVAILABLE (CoordinatorOperationExceptionHelper.handleOperationException).
COMMAND_TIMEOUT_S = 5.0
# Loading a shard or a partition reads all its rows: more time, still bounded.
LOAD_TIMEOUT_S = 60.0
# On the server's side, for the node's sessions: a statement waiting for a row lock longer than this
# fails (a definite "not done", SQLSTATE 55P03) instead of an unknown outcome at the client's timeout;
# a session left idle inside a transaction (its node cut off between two statements) is ended, so
# the row locks and the snapshot it holds do not block the other nodes' lease statements.
LOCK_TIMEOUT_MS = 4000
IDLE_IN_TRANSACTION_TIMEOUT_MS = 5000

# What asyncpg raises for a malformed DSN (ClientConfigurationError is a ValueError subclass in some
# versions, an InterfaceError in others), an unreachable server (OSError, a timeout) and a refusal by
# the server (a PostgresError: unknown database, bad password, too many connections), and for a
# DSN with `target_session_attrs` whose hosts all answered but none as asked (a standby not yet
# promoted: TargetServerAttributeNotMatched, an InternalClientError).
CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    OSError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresError,
    asyncpg.exceptions.TargetServerAttributeNotMatched,
)
# What makes a multi-host connect go on to the next host: any failure of this one (libpq's rule),
# except a DSN that cannot be parsed, which every host would refuse alike.
_NEXT_HOST_ERRORS = tuple(e for e in CONNECT_ERRORS if e is not ValueError)

# A URL DSN's parts around its host list: `postgresql://[userinfo@]h1[:p1],h2[:p2]/db?params`.
_URL = re.compile(r"^(?P<head>postgres(?:ql)?://(?:[^@/?]*@)?)(?P<hosts>[^/?]*)(?P<tail>.*)$", re.DOTALL)

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@/]*@")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&]*")


def redact(dsn: str) -> str:
    """The DSN without its password (in the user info or as a `password=` parameter)."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD.sub(r"\1***@", dsn))


def hosts_of(dsn: str) -> list[str]:
    """One single-host DSN per host of a multi-host URL DSN, in its order, each with the same user,
    database and parameters (`target_session_attrs` included); [dsn] for a single host or another
    form (a keyword DSN, hosts in `host=` parameters), which asyncpg handles as it is."""
    match = _URL.match(dsn)
    if match is None or "," not in match["hosts"]:
        return [dsn]
    return [f"{match['head']}{host}{match['tail']}" for host in match["hosts"].split(",")]


class _Hosts:
    """Connects to the hosts of one DSN one at a time, each within its share of the timeout, the
    last one that accepted first.

    asyncpg bounds a multi-host connect by one timeout for all hosts together and tries them in
    the DSN's order, so a first host that black-holes (its machine lost: no RST, unlike a killed
    process) spends the whole timeout and the standby promoted meanwhile is never tried; every new
    pool connection would then fail. libpq instead bounds each host by `connect_timeout`, and
    pgJDBC remembers which host was the primary (GlobalHostStatusTracker). Here each host gets an
    equal share of the timeout, so the total bound stays what the caller gave, and the host that
    last accepted is tried first, so only the first connection after a failover pays for the dead
    host."""

    def __init__(self, dsn: str) -> None:
        self.dsns = hosts_of(dsn)
        self._good = 0

    def order(self) -> list[int]:
        return [self._good] + [i for i in range(len(self.dsns)) if i != self._good]

    async def connect(self, *, timeout: float, **kwargs: Any) -> Any:
        if len(self.dsns) == 1:
            return await asyncpg.connect(self.dsns[0], timeout=timeout, **kwargs)
        errors: list[BaseException] = []
        share = timeout / len(self.dsns)
        for index in self.order():
            try:
                conn = await asyncpg.connect(self.dsns[index], timeout=share, **kwargs)
            except _NEXT_HOST_ERRORS as exc:
                errors.append(exc)
                continue
            self._good = index
            return conn
        # A host that could not be reached says more than one that answered as a standby, and is
        # what asyncpg itself raises then (its last OSError): the writers take it as a lost connection.
        reached = (e for e in errors if not isinstance(e, asyncpg.exceptions.TargetServerAttributeNotMatched))
        raise next(reached, errors[-1])


@functools.lru_cache(maxsize=16)
def _hosts(dsn: str) -> _Hosts:
    """One `_Hosts` per DSN in the process, so the pool and the node's LISTEN connection share what
    they learnt about which host is the primary."""
    return _Hosts(dsn)


def _settings(node_id: int | None) -> dict[str, str]:
    name = "kcoord" if node_id is None else f"kcoord-node-{node_id}"
    return {"application_name": name}


async def connect(
    dsn: str,
    *,
    node_id: int | None = None,
    timeout_s: float = CONNECT_TIMEOUT_S,
    command_timeout_s: float | None = None,
) -> Any:
    """One connection (`asyncpg.Connection`), for the command line, tests and a node's LISTEN (which
    bounds its statements: a LISTEN sent into a black hole would stop the node's poll loop for good)."""
    return await _hosts(dsn).connect(
        timeout=timeout_s, command_timeout=command_timeout_s, server_settings=_settings(node_id)
    )


async def create_pool(
    dsn: str,
    *,
    node_id: int | None = None,
    min_size: int = 2,
    max_size: int = 10,
    timeout_s: float = CONNECT_TIMEOUT_S,
    command_timeout_s: float | None = COMMAND_TIMEOUT_S,
) -> Any:
    """A node's pool (`asyncpg.Pool`): `ShardLeases` and every `ShardRecordLog` share it. Every
    statement is bounded (`command_timeout_s`, and the server-side lock and idle-in-transaction
    timeouts above). A connection lost (the primary gone) is replaced at the next acquire, trying
    the DSN's hosts as `_Hosts` does, so a multi-host DSN with `target_session_attrs=read-write`
    follows a promoted standby."""
    hosts = _hosts(dsn)

    async def new_connection(_dsn: str, **kwargs: Any) -> Any:
        return await hosts.connect(**kwargs)

    settings = {
        **_settings(node_id),
        "lock_timeout": str(LOCK_TIMEOUT_MS),
        "idle_in_transaction_session_timeout": str(IDLE_IN_TRANSACTION_TIMEOUT_MS),
    }
    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        connect=new_connection,
        timeout=timeout_s,
        command_timeout=command_timeout_s,
        server_settings=settings,
    )
