"""Authorization of the share-group offset APIs on the wire (KafkaApis.handleDescribeShareGroupOffsets
Request / handleAlterShareGroupOffsetsRequest / handleDeleteShareGroupOffsetsRequest): the group
(DESCRIBE, READ, DELETE) refused as GROUP_AUTHORIZATION_FAILED, for Describe per group and for Alter and
Delete at the top level; a topic refused (DESCRIBE for Describe, READ for Alter and Delete) as
TOPIC_AUTHORIZATION_FAILED for that topic alone, the others answered."""

from __future__ import annotations

from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import DELETE, DESCRIBE, GROUP, READ, TOPIC, binding, create_acls
from tests.server.wire import call, connect, create_topic

BOB = "User:bob"
GROUP_REFUSED, TOPIC_REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _alter(group: str, *topics: str) -> dict[str, Any]:
    parts = [{"partition_index": 0, "start_offset": 0}]
    return {"group_id": group, "topics": [{"topic_name": t, "partitions": parts} for t in topics]}


def test_groups_and_topics_are_authorized_as_kafka_does(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        for name in ("t-open", "t-closed"):
            assert create_topic(sock, name, 1)["error_code"] == ErrorCode.NONE
        acls = [binding(GROUP, "g-closed", op, principal=BOB) for op in (READ, DESCRIBE, DELETE)]
        acls += [binding(TOPIC, "t-closed", op, principal=BOB) for op in (READ, DESCRIBE)]
        assert create_acls(sock, *acls) == [0] * len(acls)

        wanted = [{"topic_name": t, "partitions": [0]} for t in ("t-open", "t-closed")]
        described = call(sock, 90, 1, {"groups": [{"group_id": "g-closed", "topics": wanted},
                                                  {"group_id": "g-open", "topics": wanted}]})  # fmt: skip
        closed, opened = described["groups"]
        assert (closed["error_code"], closed["topics"]) == (GROUP_REFUSED, [])
        errors = {t["topic_name"]: t["partitions"][0]["error_code"] for t in opened["topics"]}
        assert errors == {"t-open": 0, "t-closed": TOPIC_REFUSED}

        assert call(sock, 91, 0, _alter("g-closed", "t-open"))["error_code"] == GROUP_REFUSED
        altered = call(sock, 91, 0, _alter("g-open", "t-open", "t-closed"))
        assert altered["error_code"] == ErrorCode.NONE
        errors = {t["topic_name"]: t["partitions"][0]["error_code"] for t in altered["responses"]}
        assert errors == {"t-open": 0, "t-closed": TOPIC_REFUSED}

        topics = [{"topic_name": "t-open"}, {"topic_name": "t-closed"}]
        assert call(sock, 92, 0, {"group_id": "g-closed", "topics": topics})["error_code"] == GROUP_REFUSED
        deleted = call(sock, 92, 0, {"group_id": "g-open", "topics": topics})
        assert deleted["error_code"] == ErrorCode.NONE
        assert {t["topic_name"]: t["error_code"] for t in deleted["responses"]} == {
            "t-open": 0,
            "t-closed": TOPIC_REFUSED,
        }
