"""A real process appending with fsync=always is SIGKILLed at random moments: nothing acknowledged is lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.storage.conftest import replay_sync

ROUNDS = 20


def test_sigkill_at_random_moments_loses_no_acknowledged_record(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    acknowledged: dict[bytes, bytes] = {}
    repo = Path(__file__).resolve().parents[2]
    for round_number in range(ROUNDS):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.storage.appender", str(tmp_path), str(round_number)],
            cwd=repo,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(repo)},
        )
        assert child.stdout is not None
        deadline = time.monotonic() + rng.uniform(0.3, 1.0)
        os.set_blocking(child.stdout.fileno(), False)
        buffered = b""
        while time.monotonic() < deadline:
            buffered += child.stdout.read() or b""
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        buffered += child.stdout.read() or b""
        for line in buffered.split(b"\n")[:-1]:  # a cut last line was not fully acknowledged output
            key, value = line.split(b" ")
            acknowledged[key] = value
        state = replay_sync(tmp_path)
        for key, value in acknowledged.items():
            got = state.get((0, key))
            # the child may have written more than it printed, never less
            assert got == value or _newer(got, value, round_number), (round_number, key, got, value)
        acknowledged = {key: state[(0, key)] for key in acknowledged}
    assert len(acknowledged) > 10


def _newer(got: bytes | None, value: bytes, round_number: int) -> bool:
    """A later write that was durable but whose ack line the kill cut off (values are "round-seq")."""
    if got is None:
        return False
    got_round, got_seq = (int(part) for part in got.split(b"-"))
    value_round, value_seq = (int(part) for part in value.split(b"-"))
    return got_round == round_number and (value_round < round_number or got_seq > value_seq)
