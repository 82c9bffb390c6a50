"""The storage adapter: the coordinators' `RecordLog` port (`coordinator.runtime.ports`: groups,
transactions) and the topic registry's log over `storage.Log`, and the storage settings the
coordinator controls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from kcoord import storage
from kcoord.coordinator.persistence.codec import AnyRecord, to_storage
from kcoord.coordinator.runtime.ports import OnDone
from kcoord.wiring.config import Config

__all__ = ["StorageRecordLog", "storage_config"]


def storage_config(config: Config) -> Any:
    """The storage settings the coordinator controls (`--fsync`, `--history-retention-*`)."""
    return storage.LogConfig(
        fsync_policy=config.fsync,
        history_retention_ms=config.history_retention_ms,
        history_retention_bytes=config.history_retention_bytes,
    )


# -- the RecordLog adapter --------------------------------------------------------------------------
class StorageRecordLog:
    """`coordinator.runtime.RecordLog` (and the topic registry's log) over `storage.Log`.

    `on_done` runs when the append future resolves: the storage writer resolves futures in append
    order, so callbacks keep that order. A failed append reports the `StorageError`; nothing is
    acknowledged before it is durable.
    """

    __slots__ = ("_log", "append_seconds")

    def __init__(self) -> None:
        self._log: Any = None
        # A histogram with `observe(seconds)` and `sampled()` (coordinator.metrics.SampledHistogram)
        # when metrics are on: only the appends it picks are timed.
        self.append_seconds: Any = None

    def attach(self, log_: Any) -> None:
        self._log = log_

    def append(self, records: Sequence[AnyRecord], on_done: OnDone) -> None:
        if self._log is None:
            on_done(storage.StorageError("the log is not open"))
            return
        try:
            future: asyncio.Future[int] = self._log.append([to_storage(r) for r in records])
        except storage.StorageError as exc:  # closed or failed log: report, never raise into the caller
            on_done(exc)
            return
        if (histogram := self.append_seconds) is None or not histogram.sampled():
            future.add_done_callback(lambda f: on_done(_outcome(f)))
            return
        started = time.perf_counter()

        def timed(f: asyncio.Future[int]) -> None:
            histogram.observe(time.perf_counter() - started)
            on_done(_outcome(f))

        future.add_done_callback(timed)


def _outcome(future: asyncio.Future[int]) -> BaseException | None:
    if future.cancelled():
        return storage.StorageError("append cancelled")
    return future.exception()
