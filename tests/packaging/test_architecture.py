"""Issue 32, items 2 and 6: the house as docs/architecture.md draws it is the house the code builds.

docs/gen/architecture.py reads the import graph (every import, also under TYPE_CHECKING or inside a
function) and regenerates the picture's DOT source, the arrows and the contracts' table; `--check` fails
when any of them differs from what is committed, or when two modules import each other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_architecture_page_matches_the_import_graph_and_no_modules_import_each_other() -> None:
    run = subprocess.run(
        [sys.executable, "docs/gen/architecture.py", "--check"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
