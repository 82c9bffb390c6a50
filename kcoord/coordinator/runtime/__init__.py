"""The one write path every coordinator shares (Kafka's coordinator-common `CoordinatorRuntime`,
which its group and share coordinators both run on): a handler's records are appended as one batch,
applied through the replay path once durable (or undone if the append fails), and only then
answered. `coordinator.groups` and `coordinator.transactions` are its tenants; this package imports
neither of them. Beside the write path: the phase of each shard (`phases`, Kafka's per-partition
CoordinatorContext state) with the shard function (`shards`), and the ports every tenant names
(`ports.RecordLog`, `time.Clock`, `time.KeyedTimers`; `fake_time` for tests and benchmarks).
"""

from kcoord.coordinator.runtime.core import CoordinatorRuntime, Undo, Write
from kcoord.coordinator.runtime.phases import PHASE_ERRORS, Phase, ShardPhases
from kcoord.coordinator.runtime.ports import OnDone, RecordLog
from kcoord.coordinator.runtime.time import Clock, KeyedTimers

__all__ = [
    "PHASE_ERRORS",
    "Clock",
    "CoordinatorRuntime",
    "KeyedTimers",
    "OnDone",
    "Phase",
    "RecordLog",
    "ShardPhases",
    "Undo",
    "Write",
]
