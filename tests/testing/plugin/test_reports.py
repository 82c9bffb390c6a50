"""A failing test's report shows its requests whatever became of them, and never crashes pytest.

The inner suite (inner/suite_states.py) fails three tests on purpose, each with a request left in one
state: a JoinGroup parked in a rebalance, a Metadata request a delay fault holds, one a disconnect fault
dropped. The outer run must report those failures with the kcoord sections, exit 1 and no INTERNALERROR
(the report used to format an unanswered request's missing duration and end pytest there).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kcoord.testing.views import RequestEntry
from tests.testing.plugin.test_plugin import INNER, REPO, failure_section, run

pytest_plugins = ["pytester"]

STATES_TESTS = 3
# One request-log line: "#seq Apiv<version> corr=<id> client='<id>' peer=<host:port> <outcome>..."
LINE = r"#\d+ {api}v\d+ corr=\d+ client='{client}' peer=\S+ "


@pytest.fixture
def states_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = pytester.makepyfile(test_suite_states=(INNER / "suite_states.py").read_text())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return path


def requests_section(stdout: str, test: str) -> str:
    section = failure_section(stdout, test)
    assert re.search(r"kcoord 127\.0\.0\.1:\d+ requests", section), section
    return section


def test_a_failure_report_shows_parked_delayed_dropped_and_answered_requests(
    pytester: pytest.Pytester, states_suite: Path
) -> None:
    result = run(pytester, "-v", states_suite.name)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    result.assert_outcomes(failed=STATES_TESTS)
    stdout = result.stdout.str()

    parked = requests_section(stdout, "test_failure_with_a_parked_join_group")
    assert "deliberately, with a JoinGroup parked in the rebalance" in parked  # its own failure, not a wait's
    join = LINE.format(api="JoinGroup", client="parked-member") + r"parked, no answer after \d+\.\dms"
    assert re.search(join, parked), parked
    # the requests answered before it render with their durations
    assert re.search(LINE.format(api="SyncGroup", client="first-member") + r"\d+\.\dms", parked), parked

    delayed = requests_section(stdout, "test_failure_with_a_request_held_by_a_delay_fault")
    assert "deliberately, with a Metadata request a delay fault holds" in delayed
    held = LINE.format(api="Metadata", client="delayed-client") + r"delayed, no answer after \d+\.\dms"
    assert re.search(held + r" fault=\d+", delayed), delayed

    dropped = requests_section(stdout, "test_failure_after_a_disconnect_fault")
    assert "deliberately, after a Metadata request a disconnect fault dropped" in dropped
    gone = LINE.format(api="Metadata", client="dropped-client") + r"dropped \(connection closed, never"
    assert re.search(gone + r" answered\) fault=\d+", dropped), dropped


ENTRY = {
    "seq": 7, "at_ms": 1, "api": "JoinGroup", "api_key": 11, "api_version": 9, "correlation_id": 4,
    "client_id": "c", "peer": "127.0.0.1:5000", "error_codes": [], "fault": None,
}  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"duration_ms": 12.345, "state": "answered", "error_codes": [27]}, " 12.3ms errors=[27]"),
        ({"duration_ms": None, "state": "in flight", "waited_ms": 3.21}, " in flight, no answer after 3.2ms"),
        ({"duration_ms": None, "state": "parked", "waited_ms": 2000}, " parked, no answer after 2000.0ms"),
        ({"duration_ms": None, "state": "delayed", "fault": 2}, " delayed, no answer fault=2"),
        ({"state": "dropped", "fault": 3}, " dropped (connection closed, never answered) fault=3"),
        # an entry from a server without `state` or `waited_ms` (a container image of an older kcoord)
        ({"duration_ms": None}, " unanswered, no answer"),
        ({"duration_ms": 5}, " 5.0ms"),
        # acks=0 Produce has no correlation slot; a request may come without a client id
        (
            {"correlation_id": None, "client_id": None, "peer": None},
            "client=None peer=None unanswered, no answer",
        ),
    ],
)
def test_every_request_state_renders(fields: dict[str, object], shown: str) -> None:
    line = str(RequestEntry.from_json({**ENTRY, **fields}))
    assert line.startswith("#7 JoinGroupv9 corr=") and line.endswith(shown), line
