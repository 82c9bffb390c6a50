"""TopicRegistry (apply after durable, pending names, record codec) and AsyncioTimers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from kcoord.broker.timers import AsyncioTimers
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry, TopicTombstone, validate_topic_name
from kcoord.coordinator.metadata.topic_records import (
    decode_topic_key,
    decode_topic_value,
    encode_topic_key,
    encode_topic_value,
)


class _ManualLog:
    def __init__(self) -> None:
        self.pending: list[tuple[Sequence[object], Callable[[BaseException | None], None]]] = []

    def append(self, records: Sequence[object], on_done: Callable[[BaseException | None], None]) -> None:
        self.pending.append((records, on_done))


def test_topic_is_visible_only_once_durable_and_pending_meanwhile() -> None:
    log = _ManualLog()
    registry = TopicRegistry(log)
    done: list[BaseException | None] = []
    registry.create([("t", 3, {})], done.append)
    assert registry.get("t") is None and registry.is_pending("t")
    log.pending.pop()[1](None)
    assert done == [None] and not registry.is_pending("t")
    assert (
        registry.get("t") is not None
        and registry.has_partition("t", 2)
        and not registry.has_partition("t", 3)
    )


def test_failed_write_changes_nothing() -> None:
    log = _ManualLog()
    registry = TopicRegistry(log)
    registry.create([("t", 1, {})], lambda error: None)
    log.pending.pop()[1](OSError("disk full"))
    assert registry.get("t") is None and not registry.is_pending("t")


def test_apply_replays_create_grow_delete() -> None:
    registry = TopicRegistry(_ManualLog())
    record = TopicRecord("x", __import__("uuid").uuid4(), 2)
    registry.apply(record)
    registry.apply(TopicRecord("x", record.topic_id, 5))
    assert registry.get("x") == TopicRecord("x", record.topic_id, 5)
    assert registry.name_for_id(record.topic_id) == "x"
    registry.apply(TopicTombstone("x"))
    assert registry.get("x") is None and registry.name_for_id(record.topic_id) is None


def test_topic_record_round_trip() -> None:
    record = TopicRecord("héllo.topic", __import__("uuid").uuid4(), 12)
    key = encode_topic_key(record.name)
    assert key[:2] == b"\x00\x00"
    assert decode_topic_key(key) == record.name
    assert decode_topic_value(record.name, encode_topic_value(record)) == record


def test_topic_name_rules_are_kafkas() -> None:
    assert validate_topic_name("ok-Topic_1.x") is None
    for bad in ("", ".", "..", "a" * 250, "sp ace", "sl/ash"):
        assert validate_topic_name(bad) is not None


async def test_asyncio_timers_replace_cancel_and_fire() -> None:
    timers = AsyncioTimers(asyncio.get_running_loop())
    fired: list[str] = []
    done = asyncio.Event()
    timers.schedule("a", 50, lambda: fired.append("a-old"))
    timers.schedule("a", 1, lambda: fired.append("a"))
    timers.schedule("b", 1, lambda: fired.append("b"))
    timers.cancel("b")
    timers.cancel("unknown")
    timers.schedule("c", 5, done.set)
    await asyncio.wait_for(done.wait(), 5)
    assert fired == ["a"] and len(timers) == 0


async def test_asyncio_timers_postponed_fire_at_the_latest_deadline_with_the_latest_callback() -> None:
    loop = asyncio.get_running_loop()
    timers = AsyncioTimers(loop)
    fired: list[tuple[str, float]] = []
    start = loop.time()
    timers.schedule("s", 40, lambda: fired.append(("first", loop.time() - start)))
    for i in range(10):  # heartbeats: each moves the deadline later, without a new handle
        await asyncio.sleep(0.01)
        timers.schedule("s", 40, lambda i=i: fired.append((f"beat-{i}", loop.time() - start)))
    await asyncio.sleep(0.02)
    assert fired == [], "postponed: not due yet"
    await asyncio.sleep(0.1)
    assert [name for name, _ in fired] == ["beat-9"]
    assert fired[0][1] >= 0.13  # ~0.1 s of heartbeats, then the 40 ms session
    timers.schedule("x", 1000, lambda: fired.append(("late", 0)))
    timers.schedule("x", 5, lambda: fired.append(("early", 0)))  # earlier: re-armed at once
    timers.schedule("y", 5, lambda: fired.append(("cancelled", 0)))
    timers.schedule("y", 50, lambda: fired.append(("cancelled", 0)))
    timers.cancel("y")
    await asyncio.sleep(0.1)
    assert [name for name, _ in fired] == ["beat-9", "early"] and len(timers) == 0


def test_topic_record_with_configs_round_trips_and_without_stays_version_0() -> None:
    import uuid

    plain = TopicRecord("t", uuid.uuid4(), 3)
    assert encode_topic_value(plain)[:2] == b"\x00\x00"  # readable by a kcoord without configs
    configured = TopicRecord("t", plain.topic_id, 3, (("retention.ms", "1000"), ("segment.bytes", "é1")))
    value = encode_topic_value(configured)
    assert value[:2] == b"\x00\x01"
    assert decode_topic_value("t", value) == configured
    for cut in range(len(value) - 1, 22, -3):
        with pytest.raises(ValueError):
            decode_topic_value("t", value[:cut])
    with pytest.raises(ValueError):
        decode_topic_value("t", value + b"\x00")


def test_topic_record_bytes_follow_the_documented_layout_and_bad_bytes_are_refused() -> None:
    import uuid

    topic_id = uuid.UUID(int=5)
    assert encode_topic_key("ab") == b"\x00\x00\x00\x02ab"
    value = encode_topic_value(TopicRecord("ab", topic_id, 3))
    assert value == b"\x00\x00" + topic_id.bytes + b"\x00\x00\x00\x03"
    for bad in (b"\x00", b"\x00\x01\x00\x02ab", b"\x00\x00\x00\x02abc", b"\x00\x00\x00\x05ab"):
        with pytest.raises(ValueError):
            decode_topic_key(bad)
    with pytest.raises(ValueError):
        decode_topic_value("ab", b"\x00\x00" + topic_id.bytes)


def test_topic_record_versions_carry_the_replication_factor_only_when_not_one() -> None:
    """v0 without configs, v1 with them, v2 for a replication factor other than 1: a directory written
    by this version stays readable by older readers unless it really holds a factor they cannot show."""
    topic_id = __import__("uuid").uuid4()
    plain = TopicRecord("t", topic_id, 3)
    configured = TopicRecord("t", topic_id, 3, (("retention.ms", "1"),))
    replicated = TopicRecord("t", topic_id, 3, (("retention.ms", "1"),), replication_factor=3)
    for record, version in ((plain, 0), (configured, 1), (replicated, 2)):
        value = encode_topic_value(record)
        assert int.from_bytes(value[:2], "big") == version
        assert decode_topic_value("t", value) == record
