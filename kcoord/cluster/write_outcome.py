"""Whether a failed PostgreSQL write may still have committed: `outcome_unknown`.

A call that PostgreSQL refused (a raised error inside the transaction: the fence, a constraint, a
deadlock, a serialization failure) rolled back, so nothing of it was written. A call whose connection
broke, or that timed out, may have committed anyway: PostgreSQL commits before it answers, and the
answer can be lost after the commit (a restart in immediate mode terminates the session with
ADMIN_SHUTDOWN, a crash with CRASH_SHUTDOWN, a dropped connection surfaces as asyncpg's
ConnectionDoesNotExistError, which asyncpg files under PostgresError with SQLSTATE 08003). Those are
unknown outcomes: the writer must neither acknowledge nor answer as if nothing were written; only
reading the table again (after fencing its own earlier epoch) tells.

Kafka's analogue: a produce request whose acks=all wait expires answers REQUEST_TIMED_OUT
(`DelayedProduce.onExpiration`), which clients treat as possibly persisted, never as refused.
"""

from __future__ import annotations

import asyncio

import asyncpg

__all__ = ["outcome_unknown"]

# SQLSTATE classes whose error can arrive after the transaction committed: 08 connection exception,
# 57 operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57014 a cancel).
_UNKNOWN_CLASSES = ("08", "57")


def outcome_unknown(error: object) -> bool:
    """True if the call that raised `error` may have committed (or may still commit)."""
    if isinstance(error, (OSError, asyncio.TimeoutError, asyncpg.InterfaceError)):
        return True  # the connection broke or could not be made, or the answer never came in time
    if isinstance(error, asyncpg.PostgresConnectionError):
        return True
    if isinstance(error, asyncpg.PostgresError):
        return str(getattr(error, "sqlstate", "") or "")[:2] in _UNKNOWN_CLASSES
    return False
