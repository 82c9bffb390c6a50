"""examples/pytest is the suite users copy: it must pass as they would run it, from a copy outside the
repository with only the installed plugin (no conftest, no project path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.timeout(240)


def test_the_example_suite_passes_from_a_copy(tmp_path: Path) -> None:
    suite = tmp_path / "my_project_tests"
    shutil.copytree(REPO / "examples" / "pytest", suite)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KCOORD_"))}
    env["PYTHONPATH"] = str(REPO)  # this checkout's kcoord (a worktree's, not the venv's editable one)
    from importlib.metadata import entry_points

    plugin = (
        []
        if any(e.name == "kcoord" for e in entry_points(group="pytest11"))
        else ["-p", "kcoord.testing.plugin"]
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, str(suite)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]
