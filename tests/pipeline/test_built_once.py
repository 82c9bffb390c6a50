"""tests/built_once.py under real pytest-xdist workers (a pytest run in a subprocess, two
workers): the first worker builds and every worker reads what it built; a build that failed is built
again, from a clean directory, by the next worker that asks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.kcoord_process import REPO

INNER = """
import os
from pathlib import Path

import pytest

from tests import built_once

WORKER = os.environ["PYTEST_XDIST_WORKER"]
LOGS = Path(os.environ["BUILT_ONCE_LOGS"])


def _log(name: str, line: str) -> None:
    with open(LOGS / name, "a") as f:
        f.write(line + "\\n")


def build(home: Path) -> dict[str, object]:
    _log("builds", WORKER)
    if os.environ["BUILT_ONCE_FAIL_FIRST"] == "1" and not (LOGS / "failed").exists():
        (LOGS / "failed").write_text(WORKER)
        (home / "half").write_text("a build that fails half way")
        raise RuntimeError("the first build fails")
    (home / "made").write_text(WORKER)
    return {"dir": home, "by": WORKER}


@pytest.fixture(scope="session", autouse=True)
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return built_once.once(tmp_path_factory, "thing", build)


@pytest.mark.parametrize("n", range(8))
def test_reads(facts: dict[str, object], n: int) -> None:
    home = facts["dir"]
    assert isinstance(home, Path) and (home / "made").read_text() == facts["by"]
    assert not (home / "half").exists(), "the failed build's leftovers are gone"
    _log("seen", f"{WORKER} {facts['by']}")
"""


def _run(tmp: Path, fail_first: bool) -> tuple[str, list[str], list[tuple[str, str]]]:
    """The inner run's output, the workers that built (in order) and (reader, builder) per test."""
    tmp.mkdir()
    (tmp / "test_inner.py").write_text(INNER)
    logs = tmp / "logs"
    logs.mkdir()
    # not the outer run's PYTEST_ADDOPTS: its options (e.g. --update-durations) are our conftest's
    outer = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env = {**outer, "PYTHONPATH": str(REPO), "BUILT_ONCE_LOGS": str(logs),
           "BUILT_ONCE_FAIL_FIRST": "1" if fail_first else "0"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--basetemp", str(tmp / "base"), "--rootdir", str(tmp), str(tmp / "test_inner.py")],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    builds = (logs / "builds").read_text().split() if (logs / "builds").exists() else []
    lines = (logs / "seen").read_text().splitlines() if (logs / "seen").exists() else []
    seen = [(reader, builder) for reader, builder in (line.split() for line in lines)]
    return done.stdout[-3000:] + done.stderr[-2000:], builds, seen


def test_the_first_worker_builds_and_every_worker_reads_it(tmp_path: Path) -> None:
    out, builds, seen = _run(tmp_path / "good", fail_first=False)
    assert "8 passed" in out and len(builds) == 1, (builds, out)
    assert len(seen) == 8 and {builder for _, builder in seen} == set(builds)
    assert {reader for reader, _ in seen} == {"gw0", "gw1"}, "both workers read the one build"


def test_a_failed_build_is_built_again_by_the_next_worker(tmp_path: Path) -> None:
    # The worker whose build raised errors in all its tests (pytest keeps a session fixture's error);
    # the other worker takes the lock after it, finds no facts and builds again, and its tests pass.
    out, builds, seen = _run(tmp_path / "failing", fail_first=True)
    assert len(builds) == 2 and builds[0] != builds[1], (builds, out)
    assert seen and all(pair == (builds[1], builds[1]) for pair in seen), seen
    assert f"{len(seen)} passed" in out and f"{8 - len(seen)} error" in out, out
