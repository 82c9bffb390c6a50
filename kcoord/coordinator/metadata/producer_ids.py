"""Producer ids for idempotent producers (InitProducerId without a transactional id).

Kafka hands producer ids out of blocks of 1,000 that the controller allocates durably
(`ProducerIdManager` / `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`): a restarted broker takes a new
block, so an id is never handed out twice, and the unused rest of the old block is skipped. We do
the same with one record in the coordinator log (storage record type 5) that holds the end of the
newest block; replay restores it, and the next allocation after a restart starts a new block.
A new block is written through the metadata tenant's runtime (`CoordinatorRuntime.run`) and taken
into use by `apply`, the path replay uses; an allocation waits only when a new block must be written.

Record: ProducerIdsKey / ProducerIdsValue (`kcoord/protocol/messages/records.py`, the log's table of record
types): key = INT16 version 0 and no fields; value = INT16 version 0 + INT64 block end (exclusive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kcoord.coordinator.runtime import CoordinatorRuntime, RecordLog, Write
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages.records import (
    PRODUCER_IDS_KEY,
    PRODUCER_IDS_RECORD_TYPE,
    PRODUCER_IDS_VALUE,
    decode_exact,
    encode_versioned,
)

__all__ = [
    "BLOCK_SIZE",
    "PRODUCER_IDS_RECORD_TYPE",
    "BlockLog",
    "ProducerIdBlock",
    "ProducerIds",
    "decode_block_value",
    "encode_block_key",
    "encode_block_value",
]

log = logging.getLogger("kcoord.producer_ids")

BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
_VERSION = 0

Allocated = Callable[[int | None, BaseException | None], None]  # (producer id, error)


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """Every producer id below `block_end` may have been handed out."""

    block_end: int


BlockLog = RecordLog[ProducerIdBlock]


def encode_block_key() -> bytes:
    return encode_versioned(PRODUCER_IDS_KEY, _VERSION, {})


def encode_block_value(record: ProducerIdBlock) -> bytes:
    return encode_versioned(PRODUCER_IDS_VALUE, _VERSION, {"block_end": record.block_end})


def decode_block_value(value: bytes) -> ProducerIdBlock:
    try:
        return ProducerIdBlock(decode_exact(PRODUCER_IDS_VALUE, value)["block_end"])
    except DecodeError as exc:
        raise ValueError(f"bad producer id block value ({len(value)} bytes): {exc}") from None


class ProducerIds:
    """Allocates producer ids; a new block is durable before any id of it is handed out."""

    def __init__(self, block_log: BlockLog) -> None:
        self.runtime: CoordinatorRuntime[ProducerIdBlock] = CoordinatorRuntime(block_log)
        self.runtime.apply = self.apply
        self._next = 0
        self._block_end = 0
        self._waiting: list[Allocated] = []
        self._writing: ProducerIdBlock | None = None
        """The block this node is writing: once durable its ids are this node's to hand out."""

    def apply(self, record: ProducerIdBlock) -> None:
        """Replay: ids below the block end are spent (an earlier run may have handed them out). The
        block this node just wrote (the runtime's apply, once durable) is its own: its ids are
        handed out from its start."""
        if record is self._writing:
            self._next = max(self._next, record.block_end - BLOCK_SIZE)
            self._block_end = max(self._block_end, record.block_end)
        else:
            self._next = self._block_end = max(self._block_end, record.block_end)

    def continue_after(self, previous: ProducerIds) -> None:
        """Hand out only ids above every id `previous` could have handed out (a test-control reset):
        Kafka never gives one producer id to two producers, and a client kept across a reset still
        sends with its old id."""
        self._next = self._block_end = max(self._block_end, previous._block_end)

    def allocate(self, done: Allocated) -> None:
        """Calls `done(producer_id, None)`, at once if the current block has ids left."""
        if self._next < self._block_end and not self._waiting:
            done(self._take(), None)
            return
        self._waiting.append(done)
        if len(self._waiting) == 1:
            self._write_block()

    def _take(self) -> int:
        producer_id = self._next
        self._next += 1
        return producer_id

    def _write_block(self) -> None:
        start = self._block_end
        block = self._writing = ProducerIdBlock(start + BLOCK_SIZE)

        def answer(error: BaseException | None) -> None:
            self._writing = None
            if error is not None:
                log.error("producer id block write failed: %s", error)
                self._fail_waiting(error)
                return
            log.info("producer id block %d-%d", start, block.block_end - 1)
            self._serve_waiting()

        self.runtime.run(Write([block], answer))

    def _fail_waiting(self, error: BaseException) -> None:
        """No new block: every allocation waiting for one fails with the error."""
        waiting, self._waiting = self._waiting, []
        for done in waiting:
            done(None, error)

    def _serve_waiting(self) -> None:
        """A new block is in use: hand its ids to the allocations that waited for it."""
        waiting, self._waiting = self._waiting, []
        for done in waiting:
            if self._next < self._block_end:
                done(self._take(), None)
            else:  # more waiters than a block holds: the rest wait for the next one
                self.allocate(done)
