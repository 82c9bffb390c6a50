"""kcoord's pytest plugin (entry point `pytest11`: `kcoord = "kcoord.testing.plugin"`).

Fixtures:
- `kcoord_server` (session): kcoord in the test process on its own thread and event loop, 127.0.0.1
  on a free port, ready on return; one per pytest-xdist worker (each worker is a process).
- `kcoord`: the same server, reset before the test (topics, groups, offsets, producer ids,
  transactions, faults, settings); the clients a test opens are never restarted or reconnected.
  `@pytest.mark.kcoord(topics={"orders": 3}, **settings)` seeds it for one test.
- `kcoord_factory(**settings)`: a dedicated server, `kcoord serve` flags as keywords, with a data
  directory that survives `restart()` and `kill()`.
- `kcoord_names` (`.topic()`, `.group()`), `kcoord_topic`, `kcoord_group`: names unique per test
  and worker.
A failing test's report gets sections with the server's log lines and request log for that test.
`--kafka-bootstrap HOST:PORT` gives `kcoord`/`kcoord_server` a real cluster instead: calls that need
kcoord's test controls skip the test.

This module imports only pytest and the standard library: the server is imported when a fixture
first asks for it, so an installed kcoord costs unrelated test runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import pytest

from kcoord.testing.names import Names

if TYPE_CHECKING:
    from kcoord.testing.remote import RemoteKafka
    from kcoord.testing.server import KcoordServer

__all__ = ["Tracked"]

REPORT_LINES = 200  # the newest log lines and requests a failure report shows, per server


class Tracked(Protocol):
    """What the report needs of a server a test used (in-process or --kafka-bootstrap)."""

    @property
    def bootstrap_servers(self) -> str: ...

    def begin_test(self, after_reset: bool) -> None: ...
    def log_lines(self, since: int | None = None) -> list[str]: ...
    def requests(self, since: int | None = None) -> Any: ...


_TRACKED = pytest.StashKey[list[Tracked]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kcoord", "kcoord test fixtures")
    group.addoption(
        "--kafka-bootstrap",
        metavar="HOST:PORT",
        default=None,
        help="run the kcoord fixtures' tests against this Kafka cluster instead of an in-process kcoord "
        "(calls that need kcoord's test controls skip the test)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kcoord(topics=None, **settings): topics ({name: partitions} or names) created and runtime "
        "settings applied for this test by the `kcoord` fixture",
    )


def _bootstrap_option(config: pytest.Config) -> str | None:
    value = config.getoption("kafka_bootstrap", default=None)
    return None if not value else str(value)


def _track(node: pytest.Item | Any, server: Tracked) -> None:
    tracked = node.stash.setdefault(_TRACKED, [])
    if all(s is not server for s in tracked):
        tracked.append(server)


@pytest.fixture(scope="session")
def kcoord_server(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KcoordServer | RemoteKafka]:
    """kcoord in this process for the whole session (per xdist worker), with test defaults:
    initial rebalance delay 0, low minimum session timeouts, fsync never, data in pytest's tmp."""
    bootstrap = _bootstrap_option(pytestconfig)
    if bootstrap is not None:
        from kcoord.testing.remote import RemoteKafka

        yield RemoteKafka(bootstrap)
        return
    from kcoord.testing.server import KcoordServer

    server = KcoordServer({}, tmp_path_factory.mktemp("kcoord") / "data").start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def kcoord(
    kcoord_server: KcoordServer | RemoteKafka, request: pytest.FixtureRequest
) -> KcoordServer | RemoteKafka:
    """The session's server, reset before this test; `@pytest.mark.kcoord(...)` seeds it."""
    topics, settings = _marker(request.node.get_closest_marker("kcoord"))
    server = kcoord_server
    remote = cast("RemoteKafka", server) if _bootstrap_option(request.config) is not None else None
    if remote is not None:
        if settings:
            pytest.skip(f"settings {sorted(settings)} need kcoord's test controls (--kafka-bootstrap)")
    else:
        local = cast("KcoordServer", server)
        local.start()  # a previous test may have killed or stopped it
        local.reset()
        if settings:
            local.configure(**settings)
    server.begin_test(after_reset=True)
    _track(request.node, server)
    for name, partitions in topics.items():
        if remote is not None:  # a real cluster keeps them from an earlier run
            remote.create_topic(name, partitions, exist_ok=True)
        else:
            server.create_topic(name, partitions)
    return server


