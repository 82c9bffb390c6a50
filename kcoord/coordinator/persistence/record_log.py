"""The storage adapter: the coordinators' `RecordLog` port (`coordinator.runtime.ports`: groups,
transactions and the metadata tenant's stores) over `storage.Log`. The storage settings the server's
flags choose are the wiring's (`storage_config`, kcoord/wiring/local_backends.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from kcoord import storage
from kcoord.coordinator.persistence.codec import AnyRecord, to_storage
from kcoord.coordinator.runtime.ports import OnDone

__all__ = ["StorageRecordLog"]


# -- the RecordLog adapter --------------------------------------------------------------------------
class StorageRecordLog:
    """`coordinator.runtime.RecordLog` over `storage.Log`, for every tenant of the coordinator log.

    `on_done` runs when the append future resolves: the storage writer resolves futures in append
    order, so callbacks keep that order. A failed append reports the `StorageError`; nothing is
    acknowledged before it is durable.
    """

    __slots__ = ("_log", "append_seconds", "on_durable")

    def __init__(self) -> None:
        self._log: Any = None
        # Told every durable write as (storage records, their LSNs), in log order, before the writer's
        # on_done: the `__consumer_offsets` view (kcoord/broker/topics/offsets_topic.py). None: nobody.
        self.on_durable: Callable[[Sequence[storage.Record], Sequence[int]], None] | None = None
        # A histogram with `observe(seconds)` and `sampled()` (kcoord.wiring.metrics.SampledHistogram)
        # when metrics are on: only the appends it picks are timed.
        self.append_seconds: Any = None

    def attach(self, log_: Any) -> None:
        self._log = log_

    def append(self, records: Sequence[AnyRecord], on_done: OnDone) -> None:
        if self._log is None:
            on_done(storage.StorageError("the log is not open"))
            return
        stored = [to_storage(r) for r in records]
        try:
            future: asyncio.Future[int] = self._log.append(stored)
        except storage.StorageError as exc:  # closed or failed log: report, never raise into the caller
            on_done(exc)
            return
        # The listener is looked up when the write is durable: one set meanwhile (the view is built on
        # first use) still hears of the writes that were in flight when it was set.
        future.add_done_callback(lambda f: self._tell(stored, f))
        if (histogram := self.append_seconds) is None or not histogram.sampled():
            future.add_done_callback(lambda f: on_done(_outcome(f)))
            return
        started = time.perf_counter()

        def timed(f: asyncio.Future[int]) -> None:
            histogram.observe(time.perf_counter() - started)
            on_done(_outcome(f))

        future.add_done_callback(timed)

    def _tell(self, stored: Sequence[storage.Record], future: asyncio.Future[int]) -> None:
        """The LSNs of a durable write: consecutive, ending at the future's, except that a write of
        several records ends with its batch-end record (`storage.Log._encode`)."""
        if (listener := self.on_durable) is None or future.cancelled() or future.exception() is not None:
            return
        count = len(stored)
        first = future.result() - count - (1 if count > 1 else 0) + 1
        listener(stored, range(first, first + count))


def _outcome(future: asyncio.Future[int]) -> BaseException | None:
    if future.cancelled():
        return storage.StorageError("append cancelled")
    return future.exception()
