"""How `make test` spreads the suite over pytest-xdist workers (`-n 6 --dist loadgroup`, tests/conftest.py).

Most of the suite's wall time is waiting: real servers, stock clients, PostgreSQL, Spark and containers
in subprocesses. Run one after the other it took 19 minutes on a 2-core machine; spread over six
workers the waits overlap (4733 passed in 9:54 on the shared machine, 2026-11-28).

Every test may run on any worker: what a session fixture builds is built once per worker and made safe
to duplicate. Servers take reserved ports (tests/ports.py), data lives under the worker's own basetemp,
a PostgreSQL server per worker (tests/conftest.py), a local Spark session per worker (tests/pipeline/
conftest.py), the pipeline's recorded directories and the container tests' kcoord and client images
once per run, the first worker to need one building it for all (tests/built_once.py), apt and pip
installs and the container base image one process at a time on the machine (tests/locks.py). Keeping
the pipeline tests on one or two workers to share one Spark session was slower: they are the longest
work of the suite, and one worker would take longer than all the rest.

`--dist loadgroup` would keep explicit `xdist_group` marks on one worker, but xdist 3.8 marks a grouped
test by renaming `item._nodeid`, which pytest 9 no longer reads: with that pair every test is a unit of
its own. So the places that must share a worker say so here (`SHARED_UNITS`): the Kafka oracle's tests
(tests/oracle) and the share groups' Kafka runs (tests/share, `[kafka...]`) each share one Apache Kafka
broker per worker, a JVM that costs ~10 s of CPU to start, so each runs on one worker, not one broker
per worker.

`CostFirstScheduling` hands out the work longest first (longest processing time first, a classic
approximation of the shortest schedule): a test costs what it took when `tests/durations.json` was last
written (`pytest -n 6 --dist loadgroup --update-durations`), `UNKNOWN_COST` when it is not listed, a
group the sum of its tests. A stale file only changes the order, never what runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_COST = 0.1  # seconds: most tests of the suite are unit tests, well under this
KEEP_FROM = 0.2  # seconds: faster tests are left out of the file and cost UNKNOWN_COST
# Tests that share one expensive session fixture: each (folder, id marker) is one work unit, so one
# worker and one fixture. The oracle's Kafka broker (tests/oracle); the share groups' Kafka broker
# (tests/share's `[kafka...]` runs: spread over six workers they started six Kafka JVMs, ~10 CPU-s each
# plus their idle threads, where one runs them all).
SHARED_UNITS = (("tests/oracle/", ""), ("tests/share/", "[kafka"))


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

        def _split_scope(self, nodeid: str) -> str:
            for folder, marker in SHARED_UNITS:
                if nodeid.startswith(folder) and marker in nodeid:
                    return folder + marker
            return str(super()._split_scope(nodeid))

        def cost(self, unit: dict[str, bool]) -> float:
            return sum(self.durations.get(plain_id(nodeid), UNKNOWN_COST) for nodeid in unit)

    return CostFirstScheduling(config, log)