def _marker(marker: pytest.Mark | None) -> tuple[dict[str, int], dict[str, Any]]:
    """`kcoord(topics=..., **settings)`: topics as {name: partitions} or names (1 partition each)."""
    if marker is None:
        return {}, {}
    if marker.args:
        raise pytest.UsageError("@pytest.mark.kcoord takes keyword arguments only: topics=..., settings")
    settings = dict(marker.kwargs)
    topics = settings.pop("topics", None) or {}
    if not isinstance(topics, Mapping):
        topics = dict.fromkeys(topics, 1)
    return {str(name): int(n) for name, n in topics.items()}, settings


@pytest.fixture
def kcoord_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., KcoordServer]]:
    """`kcoord_factory(**settings)`: a dedicated, started server (`kcoord serve` flags as keywords:
    `fsync="always"`); stopped after the test."""
    if _bootstrap_option(request.config) is not None:
        pytest.skip("kcoord_factory starts kcoord servers; --kafka-bootstrap runs against a real Kafka")
    from kcoord.testing.server import KcoordServer

    servers: list[KcoordServer] = []

    def make(**settings: Any) -> KcoordServer:
        server = KcoordServer(settings, tmp_path_factory.mktemp("kcoord-factory") / "data")
        servers.append(server)
        server.start()
        server.begin_test(after_reset=True)
        _track(request.node, server)
        return server

    yield make
    errors: list[BaseException] = []
    for server in servers:
        try:
            server.close()
        except Exception as exc:  # stop the others, then report the first
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest.fixture
def kcoord_names(request: pytest.FixtureRequest) -> Names:
    """Names unique to this test and xdist worker: `.topic()`, `.group()`, `.topic("payments")`."""
    return Names(request.node.nodeid, request.node.name)


@pytest.fixture
def kcoord_topic(kcoord_names: Names) -> str:
    return kcoord_names.topic()


@pytest.fixture
def kcoord_group(kcoord_names: Names) -> str:
    return kcoord_names.group()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A test using `kcoord_server` alone (no reset): its log and requests start here."""
    result = yield
    funcargs = getattr(item, "funcargs", {})
    server = funcargs.get("kcoord_server")
    if server is not None and "kcoord" not in funcargs:
        server.begin_test(after_reset=False)
        _track(item, server)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.when in ("setup", "call"):
        for server in item.stash.get(_TRACKED, []):
            report.sections.extend(_sections(server))
    return report


def _sections(server: Tracked) -> list[tuple[str, str]]:
    """The server's log lines and request log of this test, newest REPORT_LINES of each.

    Runs inside pytest's report hook, where an exception is an INTERNALERROR that hides the test's
    own failure: whatever goes wrong gathering a section is said in the section instead."""
    name = f"kcoord {_address(server)}"
    sections = (
        _section(f"{name} server log", lambda: _log_text(server)),
        _section(f"{name} requests", lambda: _requests_text(server)),
    )
    return [section for section in sections if section is not None]


def _address(server: Tracked) -> str:
    try:
        return server.bootstrap_servers
    except Exception:
        return "(address unknown)"


def _section(title: str, text: Callable[[], str | None]) -> tuple[str, str] | None:
    try:
        body = text()
    except pytest.skip.Exception:  # a --kafka-bootstrap server has no request log to show
        return None
    except Exception as exc:  # the server was killed or stopped, or a bug here: say so, keep the failure
        return title, f"(unavailable: {type(exc).__name__}: {exc})"
    return None if not body else (title, body)


def _log_text(server: Tracked) -> str:
    return "\n".join(server.log_lines()[-REPORT_LINES:])


def _requests_text(server: Tracked) -> str:
    entries = server.requests() or []
    return "\n".join(_line(e) for e in list(entries)[-REPORT_LINES:])


def _line(entry: object) -> str:
    try:
        return str(entry)
    except Exception as exc:  # one entry that cannot render costs its line, not the report
        return f"(request log entry not shown: {type(exc).__name__}: {exc}) {entry!r}"
