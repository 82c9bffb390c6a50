"""The share groups' Prometheus series on a real server (raw sockets for the share member and its
fetches, /metrics scraped over HTTP): share groups by state, in-flight records by delivery state and a
share group's lag (KIP-1226), as they change when records are acquired, acknowledged and released."""

from __future__ import annotations

import uuid

from kcoord.protocol.errors import ErrorCode
from tests.http.conftest import Http, sample
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.test_share_fetch_wire import (
    ACCEPT,
    acks,
    acquired,
    offsets,
    set_group_configs,
    share_ack,
    share_fetch,
    topic_id,
)
from tests.server.wire import call, connect, create_topic


def test_share_series_follow_the_records(server: KcoordServer, http: Http) -> None:
    sock = connect(server.address)
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    assert produce(sock, "t", 0, batch(3))["error_code"] == ErrorCode.NONE
    set_group_configs(sock, "g", share_auto_offset_reset="earliest")
    member = str(uuid.uuid4())
    joined = call(sock, 76, 1, {"group_id": "g", "member_id": member, "member_epoch": 0, "rack_id": None,
                                "subscribed_topic_names": ["t"]})  # fmt: skip
    assert joined["error_code"] == ErrorCode.NONE, joined
    metrics = http.metrics()
    assert sample(metrics, "kcoord_share_groups", state="Stable") == 1
    assert sample(metrics, "kcoord_share_members") == 1

    tid = topic_id(sock, "t")
    assert offsets(acquired(share_fetch(sock, tid=tid, epoch=0, member=member))) == {0: 1, 1: 1, 2: 1}
    metrics = http.metrics()
    assert sample(metrics, "kcoord_share_inflight_records", state="acquired") == 3
    assert sample(metrics, "kcoord_share_group_lag", group="g") == 3

    assert share_ack(sock, tid, 1, member, acks(0, 0, ACCEPT))["error_code"] == ErrorCode.NONE
    metrics = http.metrics()
    assert sample(metrics, "kcoord_share_inflight_records", state="acquired") == 2
    assert sample(metrics, "kcoord_share_group_lag", group="g") == 2

    left = call(sock, 76, 1, {"group_id": "g", "member_id": member, "member_epoch": -1, "rack_id": None,
                              "subscribed_topic_names": None})  # fmt: skip
    assert left["error_code"] == ErrorCode.NONE
    metrics = http.metrics()  # the member left: its records are released
    assert sample(metrics, "kcoord_share_groups", state="Empty") == 1
    assert sample(metrics, "kcoord_share_inflight_records", state="acquired") == 0
    assert sample(metrics, "kcoord_share_inflight_records", state="available") == 2


def test_the_inspector_shows_share_groups(server: KcoordServer, http: Http) -> None:
    sock = connect(server.address)
    assert create_topic(sock, "t", 1)["error_code"] == ErrorCode.NONE
    assert produce(sock, "t", 0, batch(4))["error_code"] == ErrorCode.NONE
    set_group_configs(sock, "g", share_auto_offset_reset="earliest")
    member = str(uuid.uuid4())
    joined = call(sock, 76, 1, {"group_id": "g", "member_id": member, "member_epoch": 0, "rack_id": None,
                                "subscribed_topic_names": ["t"]})  # fmt: skip
    assert joined["error_code"] == ErrorCode.NONE
    tid = topic_id(sock, "t")
    assert len(offsets(acquired(share_fetch(sock, tid=tid, epoch=0, member=member)))) == 4
    assert share_ack(sock, tid, 1, member, acks(0, 1, ACCEPT))["error_code"] == ErrorCode.NONE
    listed = http.get("/v1/share-groups")["groups"]
    assert [(g["group_id"], g["state"], g["members"]) for g in listed] == [("g", "Stable", 1)]
    detail = http.get("/v1/share-groups/g")
    assert [m["member_id"] for m in detail["member_details"]] == [member]
    (part,) = detail["partitions"]
    assert (part["topic"], part["start_offset"], part["lag"], part["in_flight"]) == (
        "t",
        2,
        2,
        {"acquired": 2},
    )
    assert http.call("GET", "/v1/share-groups/nobody")[0] == 404
