"""Each module of the wiring imports first in a fresh interpreter: what the controls, the HTTP endpoint
and the security settings import of each other is real (no `TYPE_CHECKING` or in-function imports to
hide a circle), so a circle would fail here at import time."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = [
    "kcoord.broker.security.settings",
    "kcoord.wiring.controls.surface",
    "kcoord.wiring.controls.routes",
    "kcoord.wiring.controls.lifecycle",
    "kcoord.wiring.http",
    "kcoord.wiring.local_backends",
]


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=60)
