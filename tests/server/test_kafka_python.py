"""Smoke test with a stock client: kafka-python in its own process against `kcoord serve`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kcoord_process import REPO, KcoordServer

SCRIPT = Path(__file__).parent / "clients" / "kafka_python_smoke.py"


def test_kafka_python_admin_and_consumer_group_smoke(server: KcoordServer) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), server.bootstrap, "smoke-topic", "smoke-group"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "smoke-topic" in result["topics"]
    assert result["assignment"] == [0, 1, 2, 3, 4, 5]
    assert result["committed"] == [0, "smoke-meta"]
    assert set(result["positions"].values()) == {0}
