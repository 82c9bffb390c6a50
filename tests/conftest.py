"""Fixtures shared by several test directories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres import PgServer, running_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL per session (tests/postgres.py), for tests/cluster and tests/pipeline."""
    yield from running_server()
