"""Fixtures shared by several test directories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres import PgServer, PostgresUnavailable, cannot, start_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL per session (tests/postgres.py), for tests/cluster and tests/pipeline."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        cannot(str(exc))
    try:
        yield server
    finally:
        server.remove()
