"""OffsetCommit, OffsetFetch and OffsetDelete in every state (reference §3.3, §5.4, §5.5, §5.9)."""

from __future__ import annotations

import pytest

from kcoord.coordinator.groups import GroupState, OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.groups.offsets import OffsetStore
from tests.unit.conftest import Harness
from tests.unit.fakes import Reply

NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86


def _errors(reply) -> list[int]:  # type: ignore[no-untyped-def]
    return [p["error_code"] for t in reply["topics"] for p in t["partitions"]]


def _offset(h: Harness, topic: str = "t", partition: int = 0, group: str = "g") -> int:
    r = h.fetch({topic: [partition]}, group=group)
    return int(r["topics"][0]["partitions"][0]["committed_offset"])


# -- OffsetCommit --------------------------------------------------------------------------------
def test_simple_commit_creates_an_offset_only_empty_group(h: Harness) -> None:
    r = h.commit({("t", 0): 5, ("t", 1): 6, ("u", 0): 7})
    assert _errors(r) == [NONE, NONE, NONE]
    assert h.state() is GroupState.EMPTY and h.mgr.group("g").protocol_type is None
    assert _offset(h, "t", 1) == 6
    record = h.log.records[0]
    assert isinstance(record, OffsetCommitRecord) and record.metadata == "m" and record.leader_epoch == 3


def test_member_commit_in_empty_group_is_unknown_member(h: Harness) -> None:
    h.commit({("t", 0): 1})
    assert _errors(h.commit({("t", 0): 2}, member_id="m", generation=0)) == [UNKNOWN_MEMBER_ID]


def test_commit_to_missing_group_with_generation_is_illegal_generation_before_v9(h: Harness) -> None:
    assert _errors(h.commit({("t", 0): 1}, member_id="m", generation=1, version=8)) == [ILLEGAL_GENERATION]
    assert _errors(h.commit({("t", 0): 1}, member_id="m", generation=1, version=9)) == [GROUP_ID_NOT_FOUND]
    assert h.mgr.group("g") is None


