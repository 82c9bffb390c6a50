"""How `make test` spreads the suite over pytest-xdist workers (`-n 4 --dist loadgroup`, tests/conftest.py).

Most of the suite's wall time is waiting: real servers, stock clients, PostgreSQL and containers in
subprocesses. Run one after the other it took 19 minutes on a 2-core machine; spread over a few workers
the waits overlap. Two rules decide what may run where:

- Tests that share an expensive session fixture run on ONE worker, in an xdist group (`RULES`): the
  container tests (the podman images under fixed tags, built once per session), and the pipeline
  tests in two halves by the recorded data directories they read (`produced`; `recorded` and `kept`:
  each takes real clients and servers a minute to write), the other Spark tests with the second.
  Each half starts its own local Spark session, two instead of one: the pipeline is the longest work
  of the suite (Spark jobs, CPU-bound), and one worker alone would take longer than all the rest;
  three halves ran slower, their Spark sessions competing for the two cores. A module with a
  module-scoped fixture is a group of its own, so that fixture is set up once, as in a serial run,
  instead of once per worker that receives one of its tests.
- Every other test runs anywhere: its fixtures are per test, or per worker and safe to duplicate
  (a PostgreSQL server per worker, `tests/conftest.py`; one secured server per worker).

`CostFirstScheduling` hands out the work longest first (longest processing time first, a classic
approximation of the shortest schedule): a group costs the sum of its tests, a test what it took when
`tests/durations.json` was last written (`pytest --update-durations`), `UNKNOWN_COST` when it is not
listed. A stale file only changes the order, never what runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_COST = 0.1  # seconds: most tests of the suite are unit tests, well under this
KEEP_FROM = 0.2  # seconds: faster tests are left out of the file and cost UNKNOWN_COST
# (folder, fixture the test uses or None, group): the first rule that matches names the group
RULES = (
    ("tests/container/", None, "container"),
    ("tests/pipeline/", "produced", "pipeline-produced"),
    ("tests/pipeline/", "recorded", "pipeline-spark"),
    ("tests/pipeline/", "kept", "pipeline-spark"),
    ("tests/pipeline/", "spark", "pipeline-spark"),
)


def group_of(item: pytest.Item) -> str | None:
    """The xdist group `item` must share a worker with, or None when it may run anywhere."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for prefix, fixture, group in RULES:
        if item.nodeid.startswith(prefix) and (fixture is None or fixture in fixtures):
            return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(chain and chain[-1].scope == "module" for chain in defs):
        return item.nodeid.split("::", 1)[0]
    return None


def mark_groups(items: Iterable[pytest.Item]) -> None:
    """Add the `xdist_group` marks; pytest-xdist turns them into the `@group` suffix of node ids."""
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def plain_id(nodeid: str) -> str:
    """A node id without the `@group` suffix that loadgroup adds."""
    at, bracket = nodeid.rfind("@"), nodeid.rfind("]")
    return nodeid[:at] if at > bracket else nodeid


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_durations(measured: dict[str, float], path: Path = DURATIONS) -> None:
    """Merge what this run measured into the file: tests that ran get their new time (or leave the file
    when they got fast); tests that did not run keep theirs."""
    merged = {k: v for k, v in load_durations(path).items() if k not in measured}
    merged.update({k: round(v, 1) for k, v in measured.items() if v >= KEEP_FROM})
    path.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n")


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The loadgroup scheduler of pytest-xdist, handing out its work units longest first."""
    from xdist.scheduler import LoadGroupScheduling

    class CostFirstScheduling(LoadGroupScheduling):  # type: ignore[misc]
        durations = load_durations()
        ordered = False

        def _assign_work_unit(self, node: Any) -> None:
            # LoadScopeScheduling.schedule fills `workqueue` (largest unit first) and then assigns from
            # its front: reorder it by cost before the first unit leaves.
            if not self.ordered:
                self.ordered = True
                units = sorted(self.workqueue.items(), key=lambda scope_unit: -self.cost(scope_unit[1]))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

        def cost(self, unit: dict[str, bool]) -> float:
            return sum(self.durations.get(plain_id(nodeid), UNKNOWN_COST) for nodeid in unit)

    return CostFirstScheduling(config, log)
