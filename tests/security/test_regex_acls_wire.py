"""A KIP-848 regex subscriber under `--authorizer standard` (User:ANONYMOUS over PLAINTEXT), over raw
sockets: the topics its SubscribedTopicRegex matches are filtered by DESCRIBE, silently (Kafka 4.0+,
KAFKA-18813: GroupMetadataManager.refreshRegularExpressions / filterTopicDescribeAuthorizedTopics),
while a subscribed topic name it may not describe refuses the whole heartbeat (KafkaApis)."""

from __future__ import annotations

import socket
import urllib.request
import uuid
from typing import Any

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT as UNCHANGED
from tests.kcoord_process import KcoordServer
from tests.security.conftest import DESCRIBE, READ, TOPIC, binding, create_acls
from tests.server.wire import call, connect, create_topic

HEARTBEAT, METADATA = 68, 3
BOB = "User:bob"


def _topic_id(sock: socket.socket, name: str) -> uuid.UUID:
    metadata = call(sock, METADATA, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]})
    (topic,) = metadata["topics"]
    assert topic["error_code"] == 0, topic
    return topic["topic_id"]  # type: ignore[no-any-return]


def _heartbeat(sock: socket.socket, member_epoch: int, **fields: Any) -> dict[str, Any]:
    body = {"group_id": "g", "member_id": "m1", "member_epoch": member_epoch, **UNCHANGED, **fields}
    return call(sock, HEARTBEAT, 1, body)


def _assigned(answer: dict[str, Any]) -> dict[uuid.UUID, list[int]]:
    assert answer["error_code"] == 0, answer
    return {tp["topic_id"]: tp["partitions"] for tp in answer["assignment"]["topic_partitions"]}


def test_a_regex_subscriber_is_assigned_only_the_matching_topics_it_may_describe(
    acl_server: KcoordServer,
) -> None:
    with connect(acl_server.address) as sock:
        for name in ("rx-open", "rx-mine", "rx-bobs", "other"):
            assert create_topic(sock, name, 2)["error_code"] == 0
        ids = {name: _topic_id(sock, name) for name in ("rx-open", "rx-mine", "rx-bobs")}
        # rx-open: no ACL (open, allow.everyone.if.no.acl.found); rx-mine: DESCRIBE for ANONYMOUS;
        # rx-bobs: an ACL for bob alone, so closed to ANONYMOUS
        assert create_acls(
            sock, binding(TOPIC, "rx-mine", DESCRIBE), binding(TOPIC, "rx-bobs", READ, principal=BOB)
        ) == [
            0,
            0,
        ]
        named = _heartbeat(
            sock, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["rx-bobs"], topic_partitions=[]
        )
        assert named["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # a name: the whole request
        joined = _heartbeat(
            sock, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=[], subscribed_topic_regex="rx-.*",
            topic_partitions=[],
        )  # fmt: skip
        assert joined["member_epoch"] == 2  # a group starts at epoch 1 (Kafka 4.3); joining bumps it
        assert _assigned(joined) == {ids["rx-open"]: [0, 1], ids["rx-mine"]: [0, 1]}  # rx-bobs left out
        # ANONYMOUS may now describe rx-bobs; a new topic makes the group resolve its regex again
        # (Kafka: a refresh when the metadata image has new topics), with the heartbeat's ACLs
        assert create_acls(sock, binding(TOPIC, "rx-bobs", DESCRIBE)) == [0]
        assert create_topic(sock, "rx-new", 1)["error_code"] == 0
        owned = [{"topic_id": t, "partitions": ps} for t, ps in _assigned(joined).items()]
        again = _heartbeat(sock, 2, topic_partitions=owned)
        assert again["member_epoch"] == 3
        assert set(_assigned(again)) == {
            ids["rx-open"],
            ids["rx-mine"],
            ids["rx-bobs"],
            _topic_id(sock, "rx-new"),
        }
    match = acl_server.wait_for(r"http endpoint on (\S+):(\d+)", 10)
    with urllib.request.urlopen(f"http://127.0.0.1:{match.group(2)}/metrics", timeout=10) as response:
        metrics = response.read().decode()
    # the refused name is a denial; a topic the regex filtered out is not (logIfDenied=false)
    assert 'kcoord_authorization_denials_total{api="ConsumerGroupHeartbeat"} 1.0' in metrics
