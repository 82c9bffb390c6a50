"""The ports and the group package import cleanly on their own (no import cycles)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["kcoord.coordinator.runtime", "kcoord.coordinator.groups", "kcoord.coordinator.groups.manager"],
)
def test_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


def test_memory_log_satisfies_the_record_log_port() -> None:
    from kcoord.coordinator.groups import LogRecord
    from kcoord.coordinator.runtime import RecordLog
    from tests.unit.fakes import MemoryRecordLog

    log: RecordLog[LogRecord] = MemoryRecordLog()
    done: list[BaseException | None] = []
    log.append([], done.append)
    assert done == [None]
