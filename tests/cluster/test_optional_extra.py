"""asyncpg is the optional extra `kcoord[cluster]`: nothing that runs without --cluster loads it, and
`kcoord cluster` without it says what to install. (pyproject.toml's import-linter contract holds the
static imports; these run the real interpreter.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_server_and_the_command_line_do_not_load_asyncpg() -> None:
    done = python(
        "import sys\n"
        "import kcoord.wiring.app, kcoord.wiring.cli, kcoord.broker\n"
        "import kcoord.cluster, kcoord.coordinator.runtime.shards, kcoord.testing\n"
        "from kcoord.wiring.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'kcoord.wiring.app' in sys.modules\n"
        "print('asyncpg' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_kcoord_cluster_without_asyncpg_names_the_extra() -> None:
    done = python(
        "import sys\n"
        "sys.modules['asyncpg'] = None  # import asyncpg now raises ImportError, as when it is absent\n"
        "from kcoord.wiring.cli import main\n"
        "sys.exit(main(['cluster', 'init', '--cluster', 'postgresql://127.0.0.1/x']))\n"
    )
    assert done.returncode == 2
    assert "pip install 'kcoord[cluster]'" in done.stderr
