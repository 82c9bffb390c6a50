"""Fixtures shared by several test directories, and how the suite is spread over pytest-xdist workers
(tests/scheduling.py: `make test` runs `-n 6 --dist loadgroup`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import scheduling
from tests.postgres import PgServer, PostgresUnavailable, cannot, start_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL per session (per xdist worker; tests/postgres.py), for tests/cluster and
    tests/pipeline."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        cannot(str(exc))
    try:
        yield server
    finally:
        server.remove()


# -- spreading the suite over xdist workers (tests/scheduling.py) -------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-durations",
        action="store_true",
        help="merge the time each test took into tests/durations.json (the order `make test` starts them)",
    )


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return scheduling.make_scheduler(config, log) if config.getvalue("dist") == "loadgroup" else None


_MEASURED: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    nodeid = scheduling.plain_id(report.nodeid)
    _MEASURED[nodeid] = _MEASURED.get(nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    # On the controller only (a worker's config has `workerinput`): it sees every worker's reports.
    if session.config.getoption("update_durations") and not hasattr(session.config, "workerinput"):
        scheduling.write_durations(_MEASURED)
