"""Authorization of GROUP config resources (type 32) on the wire, as Kafka's ConfigHelper and
KafkaApis.configsAuthorizationApiError: DESCRIBE_CONFIGS / ALTER_CONFIGS on the GROUP resource, a refusal
GROUP_AUTHORIZATION_FAILED (Describe with the error's message, the Alter APIs without one);
ListConfigResources needs DESCRIBE_CONFIGS on the cluster."""

from __future__ import annotations

from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import ALTER, CLUSTER, DESCRIBE_CONFIGS, GROUP, binding, create_acls
from tests.server.wire import call, connect

BOB = "User:bob"
CONFIG_GROUP = 32
ALTER_CONFIGS = 11


def _calls(sock: Any, group: str) -> tuple[tuple[int, str | None], tuple[int, str | None], int]:
    described = call(sock, 32, 4, {
        "resources": [{"resource_type": CONFIG_GROUP, "resource_name": group, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False,
    })["results"][0]  # fmt: skip
    entry = {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}
    altered = call(sock, 44, 1, {
        "resources": [{"resource_type": CONFIG_GROUP, "resource_name": group, "configs": [entry]}],
        "validate_only": False,
    })["responses"][0]  # fmt: skip
    legacy = call(sock, 33, 1, {
        "resources": [{"resource_type": CONFIG_GROUP, "resource_name": group, "configs": []}],
        "validate_only": True,
    })["responses"][0]  # fmt: skip
    return (
        (described["error_code"], described["error_message"]),
        (altered["error_code"], altered["error_message"]),
        legacy["error_code"],
    )


def test_group_configs_need_the_groups_config_acls(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        acls = [
            binding(GROUP, "g-open", DESCRIBE_CONFIGS),
            binding(GROUP, "g-open", ALTER_CONFIGS),
            binding(GROUP, "g-closed", DESCRIBE_CONFIGS, principal=BOB),
            binding(GROUP, "g-closed", ALTER_CONFIGS, principal=BOB),
            binding(CLUSTER, "kafka-cluster", ALTER, principal=BOB),
        ]
        assert create_acls(sock, *acls) == [0] * len(acls)
        described, altered, legacy = _calls(sock, "g-open")
        assert (described[0], altered[0], legacy) == (0, 0, 0)
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert _calls(sock, "g-closed") == (
            (refused, "Group authorization failed."),
            (refused, None),
            refused,
        )
        listed = call(sock, 74, 1, {"resource_types": []})
        assert (listed["error_code"], listed["config_resources"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            [],
        )
