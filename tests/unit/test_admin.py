"""DescribeGroups, ListGroups and DeleteGroups in every state (reference §3.3, §5.6-5.8)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kcoord.broker.apis import describe_groups, list_groups
from kcoord.broker.context import RequestMeta
from kcoord.coordinator.groups import GroupState, GroupTombstone, OffsetTombstone
from tests.unit.conftest import Harness
from tests.unit.fakes import Reply

NONE = 0
INVALID_GROUP_ID = 24
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69


def _describe(h: Harness, *groups: str, version: int = 5, ops: bool = False) -> list[dict[str, Any]]:
    # through the door (broker/apis/describe_groups.py), which builds the version's response
    reply = Reply()
    req = {"groups": list(groups), "include_authorized_operations": ops}
    meta = RequestMeta(version, "c", "/127.0.0.1")
    describe_groups.handle(SimpleNamespace(manager=h.mgr, authorizer=None), req, meta, reply)  # type: ignore[arg-type]
    return list(reply["groups"])


def _list(
    h: Harness, version: int = 5, states: list[str] | None = None, types: list[str] | None = None
) -> dict[str, Any]:
    # through the door (broker/apis/list_groups.py), which builds the version's response
    reply = Reply()
    req = {"states_filter": states or [], "types_filter": types or []}
    list_groups.handle(
        SimpleNamespace(manager=h.mgr, authorizer=None), req, RequestMeta(version, "c", "/127.0.0.1"), reply
    )  # type: ignore[arg-type]
    return reply.value


def _delete(h: Harness, *groups: str) -> list[tuple[str, int]]:
    r = h.delete_groups(*groups)
    return [(x["group_id"], x["error_code"]) for x in r["results"]]


# -- DescribeGroups ------------------------------------------------------------------------------
def test_describe_empty_group(h: Harness) -> None:
    ids = h.stable_group(1)
    h.leave(ids[0])
    (g,) = _describe(h, "g")
    assert g["group_state"] == "Empty" and g["members"] == [] and g["protocol_type"] == "consumer"
    assert g["protocol_data"] == "" and g["error_code"] == NONE


def test_describe_preparing_rebalance_shows_members_without_metadata(h: Harness) -> None:
    # Kafka 4's ClassicGroupMember.describeNoMetadata: no metadata, the last assignment kept.
    ids = h.stable_group(2)
    h.join(ids[0])
    (g,) = _describe(h, "g")
    assert g["group_state"] == "PreparingRebalance" and g["protocol_data"] == ""
    assert {m["member_id"] for m in g["members"]} == set(ids)
    assert all(m["member_metadata"] == b"" for m in g["members"])
    assert {m["member_id"]: m["member_assignment"] for m in g["members"]} == {i: i.encode() for i in ids}


def test_describe_completing_rebalance_shows_members_without_metadata(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    (g,) = _describe(h, "g")
    assert g["group_state"] == "CompletingRebalance" and g["protocol_data"] == ""
    # The previous generation's assignment until SyncGroup replaces it (Kafka 4's initNextGeneration
    # does not clear it; only a rebalance begun while completing does).
    assert all(m["member_metadata"] == b"" for m in g["members"])
    assert {m["member_id"]: m["member_assignment"] for m in g["members"]} == {i: i.encode() for i in ids}


def test_describe_stable_group_is_complete(h: Harness) -> None:
    ids = h.stable_group(2)
    (g,) = _describe(h, "g", version=4)
    assert g["group_state"] == "Stable" and g["protocol_type"] == "consumer" and g["protocol_data"] == "range"
    member = next(m for m in g["members"] if m["member_id"] == ids[1])
    assert member["client_id"] == "c1" and member["client_host"] == "/127.0.0.1"
    assert member["member_assignment"] == ids[1].encode() and member["member_metadata"].startswith(
        b"\x00\x00"
    )
    assert member["group_instance_id"] is None and g["authorized_operations"] == -(2**31)


def test_describe_missing_group_is_dead_before_v6_and_not_found_from_v6(h: Harness) -> None:
    (old,) = _describe(h, "missing", version=5)
    assert old["error_code"] == NONE and old["group_state"] == "Dead" and old["members"] == []
    (new,) = _describe(h, "missing", version=6)
    # GroupMetadataManager.describeGroups (v6+): GROUP_ID_NOT_FOUND with its message, state still Dead
    assert new["error_code"] == GROUP_ID_NOT_FOUND and new["error_message"] and new["group_state"] == "Dead"


def test_describe_keeps_request_order_and_describes_the_empty_id_like_any_group(h: Harness) -> None:
    # GroupCoordinatorService.describeGroups refuses only a null id: "" is a (missing) group
    h.stable_group(1)
    groups = _describe(h, "x", "", "g", version=3, ops=True)
    assert [g["group_id"] for g in groups] == ["x", "", "g"]
    assert groups[1]["error_code"] == NONE and groups[1]["group_state"] == "Dead"
    # every operation a group supports without an authorizer (Kafka 4.3: READ, DELETE, DESCRIBE,
    # DESCRIBE_CONFIGS, ALTER_CONFIGS)
    assert groups[2]["authorized_operations"] == 3400


def test_describe_v0_to_v3_omit_instance_ids(h: Harness) -> None:
    h.stable_group(1)
    (g,) = _describe(h, "g", version=3)
    assert "group_instance_id" not in g["members"][0]


# -- ListGroups ----------------------------------------------------------------------------------
def test_list_groups_includes_offset_only_groups_and_excludes_deleted(h: Harness) -> None:
    h.stable_group(1)
    h.commit({("t", 0): 1}, group="simple")
    h.commit({("t", 0): 1}, group="gone")
    _delete(h, "gone")
    r = _list(h)
    assert r["error_code"] == NONE
    assert sorted(
        (g["group_id"], g["protocol_type"], g["group_state"], g["group_type"]) for g in r["groups"]
    ) == [("g", "consumer", "Stable", "classic"), ("simple", "", "Empty", "classic")]


def test_list_groups_state_filter_is_case_insensitive(h: Harness) -> None:
    h.stable_group(1)
    h.commit({("t", 0): 1}, group="simple")
    assert [g["group_id"] for g in _list(h, version=4, states=["stable"])["groups"]] == ["g"]
    assert [g["group_id"] for g in _list(h, version=4, states=["EMPTY", "Dead"])["groups"]] == ["simple"]


def test_list_groups_type_filter(h: Harness) -> None:
    h.stable_group(1)
    assert len(_list(h, types=["Classic"])["groups"]) == 1
    assert _list(h, types=["consumer"])["groups"] == []


def test_list_groups_v3_has_no_state_or_type(h: Harness) -> None:
    h.stable_group(1)
    (g,) = _list(h, version=3)["groups"]
    assert set(g) == {"group_id", "protocol_type"}


def test_list_groups_while_loading_returns_load_in_progress() -> None:
    h = Harness(loaded=False)
    assert _list(h)["error_code"] == 14


# -- DeleteGroups --------------------------------------------------------------------------------
def test_delete_empty_group_writes_offset_and_group_tombstones(h: Harness) -> None:
    ids = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=ids[0], generation=h.generation())
    h.leave(ids[0])
    assert _delete(h, "g") == [("g", NONE)]
    assert h.mgr.group("g") is None
    assert h.log.records[-2:] == [OffsetTombstone("g", "t", 0), GroupTombstone("g")]
    assert h.fetch({"t": [0]})["topics"][0]["partitions"][0]["committed_offset"] == -1


def test_delete_simple_group_writes_offset_and_group_tombstones(h: Harness) -> None:
    # Java's GroupMetadataManager.createGroupTombstoneRecords: the group tombstone even at generation 0
    h.commit({("t", 0): 1})
    assert _delete(h, "g") == [("g", NONE)]
    assert h.log.records[-2:] == [OffsetTombstone("g", "t", 0), GroupTombstone("g")]


def test_delete_non_empty_group_is_non_empty_group(h: Harness) -> None:
    ids = h.stable_group(2)
    assert _delete(h, "g") == [("g", NON_EMPTY_GROUP)]
    h.join(ids[0])
    assert _delete(h, "g") == [("g", NON_EMPTY_GROUP)]  # PreparingRebalance
    h.join(ids[1])
    assert h.state() is GroupState.COMPLETING_REBALANCE and _delete(h, "g") == [("g", NON_EMPTY_GROUP)]


def test_delete_missing_group_is_group_id_not_found(h: Harness) -> None:
    # "" is a group id for DeleteGroups (GroupCoordinatorService.deleteGroups refuses only null)
    assert _delete(h, "missing", "") == [("missing", GROUP_ID_NOT_FOUND), ("", GROUP_ID_NOT_FOUND)]


def test_deleted_group_is_recreated_fresh_by_a_new_join(h: Harness) -> None:
    h.commit({("t", 0): 1})
    _delete(h, "g")
    r = h.join(version=3)
    h.settle(r)
    assert r["generation_id"] == 1 and h.heartbeat("old", 1).error == 25


def test_delete_answers_in_request_order_and_writes_one_batch(h: Harness) -> None:
    # distinct ids arrive from the door (broker/apis/delete_groups.py deduplicates, as KafkaApis)
    h.commit({("t", 0): 1})
    h.commit({("t", 0): 1}, group="b")
    assert _delete(h, "x", "g", "b") == [("x", GROUP_ID_NOT_FOUND), ("g", NONE), ("b", NONE)]
    assert h.log.batches[-1] == [
        OffsetTombstone("g", "t", 0),
        GroupTombstone("g"),
        OffsetTombstone("b", "t", 0),
        GroupTombstone("b"),
    ]


def test_delete_after_a_commit_in_flight_tombstones_that_commit_too(h: Harness) -> None:
    # GroupMetadataManager/OffsetMetadataManager see a commit once written (timeline state): the
    # DeleteGroups right behind it deletes it, and nothing comes back on replay.
    h.commit({("t", 0): 1})
    h.log.hold = True
    h.commit({("t", 1): 2})
    h.delete_groups("g")
    h.log.release()
    assert h.log.records[-3:] == [
        OffsetTombstone("g", "t", 0),
        OffsetTombstone("g", "t", 1),
        GroupTombstone("g"),
    ]
    assert h.fetch(None)["topics"] == [] and h.mgr.group("g") is None


def test_a_delete_whose_write_fails_changes_nothing(h: Harness) -> None:
    # All or nothing, as CoordinatorRuntime reverts its timeline snapshot when the append fails:
    # the retry finds the groups (not GROUP_ID_NOT_FOUND) and their offsets are still there.
    h.commit({("t", 0): 1})
    h.commit({("t", 0): 1}, group="other")
    h.log.fail_with = OSError("disk full")
    failed = _delete(h, "g", "other", "missing")
    assert [error for _, error in failed[:2]] != [NONE, NONE]
    assert h.state("g") is GroupState.EMPTY and h.state("other") is GroupState.EMPTY
    assert h.fetch({"t": [0]})["topics"][0]["partitions"][0]["committed_offset"] == 1
    h.log.fail_with = None
    assert _delete(h, "g", "other", "missing") == [
        ("g", NONE),
        ("other", NONE),
        ("missing", GROUP_ID_NOT_FOUND),
    ]
