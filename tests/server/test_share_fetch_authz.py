"""ShareFetch and ShareAcknowledge under `--authorizer standard --allow-everyone-if-no-acl-found true`:
READ on the group first (the whole request refused), then READ on each topic (that topic's partitions
refused), as KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest check them."""

from __future__ import annotations

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import GROUP, READ, TOPIC, binding, create_acls
from tests.server.test_share_fetch_wire import (
    SHARE_FETCH,
    acks,
    fetch_body,
    share_ack,
    topic_id,
)
from tests.server.wire import call, connect, create_topic

BOB = "User:bob"
pytestmark = pytest.mark.server_args(
    "--authorizer", "standard", "--allow-everyone-if-no-acl-found", "true"
)  # fmt: skip


def test_group_then_topic_read_is_checked(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        for name in ("open", "secret"):
            assert create_topic(sock, name, 1)["error_code"] == ErrorCode.NONE
        open_id, secret_id = topic_id(sock, "open"), topic_id(sock, "secret")  # before "secret" closes
        acls = [binding(GROUP, "closed", READ, principal=BOB), binding(TOPIC, "secret", READ, principal=BOB)]
        assert create_acls(sock, *acls) == [0, 0]
        refused = call(sock, SHARE_FETCH, 1, fetch_body(open_id, 0, "m", group="closed"))
        assert (refused["error_code"], refused["responses"]) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
        ack = share_ack(sock, open_id, 1, "m", acks(0, 0, 1), group="closed")
        assert ack["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        body = fetch_body(open_id, 0, "m")
        body["topics"].append(
            {"topic_id": secret_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}
        )
        answer = call(sock, SHARE_FETCH, 1, body)
        errors = {t["topic_id"]: t["partitions"][0]["error_code"] for t in answer["responses"]}
        assert errors == {open_id: ErrorCode.NONE, secret_id: ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        secret_ack = share_ack(sock, secret_id, 1, "m", acks(0, 0, 1))
        assert (
            secret_ack["responses"][0]["partitions"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