def test_member_commit_in_preparing_rebalance_is_accepted_and_refreshes_session(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    h.join(ids[0])
    h.advance(5_000)
    assert _errors(h.commit({("t", 0): 9}, member_id=ids[1], generation=gen)) == [NONE]
    assert h.timers.deadline(f"session:g:{ids[1]}") == h.clock.now_ms() + 10_000


def test_member_commit_in_completing_rebalance_is_rebalance_in_progress(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    assert h.state() is GroupState.COMPLETING_REBALANCE
    assert _errors(h.commit({("t", 0): 1}, member_id=ids[1], generation=h.generation())) == [
        REBALANCE_IN_PROGRESS
    ]


def test_member_commit_in_stable_is_accepted(h: Harness) -> None:
    ids = h.stable_group(2)
    assert _errors(h.commit({("t", 0): 3}, member_id=ids[1], generation=h.generation())) == [NONE]
    assert _offset(h) == 3


def test_simple_commit_to_non_empty_group_is_unknown_member(h: Harness) -> None:
    h.stable_group(1)
    assert _errors(h.commit({("t", 0): 3})) == [UNKNOWN_MEMBER_ID]


def test_commit_with_stale_generation_or_unknown_member_or_fenced_instance(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    assert _errors(h.commit({("t", 0): 1}, member_id=ids[1], generation=gen - 1)) == [ILLEGAL_GENERATION]
    assert _errors(h.commit({("t", 0): 1}, member_id="nobody", generation=gen)) == [UNKNOWN_MEMBER_ID]
    assert _errors(h.commit({("t", 0): 1}, member_id=ids[1], generation=gen, iid="x")) == [UNKNOWN_MEMBER_ID]


def test_commit_from_replaced_static_member_is_fenced(h: Harness) -> None:
    a = h.join(iid="s")
    h.settle(a)
    h.sync(a["member_id"], a["generation_id"], {}, iid="s")
    h.join(iid="s")
    errors = _errors(
        h.commit({("t", 0): 1}, member_id=a["member_id"], generation=a["generation_id"], iid="s")
    )
    assert errors == [FENCED_INSTANCE_ID]


def test_too_large_metadata_fails_only_that_partition(h: Harness) -> None:
    big = "x" * 4097
    r = h.commit({("t", 0): 1}, metadata=big)
    assert _errors(r) == [OFFSET_METADATA_TOO_LARGE]
    r = h.commit({("t", 0): 1, ("t", 1): 2}, metadata="ok")
    assert _errors(r) == [NONE, NONE]


def test_null_metadata_is_stored_as_empty_string(h: Harness) -> None:
    h.commit({("t", 0): 1}, metadata=None)
    assert h.fetch({"t": [0]})["topics"][0]["partitions"][0]["metadata"] == ""


def test_commit_with_empty_group_id_is_accepted(h: Harness) -> None:
    # GroupCoordinatorService.commitOffsets: "for backwards compatibility" only null is invalid
    assert _errors(h.commit({("t", 0): 1}, group="")) == [NONE]


def test_commit_while_loading_is_load_in_progress() -> None:
    h = Harness(loaded=False)
    assert _errors(h.commit({("t", 0): 1})) == [COORDINATOR_LOAD_IN_PROGRESS]


def test_commit_v2_to_v4_with_retention_persists_an_expire_timestamp(h: Harness) -> None:
    h.commit({("t", 0): 1}, version=2, retention_ms=60_000)
    h.commit({("t", 1): 1}, version=5, retention_ms=-1)
    first, second = h.log.of_type(OffsetCommitRecord)
    assert first.expire_timestamp_ms == first.commit_timestamp_ms + 60_000
    assert second.expire_timestamp_ms == -1


# -- OffsetFetch ---------------------------------------------------------------------------------
def test_fetch_from_missing_group_returns_minus_one_without_error(h: Harness) -> None:
    r = h.fetch({"t": [0, 1]}, group="missing")
    assert r.error == NONE
    assert r["topics"][0]["partitions"][1] == {
        "partition_index": 1,
        "committed_offset": -1,
        "metadata": "",
        "error_code": 0,
        "committed_leader_epoch": -1,
    }


def test_fetch_with_null_topics_returns_every_committed_offset(h: Harness) -> None:
    h.commit({("t", 1): 5, ("t", 0): 4, ("u", 0): 7})
    r = h.fetch(None)
    assert [
        (t["name"], [(p["partition_index"], p["committed_offset"]) for p in t["partitions"]])
        for t in r["topics"]
    ] == [("t", [(0, 4), (1, 5)]), ("u", [(0, 7)])]
    assert h.fetch(None, group="missing")["topics"] == []


def test_fetch_works_in_every_group_state(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    h.commit({("t", 0): 11}, member_id=ids[0], generation=gen)
    assert _offset(h) == 11  # Stable
    h.join(ids[0])
    assert _offset(h) == 11  # PreparingRebalance
    h.join(ids[1])
    assert h.state() is GroupState.COMPLETING_REBALANCE and _offset(h) == 11


def test_fetch_v8_batches_groups_each_with_its_own_result(h: Harness) -> None:
    h.commit({("t", 0): 1}, group="a")
    req = {
        "groups": [
            {"group_id": "a", "topics": None},
            {"group_id": "", "topics": None},
            {"group_id": "b", "topics": [{"name": "t", "partition_indexes": [0]}]},
        ],
        "require_stable": True,
    }
    r = h.call("offset_fetch", req, 8)
    a, empty, b = r["groups"]
    assert a["error_code"] == 0 and a["topics"][0]["partitions"][0]["committed_offset"] == 1
    assert empty["error_code"] == 0 and empty["topics"] == []  # "" is a group (with no offsets)
    assert b["error_code"] == 0 and b["topics"][0]["partitions"][0]["committed_offset"] == -1


def test_fetch_v1_copies_group_error_into_partitions_and_v2_uses_top_level() -> None:
    h = Harness(loaded=False)
    v1 = h.call("offset_fetch", {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}, 1)
    partition = v1["topics"][0]["partitions"][0]
    assert "error_code" not in v1.value and partition["error_code"] == COORDINATOR_LOAD_IN_PROGRESS
    assert "committed_leader_epoch" not in v1["topics"][0]["partitions"][0]
    v2 = h.call("offset_fetch", {"group_id": "g", "topics": None}, 2)
    assert v2.error == COORDINATOR_LOAD_IN_PROGRESS and v2["topics"] == []


@pytest.mark.parametrize("version", [7, 8])
def test_fetch_require_stable_waits_for_the_commits_in_flight(h: Harness, version: int) -> None:
    # Java's GroupCoordinatorService.fetchOffsets: a require_stable fetch is a write operation,
    # answered once the writes before it are durable; never UNSTABLE_OFFSET_COMMIT without transactions
    h.commit({("t", 0): 1})
    h.log.hold = True
    commit = h.commit({("t", 0): 2})
    plain = h.fetch({"t": [0]}, version=version)
    stable = h.fetch({"t": [0]}, version=version, require_stable=True)
    other_group = h.fetch({"t": [0]}, group="other", version=version, require_stable=True)
    assert not commit.done and not stable.done and other_group.done
    answer = plain.value if version < 8 else plain["groups"][0]
    assert answer["topics"][0]["partitions"][0]["committed_offset"] == 1  # durable state only
    h.log.release()
    assert commit.done and stable.done
    answer = stable.value if version < 8 else stable["groups"][0]
    assert answer["error_code"] == NONE and answer["topics"][0]["partitions"][0]["committed_offset"] == 2


def test_fetch_require_stable_is_answered_after_a_failed_commit_too(h: Harness) -> None:
    h.commit({("t", 0): 1})
    h.log.hold = True
    h.commit({("t", 0): 2})
    stable = h.fetch({"t": [0]}, require_stable=True)
    h.log.release(OSError("disk"))
    assert stable.done and stable["topics"][0]["partitions"][0]["committed_offset"] == 1


def _stable_offset(reply: Reply) -> int:
    assert reply.done and reply["error_code"] == NONE
    return int(reply["topics"][0]["partitions"][0]["committed_offset"])


def test_fetch_require_stable_waits_for_an_offset_delete_in_flight(h: Harness) -> None:
    # GroupCoordinatorService.fetchOffsets (a write operation) is answered after every earlier
    # write is durable, OffsetMetadataManager.deleteOffsets' tombstones included.
    h.commit({("t", 0): 1})
    h.log.hold = True
    deleted = _offset_delete(h, {"t": [0]})
    stable = h.fetch({"t": [0]}, require_stable=True)
    assert not deleted.done and not stable.done
    assert _offset(h) == 1  # a plain fetch answers from durable state at once
    h.log.release()
    assert deleted.done and _stable_offset(stable) == -1


def test_fetch_require_stable_waits_for_a_delete_groups_in_flight(h: Harness) -> None:
    h.commit({("t", 0): 1})
    h.log.hold = True
    deleted = h.delete_groups("g")
    stable = h.fetch(None, version=8, require_stable=True)
    assert not deleted.done and not stable.done
    h.log.release()
    assert deleted.done and stable.done and stable["groups"][0]["topics"] == []


def test_fetch_require_stable_waits_for_an_offset_expiry_in_flight() -> None:
    h = Harness(offsets_retention_ms=1_000, offsets_retention_check_interval_ms=5_000)
    h.commit({("t", 0): 1})
    h.log.hold = True
    h.advance(5_000)  # the retention pass writes the offset's tombstone (and the group's)
    assert h.log.held == 1
    stable = h.fetch({"t": [0]}, require_stable=True)
    assert not stable.done
    h.log.release()
    assert _stable_offset(stable) == -1


def test_fetch_require_stable_answers_from_the_state_a_failed_tombstone_left(h: Harness) -> None:
    h.commit({("t", 0): 1})
    h.log.hold = True
    _offset_delete(h, {"t": [0]})
    stable = h.fetch({"t": [0]}, require_stable=True)
    h.log.release(OSError("disk"))
    assert _stable_offset(stable) == 1


def test_fetch_require_stable_does_not_wait_for_writes_after_it(h: Harness) -> None:
    # A write operation waits only for the writes before it, so commits that keep coming behind a
    # require_stable fetch do not hold it back.
    h.log.hold = True
    h.commit({("t", 0): 1})
    stable = h.fetch({"t": [0]}, require_stable=True)
    later = h.commit({("t", 0): 2})
    h.log.release_first()
    assert _stable_offset(stable) == 1 and not later.done
    h.log.release()
    assert later.done and _offset(h) == 2


def test_offset_store_when_settled_waits_for_the_latest_earlier_write_of_its_groups() -> None:
    store, woken = OffsetStore(), []
    a1 = store.begin_write(["a"])
    both = store.begin_write(["a", "b"])
    c = store.begin_write(["c"])
    store.when_settled(["b", "x"], lambda: woken.append("b"))
    store.when_settled(["c"], lambda: woken.append("c"))
    store.when_settled(["x"], lambda: woken.append("x"))  # nothing in flight: at once
    later = store.begin_write(["b"])  # after the fetch: not waited for
    store.end_write(a1, ["a"])
    assert woken == ["x"]
    store.end_write(both, ["a", "b"])
    assert woken == ["x", "b"]
    store.end_write(c, ["c"])
    store.end_write(later, ["b"])
    assert woken == ["x", "b", "c"]
    store.when_settled(["a", "b", "c"], lambda: woken.append("none"))
    assert woken[-1] == "none"


# -- OffsetDelete --------------------------------------------------------------------------------
def _offset_delete(h: Harness, topics: dict[str, list[int]], group: str = "g") -> Reply:
    return h.offset_delete(topics, group=group)


def test_offset_delete_in_empty_group_deletes_and_writes_tombstones(h: Harness) -> None:
    h.commit({("t", 0): 1, ("t", 1): 2})
    r = _offset_delete(h, {"t": [0, 5]})
    assert r.error == NONE and _errors(r) == [NONE, NONE]
    assert h.log.of_type(OffsetTombstone) == [OffsetTombstone("g", "t", 0)]  # only existing offsets
    assert _offset(h, "t", 0) == -1 and _offset(h, "t", 1) == 2


def test_offset_delete_in_stable_consumer_group_refuses_subscribed_topics(h: Harness) -> None:
    ids = h.stable_group(2)  # subscribed to "t"
    h.commit({("t", 0): 1, ("other", 0): 2}, member_id=ids[0], generation=h.generation())
    r = _offset_delete(h, {"t": [0], "other": [0]})
    assert r.error == NONE and _errors(r) == [GROUP_SUBSCRIBED_TO_TOPIC, NONE]
    assert _offset(h, "t") == 1 and _offset(h, "other") == -1


def test_offset_delete_in_rebalancing_consumer_group_checks_subscriptions(h: Harness) -> None:
    ids = h.stable_group(2)
    h.commit({("t", 0): 1}, member_id=ids[0], generation=h.generation())
    h.join(ids[0])
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert _errors(_offset_delete(h, {"t": [0]})) == [GROUP_SUBSCRIBED_TO_TOPIC]
    h.join(ids[1])
    assert h.state() is GroupState.COMPLETING_REBALANCE
    assert _errors(_offset_delete(h, {"t": [0]})) == [GROUP_SUBSCRIBED_TO_TOPIC]


def test_offset_delete_in_non_empty_non_consumer_group_is_non_empty_group(h: Harness) -> None:
    h.stable_group(1, protocol_type="connect")
    r = _offset_delete(h, {"t": [0]})
    assert r.error == NON_EMPTY_GROUP and r["topics"] == []


def test_offset_delete_for_missing_group_is_group_id_not_found(h: Harness) -> None:
    assert _offset_delete(h, {"t": [0]}, group="missing").error == GROUP_ID_NOT_FOUND


def test_offset_delete_refuses_an_empty_group_id_before_loading_and_after_inactive() -> None:
    # GroupCoordinatorService.deleteOffsets: not active, then "" (isGroupIdNotEmpty), then the runtime
    h = Harness(loaded=False)
    assert _offset_delete(h, {"t": [0]}, group="").error == INVALID_GROUP_ID
    assert _offset_delete(h, {"t": [0]}).error == COORDINATOR_LOAD_IN_PROGRESS
    h.mgr.on_loaded()
    h.mgr.shutdown()
    assert _offset_delete(h, {"t": [0]}, group="").error == COORDINATOR_NOT_AVAILABLE


def test_metadata_limit_counts_utf16_code_units_as_java_string_length(h: Harness) -> None:
    # OffsetMetadataManager: metadata.length() > offset.metadata.max.bytes (4096 by default)
    wide = "\N{GRINNING FACE}"  # outside the BMP: one str character, two UTF-16 units, four UTF-8 bytes
    assert _errors(h.commit({("t", 0): 1}, metadata=wide * 2048)) == [NONE]
    assert _errors(h.commit({("t", 0): 1}, metadata=wide * 2048 + "x")) == [OFFSET_METADATA_TOO_LARGE]
    assert _errors(h.commit({("t", 0): 1}, metadata="\u00e9" * 4096)) == [NONE]  # BMP: one unit each


def test_offset_delete_after_a_commit_in_flight_deletes_that_commit_too(h: Harness) -> None:
    # Java's coordinator applies a commit when it is written, so the OffsetDelete behind it sees it
    # (OffsetMetadataManager.deleteOffsets over the timeline state, not only the committed one).
    h.log.hold = True
    commit = h.commit({("t", 0): 1})
    deleted = _offset_delete(h, {"t": [0]})
    h.log.release()
    assert commit.done and _errors(commit) == [NONE]
    assert deleted.error == NONE and _errors(deleted) == [NONE]
    assert h.log.of_type(OffsetTombstone) == [OffsetTombstone("g", "t", 0)]
    assert _offset(h, "t", 0) == -1
