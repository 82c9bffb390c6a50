"""The node's `RecordLog` in cluster mode: each append goes to the log of the shard its records
belong to (`shard_log.shard_key`), cluster-wide records to `kcoord_metadata`.

The node keeps one GroupManager and one TransactionCoordinator, as a single node does; only their
log changes. An append whose records span several shards (a transaction marker for the groups of a
producer, offset expiry, DeleteTopics' offset tombstones) is split into one append per shard and
answered once all of them settled, with the first error: each shard's part is atomic, as each
`__consumer_offsets` partition's part of a Kafka marker is. A record for a shard this node does not
serve is refused (NOT_COORDINATOR to the client: `groups/errors.py` maps every append failure).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.cluster.shard_log import ShardLogFailed, ShardRecordLog, shard_key
from kcoord.coordinator.persistence.codec import AnyRecord
from kcoord.coordinator.runtime.ports import OnDone, RecordLog
from kcoord.coordinator.runtime.shards import shard_of

# Every commit asks for its group's shard twice on a node (the edge's refusal check, then the
# routing of its records); the Java string hash in Python was 6% of a node's CPU under a commit
# load (py-spy, issue 35). Group ids repeat, so a bounded memo answers almost all of them.
shard_for = functools.lru_cache(maxsize=1 << 16)(shard_of)

__all__ = ["NotServed", "RoutingRecordLog", "shard_for"]


class NotServed(ShardLogFailed):
    """The record's shard is not served by this node (not owned, loading elsewhere, draining)."""

    def __init__(self, shard: int) -> None:
        super().__init__(shard, "not served by this node")


class RoutingRecordLog:
    """`RecordLog` over the node's shard logs (`logs(shard)`, None when not served) and `metadata`."""

    def __init__(
        self,
        num_shards: int,
        logs: Callable[[int], ShardRecordLog | None],
        metadata: RecordLog[Any],
        on_failure: Callable[[int, ShardRecordLog], None],
    ) -> None:
        self._num_shards = num_shards
        self._logs = logs
        self._metadata = metadata
        self._on_failure = on_failure

    def append(self, records: Sequence[AnyRecord], on_done: OnDone) -> None:
        parts: dict[int | None, list[AnyRecord]] = {}
        for record in records:
            key = shard_key(record)
            parts.setdefault(None if key is None else shard_for(key, self._num_shards), []).append(record)
        if len(parts) <= 1:
            for target, part in parts.items():
                self._send(target, part, on_done)
                return
            asyncio.get_running_loop().call_soon(on_done, None)
            return
        self._send_all(parts, on_done)

    def _send_all(self, parts: dict[int | None, list[AnyRecord]], on_done: OnDone) -> None:
        remaining = len(parts)
        first_error: list[BaseException] = []

        def one_done(error: BaseException | None) -> None:
            nonlocal remaining
            remaining -= 1
            if error is not None and not first_error:
                first_error.append(error)
            if remaining == 0:
                on_done(first_error[0] if first_error else None)

        for target, part in parts.items():
            self._send(target, part, one_done)

    def _send(self, shard: int | None, records: list[AnyRecord], on_done: OnDone) -> None:
        if shard is None:
            self._metadata.append(records, on_done)
            return
        shard_log = self._logs(shard)
        if shard_log is None:
            asyncio.get_running_loop().call_soon(on_done, NotServed(shard))
            return

        def done(error: BaseException | None) -> None:
            if error is not None and shard_log.failure is not None:
                self._on_failure(shard, shard_log)
            on_done(error)

        shard_log.append(records, done)
