"""Test doubles for the pure group logic: an in-memory RecordLog and a respond recorder."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.coordinator.groups.records import LogRecord


class MemoryRecordLog:
    """RecordLog that keeps durable records in a list; it can hold `on_done` or fail appends."""

    def __init__(self) -> None:
        self.records: list[LogRecord] = []
        self.batches: list[list[LogRecord]] = []
        self.hold = False
        self.fail_with: BaseException | None = None
        self._held: list[tuple[list[LogRecord], Callable[[BaseException | None], None]]] = []

    def append(self, records: Sequence[LogRecord], on_done: Callable[[BaseException | None], None]) -> None:
        batch = list(records)
        self.batches.append(batch)
        if self.hold:
            self._held.append((batch, on_done))
            return
        self._finish(batch, on_done, self.fail_with)

    def _finish(
        self,
        batch: list[LogRecord],
        on_done: Callable[[BaseException | None], None],
        error: BaseException | None,
    ) -> None:
        if error is None:
            self.records.extend(batch)
        on_done(error)

    @property
    def held(self) -> int:
        return len(self._held)

    def release(self, error: BaseException | None = None) -> None:
        """Complete every held append, in order, with `error` (None = durable)."""
        held, self._held = self._held, []
        self.hold = False
        for batch, on_done in held:
            self._finish(batch, on_done, error)

    def release_first(self, count: int = 1) -> None:
        """Complete the oldest `count` held appends, in order, as durable; the rest stay held."""
        held, self._held = self._held[:count], self._held[count:]
        for batch, on_done in held:
            self._finish(batch, on_done, None)

    def of_type(self, kind: type) -> list[Any]:
        return [r for r in self.records if isinstance(r, kind)]


class Reply:
    """A `respond` callback that asserts it is called at most once."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []

    def __call__(self, response: dict[str, Any]) -> None:
        assert not self.responses, f"respond called twice: {self.responses[0]} then {response}"
        self.responses.append(response)

    @property
    def done(self) -> bool:
        return bool(self.responses)

    @property
    def value(self) -> dict[str, Any]:
        assert self.responses, "no response yet"
        return self.responses[0]

    @property
    def error(self) -> int:
        return int(self.value["error_code"])

    def __getitem__(self, key: str) -> Any:
        return self.value[key]


def subscription(*topics: str, version: int = 0) -> bytes:
    """ConsumerProtocolSubscription v0 bytes (version, topics, null user data)."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)
