"""Producer ids for idempotent producers (InitProducerId without a transactional id).

Kafka hands producer ids out of blocks of 1,000 that the controller allocates durably
(`ProducerIdManager` / `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`): a restarted broker takes a new
block, so an id is never handed out twice, and the unused rest of the old block is skipped. We do
the same with one record in the coordinator log (storage record type 5) that holds the end of the
newest block; replay restores it, and the next allocation after a restart starts a new block.

Record: ProducerIdsKey / ProducerIdsValue (`kcoord/protocol/messages/records.py`, the log's table of record
types): key = INT16 version 0 and no fields; value = INT16 version 0 + INT64 block end (exclusive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

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
OnDone = Callable[[BaseException | None], None]


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """Every producer id below `block_end` may have been handed out."""

    block_end: int


class BlockLog(Protocol):
    def append(self, records: Sequence[ProducerIdBlock], on_done: OnDone) -> None: ...


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
        self._log = block_log
        self._next = 0
        self._block_end = 0
        self._waiting: list[Allocated] = []

    def apply(self, record: ProducerIdBlock) -> None:
        """Replay (and a durable new block): ids below the block end are spent after a restart."""
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
        block = ProducerIdBlock(start + BLOCK_SIZE)

        def durable(error: BaseException | None) -> None:
            waiting, self._waiting = self._waiting, []
            if error is not None:
                log.error("producer id block write failed: %s", error)
                for done in waiting:
                    done(None, error)
                return
            self._block_end = block.block_end
            self._next = max(self._next, start)
            log.info("producer id block %d-%d", start, block.block_end - 1)
            for done in waiting:
                if self._next < self._block_end:
                    done(self._take(), None)
                else:  # more waiters than a block holds: the rest wait for the next one
                    self.allocate(done)

        self._log.append([block], durable)
