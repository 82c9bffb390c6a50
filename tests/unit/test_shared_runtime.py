"""coordinator.runtime: the write path both coordinators share (apply once durable, undo on failure,
answer once) and the group names still importable from where they were; the group tenant names the
runtime's ports, not copies of them."""

from __future__ import annotations

import subprocess
import sys

from kcoord.coordinator.runtime import CoordinatorRuntime, Phase, Write
from kcoord.protocol.errors import ErrorCode
from tests.unit.fakes import MemoryRecordLog


def _runtime(log: MemoryRecordLog) -> tuple[CoordinatorRuntime[object], list[object]]:
    rt: CoordinatorRuntime[object] = CoordinatorRuntime(log)  # type: ignore[arg-type]
    applied: list[object] = []
    rt.apply = applied.append
    return rt, applied


def test_a_durable_write_is_applied_then_answered() -> None:
    log = MemoryRecordLog()
    log.hold = True
    rt, applied = _runtime(log)
    answers: list[BaseException | None] = []
    rt.run(Write(["a", "b"], answers.append, durable=["b"]))  # type: ignore[list-item]
    assert applied == [] and answers == []
    log.release()
    assert applied == ["b"] and answers == [None]


def test_a_failed_write_is_undone_in_reverse_then_answered_with_the_error() -> None:
    log = MemoryRecordLog()
    log.fail_with = OSError("disk full")
    rt, applied = _runtime(log)
    undone: list[int] = []
    answers: list[BaseException | None] = []
    write = Write(["a"], answers.append, undo=[lambda: undone.append(1), lambda: undone.append(2)])
    rt.run(write)  # type: ignore[arg-type]
    assert applied == [] and undone == [2, 1] and answers == [log.fail_with]


def test_phase_errors() -> None:
    rt, _ = _runtime(MemoryRecordLog())
    assert rt.phase is Phase.LOADING and rt.phase_error("g") is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    rt.phases.loaded()
    assert rt.phase is Phase.ACTIVE and rt.phase_error("g") is None and rt.phase_error("") is None
    rt.phases.shut_down()
    assert rt.phase is Phase.SHUT_DOWN and rt.phase_error("g") is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_group_names_stay_importable_and_the_runtime_imports_alone() -> None:
    from kcoord.coordinator.groups.runtime import Phase as GroupPhase
    from kcoord.coordinator.groups.runtime import Runtime, Undo  # noqa: F401
    from kcoord.coordinator.groups.runtime import Write as GroupWrite

    assert GroupPhase is Phase and issubclass(GroupWrite, Write) and issubclass(Runtime, CoordinatorRuntime)
    code = "import sys, kcoord.coordinator.runtime; assert 'kcoord.coordinator.groups' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_group_tenant_keeps_no_copies_of_the_runtime_ports() -> None:
    import kcoord.coordinator.groups as groups
    from kcoord.coordinator import runtime
    from kcoord.coordinator.groups import manager, timers
    from kcoord.coordinator.groups import runtime as group_runtime

    assert group_runtime.Clock is runtime.Clock and group_runtime.KeyedTimers is runtime.KeyedTimers
    assert manager.RecordLog is runtime.RecordLog
    assert not hasattr(timers, "KeyedTimers") and not hasattr(groups, "Clock")


def test_the_transaction_coordinator_imports_alone_without_the_group_package() -> None:
    code = (
        "import sys, kcoord.coordinator.transactions; assert 'kcoord.coordinator.groups' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
