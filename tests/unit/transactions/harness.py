"""A transaction coordinator on a fake clock, fake timers, an in-memory log, in-memory producer ids and
an in-memory marker writer that can fail or hold; every entry point answers into a recorder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kcoord.coordinator.runtime import ShardPhases
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.transactions import (
    ControlResult,
    EndTxnResult,
    InitProducerIdResult,
    TransactionConfig,
    TransactionCoordinator,
    TransactionRecord,
)
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.protocol.errors import ErrorCode
from tests.unit.fakes import MemoryRecordLog

T = TypeVar("T")
FIRST_ID = 1000


class Answer(Generic[T]):
    """A `done` callback that must be called at most once."""

    def __init__(self) -> None:
        self.values: list[T] = []

    def __call__(self, value: T) -> None:
        assert not self.values, f"answered twice: {self.values[0]} then {value}"
        self.values.append(value)

    @property
    def done(self) -> bool:
        return bool(self.values)

    @property
    def value(self) -> T:
        assert self.values, "no answer yet"
        return self.values[0]


class ProducerIdsFake:
    def __init__(self) -> None:
        self.next = FIRST_ID
        self.fail = False

    def allocate(self, done: Callable[[int | None, BaseException | None], None]) -> None:
        if self.fail:
            done(None, OSError("block write failed"))
            return
        self.next += 1
        done(self.next - 1, None)


@dataclass(frozen=True)
class MarkerCall:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]


@dataclass
class MarkersFake:
    calls: list[MarkerCall] = field(default_factory=list)
    hold: bool = False
    fail_with: BaseException | None = None
    held: list[Callable[[BaseException | None], None]] = field(default_factory=list)

    def write_markers(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
        partitions: Sequence[tuple[str, int]], done: Callable[[BaseException | None], None],
    ) -> None:  # fmt: skip
        self.calls.append(
            MarkerCall(producer_id, producer_epoch, commit, coordinator_epoch, tuple(partitions))
        )
        if self.hold:
            self.held.append(done)
            return
        done(self.fail_with)

    def release(self, error: BaseException | None = None) -> None:
        held, self.held = self.held, []
        self.hold = False
        for done in held:
            done(error)


class Txn:
    """The coordinator under test, active unless `loaded=False` (then `records` may be applied first)."""

    def __init__(
        self,
        records: Sequence[TransactionRecord] = (),
        loaded: bool = True,
        phases: ShardPhases | None = None,
        **config: Any,
    ) -> None:
        self.clock = FakeClock()
        self.timers = FakeTimers(self.clock)
        self.log = MemoryRecordLog()
        self.ids = ProducerIdsFake()
        self.markers = MarkersFake()
        self.tc = TransactionCoordinator(TransactionConfig(**config), self.clock, self.timers,
                                         self.log, self.ids, self.markers, phases=phases)  # type: ignore[arg-type]  # fmt: skip
        for record in records:
            self.tc.apply(record)
        if loaded:
            self.tc.on_loaded()

    # -- requests --------------------------------------------------------------------------------
    def init(self, tid: str | None = "t", timeout: int = 60_000, pid: int = -1, epoch: int = -1,
             version: int = 4) -> Answer[InitProducerIdResult]:  # fmt: skip
        answer: Answer[InitProducerIdResult] = Answer()
        self.tc.init_producer_id(tid, timeout, pid, epoch, version, answer)
        return answer

    def add(self, pid: int, epoch: int, *partitions: tuple[str, int], tid: str = "t",
            version: int = 3) -> Answer[ErrorCode]:  # fmt: skip
        answer: Answer[ErrorCode] = Answer()
        self.tc.add_partitions(tid, pid, epoch, partitions or (("out", 0),), version, answer)
        return answer

    def add_implicit(
        self, pid: int, epoch: int, *partitions: tuple[str, int], tid: str = "t"
    ) -> Answer[ErrorCode]:
        answer: Answer[ErrorCode] = Answer()
        self.tc.add_partitions_implicit(tid, pid, epoch, partitions or (("out", 0),), answer)
        return answer

    def add_offsets(self, pid: int, epoch: int, group: str = "g", tid: str = "t",
                    version: int = 3) -> Answer[ErrorCode]:  # fmt: skip
        answer: Answer[ErrorCode] = Answer()
        self.tc.add_offsets(tid, pid, epoch, group, version, answer)
        return answer

    def end(self, pid: int, epoch: int, commit: bool = True, tid: str = "t",
            version: int = 3) -> Answer[EndTxnResult]:  # fmt: skip
        answer: Answer[EndTxnResult] = Answer()
        self.tc.end_txn(tid, pid, epoch, commit, version, answer)
        return answer

    def abort(self, tid: str = "t") -> Answer[ControlResult]:
        answer: Answer[ControlResult] = Answer()
        self.tc.abort(tid, answer)
        return answer

    def expire(self, tid: str = "t") -> Answer[ControlResult]:
        answer: Answer[ControlResult] = Answer()
        self.tc.expire(tid, answer)
        return answer

    # -- shortcuts -------------------------------------------------------------------------------
    def ready(self, tid: str = "t", version: int = 4) -> tuple[int, int]:
        """InitProducerId that succeeds: (producer id, epoch)."""
        r = self.init(tid, version=version).value
        assert r.error is ErrorCode.NONE, r
        return r.producer_id, r.producer_epoch

    def ongoing(self, tid: str = "t", *partitions: tuple[str, int]) -> tuple[int, int]:
        pid, epoch = self.ready(tid)
        assert self.add(pid, epoch, *partitions, tid=tid).value is ErrorCode.NONE
        return pid, epoch

    def md(self, tid: str = "t") -> TransactionMetadata:
        md = self.tc.metadata(tid)
        assert md is not None
        return md

    def records(self, tid: str = "t") -> list[TransactionRecord]:
        return [r for r in self.log.records if isinstance(r, TransactionRecord) and r.transactional_id == tid]
