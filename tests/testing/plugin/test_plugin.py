"""kcoord's pytest plugin, run as users run it: pytester runs inner suites in a subprocess (with and
without pytest-xdist), and these tests read their outcomes, their reports and what they wrote down.

The inner suites (inner/suite_*.py) hold the behaviour: each fixture, reset isolation, a fault as
kafka-python sees it, advance() expiring a confluent-kafka member, aiokafka in the test's own loop,
a restart keeping committed offsets. Each subprocess costs a second or two of imports, so the runs are
few and each runs many tests.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.testing.server import KcoordServer

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
INNER = Path(__file__).parent / "inner"
SUITE_A_TESTS, SUITE_B_TESTS = 5, 8


def plugin_args() -> list[str]:
    """The installed entry point loads the plugin; before the package is reinstalled with it, -p does."""
    installed = any(
        ep.value == "kcoord.testing.plugin" for ep in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if installed else ["-p", "kcoord.testing.plugin"]


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The inner suites in pytester's directory, this checkout on the subprocess's path, and a
    directory where inner tests note which server they had."""
    for name in ("suite_a", "suite_b", "suite_fail"):
        pytester.makepyfile(**{f"test_{name}": (INNER / f"{name}.py").read_text()})
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("KCOORD_PLUGIN_OUT", str(out))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    yield out


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", "--timeout=120", *args)


def notes(out: Path) -> dict[str, tuple[str, str]]:
    return {p.stem: tuple(p.read_text().split()) for p in out.glob("*.txt") if not p.stem.startswith("names")}


def failure_section(stdout: str, test: str) -> str:
    """The failure report of one test: from its ___ header to the next header or the summary."""
    match = re.search(rf"_{{3,}} {test} _{{3,}}\n(.*?)(?=\n_{{3,}} |\n=+ short test summary)", stdout, re.S)
    assert match is not None, stdout
    return match.group(1)


def check_failure_report(result: pytest.RunResult) -> None:
    section = failure_section(result.stdout.str(), "test_failure_report_carries_the_server_log")
    assert re.search(r"kcoord 127\.0\.0\.1:\d+ server log", section), section
    # the server's own line about the topic this test auto-created, and this test's requests
    assert re.search(r"INFO kcoord\.topics topic name=test_failure_report_carries_the_server_log-", section)
    assert re.search(r"kcoord 127\.0\.0\.1:\d+ requests", section)
    assert re.search(r"#\d+ Producev\d+ corr=\d+ client='kafka-python-producer-\d+'", section), section
    assert "leftover" not in section  # an earlier test's lines and requests are not this test's


def test_fixtures_in_one_process(pytester: pytest.Pytester, inner: Path) -> None:
    result = run(pytester, "-v")
    result.assert_outcomes(passed=SUITE_A_TESTS + SUITE_B_TESTS, failed=1)
    check_failure_report(result)
    seen = notes(inner)
    assert seen["a"] == seen["b"]  # one session server for the whole run


def test_one_server_per_xdist_worker(pytester: pytest.Pytester, inner: Path) -> None:
    result = run(pytester, "-n", "2", "--dist", "loadfile")
    result.assert_outcomes(passed=SUITE_A_TESTS + SUITE_B_TESTS, failed=1)
    check_failure_report(result)
    seen = notes(inner)
    assert {seen["a"][0], seen["b"][0]} == {"gw0", "gw1"}
    assert seen["a"][1] != seen["b"][1]  # each worker its own server
    [names] = [p.read_text() for p in inner.glob("names-*.txt")]
    assert re.search(r"-gw[01]-[0-9a-f]{6}-topic$", names)


def test_kafka_bootstrap_runs_the_same_tests_against_another_broker(
    pytester: pytest.Pytester, inner: Path, tmp_path: Path
) -> None:
    """Against a broker the plugin did not start (here a kcoord, seen only through the Kafka protocol):
    creating topics, reading records, committed offsets and groups work; reset, faults, the clock,
    restarts and the request log skip, naming the call."""
    broker = KcoordServer({}, tmp_path / "broker").start()
    try:
        result = run(pytester, "-rs", f"--kafka-bootstrap={broker.bootstrap_servers}", "test_suite_a.py",
                     "test_suite_b.py")  # fmt: skip
    finally:
        broker.close()
    stdout = result.stdout.str()
    # a: the session server and isolation 1 pass; isolation 2 (requests()) and both faults skip. b: the
    # topics marker, the names and aiokafka (aio.wait_stable, aio.committed) pass; the settings marker,
    # configure(), advance() and both kcoord_factory tests skip.
    result.assert_outcomes(passed=5, skipped=8)
    assert "needs kcoord's test controls; --kafka-bootstrap runs against a real Kafka" in stdout
    assert "kcoord_factory starts kcoord servers" in stdout


def test_the_plugin_imports_nothing_of_the_server_at_load() -> None:
    """An installed kcoord costs unrelated test runs nothing: the plugin module loads no server code."""
    code = (
        "import sys, kcoord.testing.plugin; "
        "loaded = sorted(m for m in sys.modules if m.startswith(('kcoord.coordinator', 'kcoord.storage'))); "
        "print(loaded)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "[]"
