"""Connecting to the cluster's PostgreSQL (asyncpg), and what a connection failure looks like.

asyncpg is the optional extra `kcoord[cluster]`: only `kcoord.coordinator.cluster` imports it.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import asyncpg

__all__ = ["CONNECT_ERRORS", "connect", "create_pool", "redact"]

CONNECT_TIMEOUT_S = 10.0

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


async def connect(dsn: str, *, node_id: int | None = None, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """One connection (`asyncpg.Connection`), for the command line and tests."""
    return await asyncpg.connect(dsn, timeout=timeout_s, server_settings=_settings(node_id))


async def create_pool(
    dsn: str,
    *,
    node_id: int | None = None,
    min_size: int = 2,
    max_size: int = 10,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> Any:
    """A node's pool (`asyncpg.Pool`): `ShardLeases` and every `ShardRecordLog` share it."""
    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout_s,
        server_settings=_settings(node_id),
    )
