"""Connecting to the cluster's PostgreSQL (asyncpg), and what a connection failure looks like.

asyncpg is the optional extra `kcoord[cluster]`: only `kcoord.cluster` imports it.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import asyncpg

__all__ = ["COMMAND_TIMEOUT_S", "CONNECT_ERRORS", "LOAD_TIMEOUT_S", "connect", "create_pool", "redact"]

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
# the server (a PostgresError: unknown database, bad password, too many connections).
CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    OSError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresError,
)

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@/]*@")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&]*")


def redact(dsn: str) -> str:
    """The DSN without its password (in the user info or as a `password=` parameter)."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD.sub(r"\1***@", dsn))


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
    return await asyncpg.connect(
        dsn, timeout=timeout_s, command_timeout=command_timeout_s, server_settings=_settings(node_id)
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
    timeouts above)."""
    settings = {
        **_settings(node_id),
        "lock_timeout": str(LOCK_TIMEOUT_MS),
        "idle_in_transaction_session_timeout": str(IDLE_IN_TRANSACTION_TIMEOUT_MS),
    }
    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout_s,
        command_timeout=command_timeout_s,
        server_settings=settings,
    )
