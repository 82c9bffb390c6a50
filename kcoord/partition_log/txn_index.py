"""The aborted-transaction index of a segment: Kafka's `.txnindex` (`TransactionIndex`, `AbortedTxn`).

One 34-byte entry per aborted transaction that wrote data, in the segment holding its ABORT marker, in
marker order: version INT16 (0), producer id INT64, first offset INT64, last offset INT64 (the
marker's), last stable offset INT64 (the first offset of another producer's transaction still open
when the marker was written, else the marker's offset + 1). A READ_COMMITTED fetch returns the entries
that overlap the range it read (`collectAbortedTxns`), so a consumer can drop the aborted records.

Entries of the active segment live in memory (recovery derives them again from the log, as it does the
dense offset index); a sealed segment's file is written with its other index files (`segment.py`).
Kafka creates the file with its first entry: a segment without aborted transactions has none.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["ENTRY_SIZE", "AbortedTxn", "collect_aborted", "decode_entries", "encode_entries"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # AbortedTxn.TOTAL_SIZE = 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entries(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(_ENTRY.pack(CURRENT_VERSION, *entry) for entry in entries)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """The entries of a `.txnindex` file; ValueError if it is not whole entries of a known version."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"{len(data)} bytes is not a whole number of {ENTRY_SIZE}-byte entries")
    entries = []
    for version, *fields in _ENTRY.iter_unpack(data):
        if version < 0 or version > CURRENT_VERSION:
            raise ValueError(f"unexpected aborted transaction version {version}")
        entries.append(AbortedTxn(*fields))
    return entries


def collect_aborted(
    segments: Iterable[list[AbortedTxn]], fetch_offset: int, upper_bound_offset: int
) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions overlapping [fetch_offset, upper bound),
    searching the segments from the one read until an entry shows that no later transaction can start
    below the bound (`LocalLog.collectAbortedTransactions`, `TransactionIndex.collectAbortedTxns`)."""
    found: list[tuple[int, int]] = []
    for entries in segments:
        for txn in entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append((txn.producer_id, txn.first_offset))
            if txn.last_stable_offset >= upper_bound_offset:
                return found
    return found
