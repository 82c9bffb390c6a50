"""Everything the server recovers from its data directory, opened and closed as one bundle.

`kcoord/wiring/app.py` opens it once at startup; the test controls' `reset()` (kcoord/wiring/controls/)
closes it, empties the data directory and opens a fresh one behind the same listeners and client
connections, and `App.abandon()` drops it as a crash would. The order inside `open_state` is startup's:
the coordinator log is replayed into the group manager, topics, producer ids, transactions, ACLs and
SCRAM credentials before the partition logs open and the timers are armed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kcoord import storage
from kcoord.broker.markers import CoordinatorMarkers, TxnMarkers
from kcoord.broker.security.acls_store import AclStore
from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.broker.security.credentials import ScramCredentials
from kcoord.broker.timers import AsyncioTimers, SystemClock
from kcoord.broker.topics import TopicRegistry
from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.persistence import Replayer, StorageRecordLog, storage_config
from kcoord.coordinator.producer_ids import ProducerIds
from kcoord.coordinator.runtime import Clock
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.partition_log import PartitionLogs
from kcoord.storage.faults import FaultPolicy, StorageFault
from kcoord.wiring.config import Config
from kcoord.wiring.metrics import MetricsSource, TimedFileOps

__all__ = [
    "State",
    "abandon_state",
    "close_state",
    "empty_data_dir",
    "open_state",
    "stop_state",
    "sweep_trash",
]

log = logging.getLogger("kcoord.app")


@dataclass(slots=True)
class State:
    """The recovered state and the storage behind it."""

    log: Any  # storage.Log
    manager: GroupManager
    topics: TopicRegistry
    producer_ids: ProducerIds
    transactions: TransactionCoordinator
    data: TopicData
    markers: TxnMarkers
    acls: AclStore | None
    credentials: ScramCredentials
    summary: str


async def open_state(
    config: Config,
    clock: Clock,
    timers: AsyncioTimers,
    metrics: MetricsSource | None,
    on_fatal: Callable[[StorageFault], None],
) -> State:
    """Recover the data directory into memory and open the partition logs (startup's order)."""
    loop = asyncio.get_running_loop()
    record_log = StorageRecordLog()
    topics = TopicRegistry(record_log)
    manager = GroupManager(config.group_config(), clock, timers, record_log, topics=topics)
    producer_ids = ProducerIds(record_log)
    # The transaction coordinator: a second tenant of the same log and runtime. Its markers go to
    # the partition logs, which open after recovery: the writer is connected to them below.
    coordinator_markers = CoordinatorMarkers(loop)
    transactions = TransactionCoordinator(
        config.transaction_config(), clock, timers, record_log, producer_ids, coordinator_markers
    )
    acls = _acl_store(config, record_log)  # the authorizer (issue 25): only with --authorizer standard
    credentials = ScramCredentials(record_log)
    replayer = Replayer(manager, topics, producer_ids, transactions, acls=acls, credentials=credentials)
    ops = None
    if metrics is not None:
        ops = TimedFileOps(metrics.fsync_seconds)
        record_log.append_seconds = metrics.append_seconds
        manager.observe_transitions(metrics.events)
    # One storage-fault policy for the coordinator log and the partition logs (kcoord/storage/faults.py).
    policy = FaultPolicy(on_fatal=on_fatal)
    log_ = await storage.Log.open(
        config.data_dir, storage_config(config), replayer.apply, ops=ops, policy=policy
    )
    record_log.attach(log_)
    replayer.finish()
    manager.on_loaded()
    partition_logs = await PartitionLogs.open(
        config.data_dir / "topics", fsync=config.fsync, now_ms=clock.now_ms, policy=policy
    )
    data = TopicData(topics, partition_logs)
    if not isinstance(clock, SystemClock):  # the test controls' movable clock: records' times follow it
        data.now_ms = clock.now_ms  # type: ignore[method-assign]
    await data.remove_orphans()
    data.start_retention(loop)
    markers = TxnMarkers(data, manager)
    coordinator_markers.attach(markers)
    transactions.on_loaded()  # timers armed; transactions found in Prepare* get their markers
    return State(
        log_,
        manager,
        topics,
        producer_ids,
        transactions,
        data,
        markers,
        acls,
        credentials,
        replayer.summary(),
    )


def stop_state(state: State) -> None:
    """Shutdown's first step: cancel the coordinators' timers, answer parked JoinGroup/SyncGroup
    (NOT_COORDINATOR); later requests get COORDINATOR_NOT_AVAILABLE."""
    state.manager.shutdown()
    state.transactions.shutdown()


async def close_state(state: State, *, fsync: bool = True) -> None:
    """Close the partition logs and the coordinator log. `fsync=False` (reset: the files are deleted
    next) closes without fsyncs and without a snapshot."""
    if fsync:
        await state.data.close()  # partition logs: flush, fsync
        await state.log.close()  # a StorageError here reaches _main: exit code 1
        log.info("storage closed (flushed, fsynced, snapshot written)")
        return
    await state.data.discard()
    await state.log.close(write_snapshot=False)


def abandon_state(state: State) -> None:
    """A crash: the files are closed as they are (no write of what is queued, no fsync, no snapshot)
    and the directory lock is released, so a new server on the directory recovers as after kill -9."""
    state.data.abandon()
    state.log.abandon()


# Where a reset moves the old files: inside the data directory (same file system: a rename), in a
# directory no recovery reads (the coordinator log reads its own suffixes, the partition logs `topics/`).
TRASH = ".reset-trash"


def empty_data_dir(config: Config) -> None:
    """Empty the (unlocked) data directory: the state of a first start. The files are renamed into
    TRASH for `sweep_trash` to delete in a background thread: deleting a hundred partition
    directories took from 10 to 400 ms here (the file system's discards), renaming them microseconds."""
    started = time.perf_counter()
    trash = config.data_dir / TRASH / uuid.uuid4().hex
    trash.mkdir(parents=True)
    for entry in os.scandir(config.data_dir):
        if entry.name != TRASH:
            os.rename(entry.path, trash / entry.name)
    log.debug("data directory emptied in %.1f ms", (time.perf_counter() - started) * 1000)


def sweep_trash(config: Config) -> None:
    """Delete what resets left behind, in a daemon thread (a crash in between leaves it for the next)."""
    trash = config.data_dir / TRASH
    if trash.exists():
        threading.Thread(
            target=shutil.rmtree, args=(trash, True), name="kcoord-reset-trash", daemon=True
        ).start()


def _acl_store(config: Config, record_log: StorageRecordLog) -> AclStore | None:
    """Kafka's authorizer.class.name=StandardAuthorizer with super.users and
    allow.everyone.if.no.acl.found; None (no authorizer, the default) otherwise."""
    if config.authorizer != "standard":
        return None
    authorizer = StandardAuthorizer(config.super_users, config.allow_everyone_if_no_acl_found)
    log.info(
        "authorizer=standard super_users=%s allow_everyone_if_no_acl_found=%s",
        ",".join(config.super_users) or "-",
        config.allow_everyone_if_no_acl_found,
    )
    return AclStore(authorizer, record_log)
