"""Config: flags > KCOORD_* environment > Kafka defaults; one frozen dataclass."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kcoord.wiring.config import Config, HostPort, parse_serve_argv


def test_defaults_are_kafkas() -> None:
    config = parse_serve_argv([], env={})
    assert config == Config()
    assert config.listen == HostPort("0.0.0.0", 9092)
    assert (
        config.group_initial_rebalance_delay_ms,
        config.group_min_session_timeout_ms,
        config.group_max_session_timeout_ms,
    ) == (3000, 6000, 1_800_000)
    assert (config.offsets_retention_minutes, config.offsets_retention_check_interval_ms) == (10080, 600_000)
    assert config.group_max_size is None and config.auto_create_topics and config.num_partitions == 1
    assert config.fsync == "always" and config.data_dir == Path("./data")
    assert config.group_config().offsets_retention_ms == 10080 * 60_000


def test_flags_override_env_which_overrides_defaults() -> None:
    env = {
        "KCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KCOORD_NUM_PARTITIONS": "3",
        "KCOORD_AUTO_CREATE_TOPICS": "false",
        "KCOORD_LISTEN": "127.0.0.1:1234",
    }
    config = parse_serve_argv(
        ["--num-partitions", "6", "--advertised-listener", "kafka.example:19092"], env=env
    )
    assert config.group_initial_rebalance_delay_ms == 0
    assert config.num_partitions == 6
    assert config.auto_create_topics is False
    assert config.listen == HostPort("127.0.0.1", 1234)
    assert config.advertised_listener == HostPort("kafka.example", 19092)


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().node_id = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "argv",
    [
        ["--fsync", "sometimes"],
        ["--log-format", "xml"],
        ["--log-level", "chatty"],
        ["--listen", "nope"],
        ["--num-partitions", "0"],
    ],
)
def test_bad_values_are_rejected(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_serve_argv(argv, env={})


def test_log_level_takes_any_case() -> None:
    assert parse_serve_argv(["--log-level", "debug"], env={}).log_level == "DEBUG"
    assert parse_serve_argv([], env={"KCOORD_LOG_LEVEL": "warn"}).log_level == "WARNING"
    assert parse_serve_argv([], env={}).log_level == "INFO"


def test_bad_env_value_is_rejected() -> None:
    with pytest.raises(SystemExit):
        parse_serve_argv([], env={"KCOORD_GROUP_MAX_SIZE": "-1"})


@pytest.mark.parametrize(
    ("flag", "policy"),
    [
        ("always", "always"),
        ("never", "never"),
        ("interval", "interval:1000"),
        ("interval:250", "interval:250"),
    ],
)
def test_fsync_flag_yields_a_policy_storage_accepts(flag: str, policy: str) -> None:
    from kcoord import storage

    config = parse_serve_argv(["--fsync", flag], env={})
    assert config.fsync == policy
    storage.LogConfig(fsync_policy=config.fsync).fsync_interval_ms()  # raises on a policy it rejects


def test_consumer_protocol_settings_have_kafkas_defaults_and_bounds() -> None:
    config = parse_serve_argv([], env={})
    group = config.group_config()
    assert (group.consumer_session_timeout_ms, group.consumer_heartbeat_interval_ms) == (45_000, 5000)
    assert (
        group.consumer_assignors == ("uniform", "range")
        and group.consumer_migration_policy == "bidirectional"
    )
    lowered = parse_serve_argv(
        ["--group-consumer-min-session-timeout-ms", "1000", "--group-consumer-session-timeout-ms", "3000",
         "--group-consumer-min-heartbeat-interval-ms", "100", "--group-consumer-heartbeat-interval-ms", "300",
         "--group-consumer-assignors", "range,uniform", "--group-consumer-migration-policy", "Disabled"],
        env={},
    )  # fmt: skip
    assert lowered.group_config().consumer_session_timeout_ms == 3000
    assert lowered.group_config().consumer_assignors == ("range", "uniform")
    assert lowered.group_config().consumer_migration_policy == "disabled"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--group-consumer-session-timeout-ms", "1000"], "must be within [45000, 60000]"),
        (["--group-consumer-heartbeat-interval-ms", "20000"], "must be within [5000, 15000]"),
        (
            [
                "--group-consumer-max-heartbeat-interval-ms",
                "50000",
                "--group-consumer-heartbeat-interval-ms",
                "45000",
            ],
            "must be less than",
        ),
    ],
)
def test_consumer_protocol_settings_out_of_bounds_are_one_line_errors(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_serve_argv(argv, env={})
    assert message in str(exited.value) and "\n" not in str(exited.value)


def test_authorizer_settings_are_kafkas() -> None:
    """authorizer.class.name, super.users (`;`-separated, getConfiguredSuperUsers), and
    allow.everyone.if.no.acl.found (default false); no authorizer by default."""
    default = parse_serve_argv([], env={})
    assert (default.authorizer, default.super_users, default.allow_everyone_if_no_acl_found) == (
        None,
        (),
        False,
    )
    config = parse_serve_argv(
        ["--authorizer", "standard", "--super-users", "User:admin; User:CN=ops,O=acme;"],
        env={"KCOORD_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true"},
    )
    assert config.authorizer == "standard"
    assert config.super_users == ("User:admin", "User:CN=ops,O=acme")
    assert config.allow_everyone_if_no_acl_found is True
    for bad in (["--authorizer", "acl"], ["--super-users", "admin"]):
        with pytest.raises(SystemExit):
            parse_serve_argv(bad, env={})


def test_compression_defaults_flags_and_env_are_kafkas() -> None:
    config = parse_serve_argv([], env={})
    assert (config.compression_type, config.compression_gzip_level) == ("producer", -1)
    assert (config.compression_lz4_level, config.compression_zstd_level) == (9, 3)
    assert config.topic_defaults() == {}  # nothing set away from Kafka's defaults: topics show DEFAULT_CONFIG
    env = {"KCOORD_COMPRESSION_TYPE": "lz4", "KCOORD_COMPRESSION_LZ4_LEVEL": "12"}
    config = parse_serve_argv(["--compression-lz4-level", "1", "--compression-gzip-level", "-1"], env=env)
    assert (config.compression_type, config.compression_lz4_level) == ("lz4", 1)
    assert config.topic_defaults() == {"compression.type": "lz4", "compression.lz4.level": "1"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--compression-type", "none"],
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (["--compression-gzip-level", "0"], "Value must be between 1 and 9 or equal to -1"),
        (["--compression-zstd-level", "23"], "Value must be no more than 22"),
    ],
)
def test_bad_compression_settings_get_kafkas_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_serve_argv(argv, env={})
    assert message in capsys.readouterr().err
