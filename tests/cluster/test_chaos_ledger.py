"""bench/chaos_verify.py's event files are read on from where the last read stopped (the checks after
each fault re-parsed every file from its start): what is read is still every complete line, a torn
last line only once it is complete, and the ledger's answers are the same as from one full read."""

from __future__ import annotations

import json
from pathlib import Path

from bench.chaos_verify import Ledger, events


def test_events_are_read_on_and_a_torn_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "producer.jsonl"
    assert list(events(path)) == []  # not written yet
    path.write_text('{"acked": 0, "p": 1, "o": 5}\n{"acked": 1, "p": 1, ')
    assert list(events(path)) == [{"acked": 0, "p": 1, "o": 5}]
    with path.open("a") as file:
        file.write('"o": 6}\nnot json\n{"error": "x"}\n')
    assert list(events(path)) == [{"acked": 0, "p": 1, "o": 5}, {"acked": 1, "p": 1, "o": 6}, {"error": "x"}]
    ledger = Ledger(produce_files=[path])
    assert ledger.produced() == {(1, 5): "0", (1, 6): "1"} and ledger.count_errors() == 1
    with path.open("a") as file:
        file.write(json.dumps({"acked": 2, "p": 0, "o": 0}) + "\n")
    assert ledger.produced() == {(1, 5): "0", (1, 6): "1", (0, 0): "2"}
