"""GROUP config resources (type 32) on the wire, real server and raw sockets: DescribeConfigs of a group
(its own values, else the broker's defaults, also for a group that does not exist, as Kafka's
ConfigHelper), IncrementalAlterConfigs and AlterConfigs with Kafka's checks and messages
(GroupConfig / GroupConfigManager.validate), a running consumer group's next heartbeat answering the
new interval, the configs surviving a restart and going away with DeleteGroups."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_consumer_group_heartbeat import _heartbeat, _join, _setup
from tests.server.wire import call, connect

GROUP, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 32, 4, 5, 8
# Not the group's own: the broker's setting behind it, a `kcoord serve` flag for the consumer keys
# (STATIC_BROKER_CONFIG, as the BROKER resource describes it), Kafka's default otherwise.
BROKER_SETTING = STATIC_BROKER_CONFIG
SET, DELETE, APPEND = 0, 1, 2
SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    return connect(server.address)


def describe(
    sock: socket.socket, group: str, keys: list[str] | None = None, version: int = 4
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}]
    }
    if version >= 3:
        body |= {"include_synonyms": True, "include_documentation": True}
    return call(sock, 32, version, body)["results"][0]  # type: ignore[no-any-return]


def configs(sock: socket.socket, group: str) -> dict[str, dict[str, Any]]:
    result = describe(sock, group)
    assert result["error_code"] == ErrorCode.NONE, result
    return {c["name"]: c for c in result["configs"]}


def alter(
    sock: socket.socket, group: str, entries: list[dict[str, Any]], incremental: bool = True
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configs": entries}],
        "validate_only": False,
    }
    return call(sock, 44 if incremental else 33, 1, body)["responses"][0]  # type: ignore[no-any-return]


def test_an_unknown_group_describes_the_brokers_defaults(sock: socket.socket) -> None:
    described = configs(sock, "nobody")
    assert set(described) >= {SESSION, INTERVAL, "share.session.timeout.ms", "streams.num.standby.replicas"}
    session = described[SESSION]
    assert (session["value"], session["config_source"], session["read_only"]) == (
        "45000",
        BROKER_SETTING,
        False,
    )
    # ConfigHelper.createGroupConfigEntry: the broker setting's synonyms, not the key itself
    assert session["synonyms"] == [
        {"name": "group." + SESSION, "value": "45000", "source": STATIC_BROKER_CONFIG},
        {"name": "group." + SESSION, "value": "45000", "source": DEFAULT_CONFIG},
    ]
    share = described["share.session.timeout.ms"]  # a --group-share-* flag, as the consumer keys
    assert (share["config_source"], share["synonyms"]) == (
        BROKER_SETTING,
        [
            {"name": "group.share.session.timeout.ms", "value": "45000", "source": STATIC_BROKER_CONFIG},
            {"name": "group.share.session.timeout.ms", "value": "45000", "source": DEFAULT_CONFIG},
        ],
    )
    streams = described["streams.session.timeout.ms"]  # no flag: Kafka's default of the broker setting
    assert (streams["config_source"], streams["synonyms"]) == (
        DEFAULT_CONFIG,
        [{"name": "group.streams.session.timeout.ms", "value": "45000", "source": DEFAULT_CONFIG}],
    )
    isolation = described["share.isolation.level"]  # no broker setting: GroupConfig's default, own name
    assert isolation["synonyms"] == [
        {"name": "share.isolation.level", "value": "read_uncommitted", "source": DEFAULT_CONFIG}
    ]
    streams_interval = described["streams.assignment.interval.ms"]  # Kafka 4.3's key
    assert (streams_interval["value"], streams_interval["config_source"]) == ("1000", DEFAULT_CONFIG)
    assert session["config_type"] == 3 and session["documentation"]  # INT
    assert described["share.isolation.level"]["value"] == "read_uncommitted"
    assert described["share.renew.acknowledge.enable"]["config_type"] == 1  # BOOLEAN
    only = describe(sock, "nobody", [INTERVAL, "nope"])
    assert [c["name"] for c in only["configs"]] == [INTERVAL]
    empty = describe(sock, "")
    assert (empty["error_code"], empty["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Group name must not be empty",
    )


def test_incremental_alter_sets_describes_and_deletes(sock: socket.socket) -> None:
    answer = alter(sock, "g", [{"name": SESSION, "config_operation": SET, "value": "50000"}])
    assert answer["error_code"] == ErrorCode.NONE, answer
    session = configs(sock, "g")[SESSION]
    assert (session["value"], session["config_source"]) == ("50000", GROUP_CONFIG)
    assert session["synonyms"] == [
        {"name": SESSION, "value": "50000", "source": GROUP_CONFIG},
        {"name": "group." + SESSION, "value": "45000", "source": STATIC_BROKER_CONFIG},
        {"name": "group." + SESSION, "value": "45000", "source": DEFAULT_CONFIG},
    ]
    assert alter(sock, "g", [{"name": SESSION, "config_operation": DELETE, "value": None}])["error_code"] == 0
    assert configs(sock, "g")[SESSION]["config_source"] == BROKER_SETTING


@pytest.mark.parametrize(
    ("entries", "code", "message"),
    [
        ([(SESSION, "1000")], ErrorCode.INVALID_CONFIG,
         f"{SESSION} must be greater than or equal to group.consumer.min.session.timeout.ms"),
        ([(SESSION, "70000")], ErrorCode.INVALID_CONFIG,
         f"{SESSION} must be less than or equal to group.consumer.max.session.timeout.ms"),
        ([(INTERVAL, "20000")], ErrorCode.INVALID_CONFIG,
         f"{INTERVAL} must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        ([(INTERVAL, "x")], ErrorCode.INVALID_CONFIG,
         "Invalid value x for configuration consumer.heartbeat.interval.ms: Not a number of type INT"),
        ([("nope", "1")], ErrorCode.INVALID_CONFIG, "Unknown group config name: nope"),
        ([("share.isolation.level", "dirty")], ErrorCode.INVALID_CONFIG,
         "Invalid value dirty for configuration share.isolation.level: "
         "String must be one of: read_committed, read_uncommitted"),
        ([("share.record.lock.duration.ms", "500")], ErrorCode.INVALID_CONFIG,
         "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
        ([("streams.num.standby.replicas", "3")], ErrorCode.INVALID_CONFIG,
         "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
        ([("streams.assignment.interval.ms", "20000")], ErrorCode.INVALID_CONFIG,  # Kafka 4.3's bound
         "streams.assignment.interval.ms must be less than or equal to "
         "group.streams.max.assignment.interval.ms"),
    ],
)  # fmt: skip
def test_a_bad_value_is_invalid_config_with_kafkas_message(
    sock: socket.socket, entries: list[tuple[str, str]], code: ErrorCode, message: str
) -> None:
    for incremental in (True, False):
        body = [
            {"name": n, "value": v, **({"config_operation": SET} if incremental else {})} for n, v in entries
        ]
        answer = alter(sock, "g", body, incremental)
        assert (answer["error_code"], answer["error_message"]) == (code, message)
    assert configs(sock, "g")[SESSION]["config_source"] == BROKER_SETTING


def test_append_and_the_default_group_are_refused(sock: socket.socket) -> None:
    answer = alter(sock, "g", [{"name": SESSION, "config_operation": APPEND, "value": "50000"}])
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
    )
    answer = alter(sock, "", [{"name": SESSION, "config_operation": SET, "value": "50000"}])
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Default group resources are not allowed.",
    )


def test_legacy_alter_replaces_the_whole_set(sock: socket.socket) -> None:
    entries = [{"name": SESSION, "value": "50000"}, {"name": INTERVAL, "value": "6000"}]
    assert alter(sock, "g", entries, incremental=False)["error_code"] == ErrorCode.NONE
    assert alter(sock, "g", [{"name": INTERVAL, "value": "7000"}], incremental=False)["error_code"] == 0
    described = configs(sock, "g")
    assert (described[SESSION]["config_source"], described[INTERVAL]["value"]) == (BROKER_SETTING, "7000")


def test_the_next_heartbeat_answers_the_groups_interval(sock: socket.socket) -> None:
    _setup(sock)
    joined = _join(sock, "cg", "m1")
    assert (joined["error_code"], joined["heartbeat_interval_ms"]) == (ErrorCode.NONE, 5000)
    assert (
        alter(sock, "cg", [{"name": INTERVAL, "config_operation": SET, "value": "7000"}])["error_code"] == 0
    )
    beat = _heartbeat(sock, "cg", "m1", joined["member_epoch"])
    assert (beat["error_code"], beat["heartbeat_interval_ms"]) == (ErrorCode.NONE, 7000)


def test_configs_survive_a_restart_and_go_with_the_group(server: KcoordServer) -> None:
    sock = connect(server.address)
    _setup(sock)
    assert (
        alter(sock, "cg", [{"name": INTERVAL, "config_operation": SET, "value": "6000"}])["error_code"] == 0
    )
    assert (
        alter(sock, "other", [{"name": SESSION, "config_operation": SET, "value": "50000"}])["error_code"]
        == 0
    )
    joined = _join(sock, "cg", "m1")
    assert joined["heartbeat_interval_ms"] == 6000
    sock.close()
    server.restart()
    sock = connect(server.address)
    assert configs(sock, "cg")[INTERVAL]["value"] == "6000"
    assert configs(sock, "other")[SESSION]["value"] == "50000"
    left = _heartbeat(sock, "cg", "m1", -1)
    assert left["error_code"] == ErrorCode.NONE
    deleted = call(sock, 42, 2, {"groups_names": ["cg"]})["results"]
    assert deleted == [{"group_id": "cg", "error_code": ErrorCode.NONE}]
    assert configs(sock, "cg")[INTERVAL]["config_source"] == BROKER_SETTING
    sock.close()
    server.restart()
    sock = connect(server.address)
    assert configs(sock, "cg")[INTERVAL]["config_source"] == BROKER_SETTING
    assert configs(sock, "other")[SESSION]["value"] == "50000"


def test_validate_only_writes_nothing_and_a_legacy_null_is_invalid_request(sock: socket.socket) -> None:
    body = {
        "resources": [{"resource_type": GROUP, "resource_name": "g", "configs": [
            {"name": SESSION, "config_operation": SET, "value": "50000"}]}],
        "validate_only": True,
    }  # fmt: skip
    assert call(sock, 44, 1, body)["responses"][0]["error_code"] == ErrorCode.NONE
    assert configs(sock, "g")[SESSION]["config_source"] == BROKER_SETTING
    answer = alter(sock, "g", [{"name": SESSION, "value": None}], incremental=False)
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        f"Null value not supported for : {SESSION}",
    )
    answer = alter(sock, "g", [{"name": SESSION, "config_operation": SET, "value": None}])
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        f"Null value not supported for group configs: {SESSION}",
    )
