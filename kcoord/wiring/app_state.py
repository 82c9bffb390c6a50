"""Everything the server recovers, opened and closed as one bundle, in both modes.

`kcoord/wiring/app.py` opens it once at startup through `open_state(config, backends, services)`: the
backends say where the durable state lives (the data directory: kcoord/wiring/local_backends.py;
PostgreSQL in cluster mode: kcoord/cluster/backends.py). The test controls' `reset()`
(kcoord/wiring/controls/) closes it, empties the data directory and opens a fresh one behind the same
listeners and client connections, and `App.abandon()` drops it as a crash would. The order inside
`open_state` is startup's: the coordinator log is replayed into the group manager, topics, producer
ids, transactions, ACLs, SCRAM credentials and share partitions before the partition stores open and
the timers are armed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from kcoord.broker.markers import CoordinatorMarkers, TxnMarkers
from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.broker.share import ShareEdge
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.acl_store import AclStore
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.metadata.scram_credentials import ScramCredentials
from kcoord.coordinator.share_partitions import SharePartitions
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.storage.faults import FaultPolicy
from kcoord.wiring.backends import CoordinatorLog, Coordinators, Services, StateBackends
from kcoord.wiring.config import Config

__all__ = [
    "State",
    "abandon_state",
    "close_state",
    "empty_data_dir",
    "open_state",
    "share_edge",
    "stop_state",
    "sweep_trash",
]

log = logging.getLogger("kcoord.app")


@dataclass(slots=True)
class State:
    """The recovered state and the storage behind it."""

    log: Any  # storage.Log; cluster mode's stand-in (kcoord/cluster/backends.py)
    manager: GroupManager
    topics: TopicRegistry
    producer_ids: ProducerIds
    transactions: TransactionCoordinator
    data: TopicData
    markers: TxnMarkers
    acls: AclStore[StandardAuthorizer] | None
    credentials: ScramCredentials
    leadership: PartitionLeadership
    summary: str
    share_partitions: SharePartitions | None = None
    """The share partitions' state (KIP-932): replayed from the coordinator log on a single node; on a
    cluster node loaded from PostgreSQL as it takes each partition's lead (kcoord/cluster/share_state.py)."""


def share_edge(state: State, config: Config) -> ShareEdge | None:
    """The share sessions and parked ShareFetches over `state`'s share partitions, plugged in as the
    group side's listener (members leaving, groups deleted); None without share partitions. Built at
    startup and again for the state a test-control reset installs."""
    if state.share_partitions is None:
        return None
    edge = ShareEdge(state.share_partitions, config.group_share_max_share_sessions)
    state.manager.share.listener = edge
    return edge


async def open_state(config: Config, backends: StateBackends, services: Services) -> State:
    """Open the durable state where `backends` keep it and recover it into memory (startup's order)."""
    loop = asyncio.get_running_loop()
    record_log = await backends.coordinator_log()
    # The transaction coordinator's markers go to the partition stores, which open after recovery:
    # the writer is connected to them below.
    coordinator_markers = CoordinatorMarkers(loop)
    coordinators = _coordinators(config, backends, services, record_log, coordinator_markers)
    manager, transactions = coordinators.manager, coordinators.transactions
    if services.metrics is not None:  # rebalance counts and durations, in cluster mode too
        manager.observe_transitions(services.metrics.events)
    # One storage-fault policy for the coordinator log and the partition stores (kcoord/storage/faults.py).
    policy = FaultPolicy(on_fatal=services.on_fatal)
    recovered = await backends.recover(coordinators, policy)
    manager.on_loaded()
    if coordinators.share_partitions is not None:
        coordinators.share_partitions.on_loaded()
    data = await backends.topic_data(coordinators.topics, services.clock, policy)
    data.start_retention(loop)
    markers = TxnMarkers(data, manager)  # WriteTxnMarkers received: written here
    coordinator_markers.attach(backends.marker_writer(data, manager, markers))
    transactions.on_loaded()  # timers armed; transactions found in Prepare* get their markers
    return State(
        recovered.log,
        manager,
        coordinators.topics,
        coordinators.producer_ids,
        transactions,
        data,
        markers,
        coordinators.acls,
        coordinators.credentials,
        backends.leadership(),
        recovered.summary,
        coordinators.share_partitions,
    )


def _coordinators(
    config: Config,
    backends: StateBackends,
    services: Services,
    record_log: CoordinatorLog,
    markers: CoordinatorMarkers,
) -> Coordinators:
    """Every coordinator tenant over the one coordinator log, nothing replayed yet."""
    clock, timers = services.clock, services.timers
    topics = TopicRegistry(record_log)
    phases = backends.phases()
    manager = GroupManager(config.group_config(), clock, timers, record_log, topics=topics, phases=phases)
    producer_ids = backends.producer_ids(record_log)
    # The transaction coordinator: a second tenant of the same log and runtime.
    transactions = TransactionCoordinator(
        config.transaction_config(), clock, timers, record_log, producer_ids, markers, phases=phases
    )
    acls = _acl_store(config, record_log)  # the authorizer (issue 25): only with --authorizer standard
    credentials = ScramCredentials(record_log)
    # The share partitions (issue 34): a third tenant of the log on a single node (phases None); in
    # cluster mode a share partition's state follows its partition's leader, not a group shard: only the
    # partitions this node leads are hosted, their state written fenced by the leader's lease.
    share_log = backends.share_log(record_log, topics)
    shares = SharePartitions(share_log, clock, timers, hosted_only=phases is not None)
    return Coordinators(manager, topics, producer_ids, transactions, acls, credentials, shares)


def stop_state(state: State) -> None:
    """Shutdown's first step: cancel the coordinators' timers, answer parked JoinGroup/SyncGroup
    (NOT_COORDINATOR); later requests get COORDINATOR_NOT_AVAILABLE."""
    state.manager.shutdown()
    state.transactions.shutdown()
    if state.share_partitions is not None:
        state.share_partitions.shutdown()


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


def _acl_store(config: Config, record_log: CoordinatorLog) -> AclStore[StandardAuthorizer] | None:
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
