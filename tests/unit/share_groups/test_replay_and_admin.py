"""Share groups across a restart (their records replayed, through the storage codec too), and the
admin side: ListGroups' type filter, DeleteGroups, describe, and one id being one type."""

from __future__ import annotations

from collections.abc import Callable

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.offset_api import CommitRequest
from kcoord.coordinator.groups.share.model import ShareGroupState
from kcoord.coordinator.persistence import from_storage, render, to_storage
from tests.unit.share_groups.conftest import T1, Node


def _group_view(node: Node) -> tuple[object, ...]:
    group = node.mgr.share.group("g")
    assert group is not None
    members = {m: (v.member_epoch, v.previous_member_epoch, dict(v.assigned), v.subscribed_topic_names)
               for m, v in group.members.items()}  # fmt: skip
    return group.group_epoch, group.assignment_epoch, group.target, members, group.metadata_hash


def test_restart_resumes_the_group() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",), client_id="c1", client_host="/127.0.0.1")
    node.hb("m2", 0, ("t1", "t2"))
    node.hb("m3", 0, ("t2",))
    node.hb("m3", -1)
    node.hb("m1", 2)
    before = _group_view(node)
    again = node.restart()
    assert _group_view(again) == before
    # the members go on where they were, and their sessions run again from the restart
    assert again.hb("m1", before[3]["m1"][0]).error is ErrorCode.NONE  # type: ignore[index]
    again.timers.advance(45_000)
    assert ("g", "m2") in again.listener.left


def test_records_survive_the_storage_codec() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",), rack_id="r1")
    node.hb("m2", 0, ("t1",))
    node.hb("m2", -1)
    for record in node.log.records:
        stored = to_storage(record)
        assert 0x40 + 10 <= stored.type <= 0x40 + 15
        assert to_storage(from_storage(stored)) == stored  # type: ignore[arg-type]
        assert render(stored).startswith("share_group_")


def test_list_groups_by_type_and_state() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    error, listed = node.mgr.list_groups(set(), {"share"})
    assert error is ErrorCode.NONE
    assert [(g.group_id, g.protocol_type, g.state.value, g.group_type) for g in listed] == [
        ("g", "share", "Stable", "share")
    ]
    assert node.mgr.list_groups({"empty"}, {"share"})[1] == []
    assert node.mgr.list_groups(set(), {"consumer"})[1] == []
    assert [g.group_id for g in node.mgr.list_groups({"stable"}, set())[1]] == ["g"]


def test_delete_only_an_empty_group_and_tell_the_data_side() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    answers: list[list[tuple[str, ErrorCode]]] = []
    node.mgr.delete_groups(["g"], answers.append)
    assert answers == [[("g", ErrorCode.NON_EMPTY_GROUP)]]
    node.hb("m1", -1)
    node.mgr.delete_groups(["g"], answers.append)
    assert answers[-1] == [("g", ErrorCode.NONE)]
    assert node.mgr.share.group("g") is None and node.listener.deleted == ["g"]
    assert node.restart().mgr.share.group("g") is None
    node.mgr.delete_groups(["g"], answers.append)
    assert answers[-1] == [("g", ErrorCode.GROUP_ID_NOT_FOUND)]


def test_describe() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",), client_id="c", client_host="/1.2.3.4", rack_id="r")
    node.hb("m1", 2, client_id="c", client_host="/1.2.3.4")
    (described, missing) = node.mgr.share.describe(["g", "nope"])
    summary = (described.state, described.group_epoch, described.assignment_epoch, described.assignor_name)
    assert summary == ("Stable", 3, 3, "simple")
    (m,) = described.members
    assert (m.member_id, m.rack_id, m.client_id, m.client_host) == ("m1", "r", "c", "/1.2.3.4")
    assert m.member_epoch == 3
    assert m.assignment == ((T1, "t1", (0, 1, 2, 3)),)
    assert (missing.error, missing.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")


def _join(group_id: str, respond: Callable[[object], None]) -> JoinRequest:
    return JoinRequest(
        group_id=group_id, member_id="", group_instance_id=None, session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000, protocol_type="consumer", protocols=(("range", b""),), reason=None,
        version=9, client_id="client", client_host="/h", respond=respond,
    )  # fmt: skip


def test_one_id_one_type() -> None:
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    joined: list[object] = []
    node.mgr.join_group(_join("g", joined.append))
    assert joined[0].error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # a classic group's id refused to a share member
    node.mgr.join_group(_join("c", joined.append))
    refused = node.hb("m9", 0, ("t1",), group="c")
    assert (refused.error, refused.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group c is not a share group.")
    (other,) = node.mgr.share.describe(["c"])
    assert (other.error, other.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group c is not a share group.")
    assert node.mgr.share.group("g") is not None and node.mgr.share.group("g").state is ShareGroupState.STABLE  # type: ignore[union-attr]


def test_the_classic_offset_and_describe_apis_never_make_a_classic_group_of_a_share_group() -> None:
    """Kafka 4.3.1 (seen on the oracle): OffsetCommit to a share group's id is GROUP_ID_NOT_FOUND
    (ShareGroup.validateOffsetCommit), DescribeGroups says it is not a classic group."""
    node = Node().load()
    node.hb("m1", 0, ("t1",))
    answers: list[tuple[ErrorCode, object]] = []
    request = CommitRequest(
        "g", -1, "", None, -1, ErrorCode.GROUP_ID_NOT_FOUND, [("t1", [(0, 5, -1, "", -1)])]
    )
    node.mgr.offset_commit(request, lambda error, errors: answers.append((error, errors)))
    assert answers == [(ErrorCode.GROUP_ID_NOT_FOUND, {})]
    assert node.mgr.group("g") is None and node.mgr.committed_offsets("g") == {}
    (described,) = node.mgr.describe_groups(["g"])
    assert (described.error, described.state, described.message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Dead", "Group g is not a classic group.",
    )  # fmt: skip
