"""The broker's share-group settings (`--group-share-*`, Kafka 4.3's group.share.*): defaults and ranges
equal to the Kafka 4.3.1 jar's ConfigDef (read from the jar by a Java snippet where a JDK and the cached
jar are present), flag > env > default, ShareGroupConfig's cross-checks as one-line start errors, and on
the wire: a real server's share.* group configs take the flags as their defaults and bounds."""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.config import Config, parse_serve_argv
from kcoord.wiring.share_flags import SHARE_DEFAULTS, SHARE_OPTIONS
from tests import jvm
from tests.kcoord_process import KcoordServer
from tests.oracle.kafka import cache_dir
from tests.server.test_group_configs_wire import SET, alter, configs
from tests.server.wire import call, connect, create_topic

_DUMP = """
import org.apache.kafka.common.config.ConfigDef;
public class ShareDefs { public static void main(String[] a) throws Exception {
  for (String n : new String[]{"org.apache.kafka.coordinator.group.modern.share.ShareGroupConfig",
                               "org.apache.kafka.coordinator.group.GroupCoordinatorConfig"})
    for (java.lang.reflect.Field f : Class.forName(n).getFields())
      if (f.getType() == ConfigDef.class)
        for (ConfigDef.ConfigKey k : ((ConfigDef) f.get(null)).configKeys().values())
          if (k.name.startsWith("group.share."))
            System.out.println(k.name + " " + k.defaultValue + " " + k.validator);
}}
"""


def test_defaults_and_ranges_are_kafka_4_3s(tmp_path: Path) -> None:
    libs = cache_dir() / "libs"
    if shutil.which("javac") is None or not (libs / "kafka-group-coordinator-4.3.1.jar").exists():
        pytest.skip("no JDK or no cached Kafka 4.3.1 jars")
    (tmp_path / "ShareDefs.java").write_text(_DUMP)
    classpath = f"{libs}/*"
    classes = jvm.compiled(tmp_path / "ShareDefs.java", classpath)
    out = subprocess.run(["java", *jvm.SHORT_FLAGS, "-cp", f"{classes}:{classpath}", "ShareDefs"],
                         capture_output=True, text=True, check=True, timeout=120).stdout  # fmt: skip
    rows = (line.split(" ", 2) for line in out.splitlines())
    kafka = {name: (default, validator) for name, default, validator in rows}
    for flag, parse, _ in SHARE_OPTIONS:
        name = "group.share." + flag.removeprefix("--group-share-").replace("-", ".")
        default, validator = kafka[name]
        assert str(SHARE_DEFAULTS[name.replace(".", "_")]) == default, name
        low, _, high = validator.strip("[]").partition(",...")
        assert parse(low.strip()) == int(low), name  # type: ignore[operator]
        with pytest.raises(argparse.ArgumentTypeError):
            parse(str(int(low) - 1))  # type: ignore[operator]
        if high.strip(", "):
            with pytest.raises(argparse.ArgumentTypeError):
                parse(str(int(high.strip(", ")) + 1))  # type: ignore[operator]


def test_flag_over_env_over_default() -> None:
    assert dataclass_values(parse_serve_argv([], env={})) == SHARE_DEFAULTS
    env = {"KCOORD_GROUP_SHARE_DELIVERY_COUNT_LIMIT": "3", "KCOORD_GROUP_SHARE_MAX_SIZE": "10"}
    config = parse_serve_argv(["--group-share-max-size", "20"], env=env)
    assert (config.group_share_delivery_count_limit, config.group_share_max_size) == (3, 20)


def test_a_value_outside_kafkas_range_is_refused_from_the_environment_too() -> None:
    with pytest.raises(SystemExit) as exited:
        parse_serve_argv([], env={"KCOORD_GROUP_SHARE_DELIVERY_COUNT_LIMIT": "11"})
    assert "expected a value [2, 10], got 11" in str(exited.value)


def dataclass_values(config: Config) -> dict[str, int]:
    return {name: getattr(config, name) for name in SHARE_DEFAULTS}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--group-share-record-lock-duration-ms", "10000"], "must be within [15000, 60000]"),
        (["--group-share-min-delivery-count-limit", "4", "--group-share-delivery-count-limit", "3"],
         "must be within [4, 10]"),
        (["--group-share-partition-max-record-locks", "5000"], "must be within [100, 4000]"),
        (["--group-share-session-timeout-ms", "30000"], "must be within [45000, 60000]"),
        (["--group-share-max-share-sessions", "100"], "at least --group-share-max-size"),
        (["--group-share-min-session-timeout-ms", "1000", "--group-share-session-timeout-ms", "5000"],
         "must be less than"),
    ],
)  # fmt: skip
def test_out_of_bounds_settings_are_one_line_errors(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_serve_argv(argv, env={})
    assert message in str(exited.value) and "\n" not in str(exited.value)


@pytest.mark.server_args(
    "--group-share-record-lock-duration-ms", "20000", "--group-share-min-record-lock-duration-ms", "20000",
    "--group-share-delivery-count-limit", "3", "--group-share-max-partition-max-record-locks", "2500",
    "--group-share-min-heartbeat-interval-ms", "1000", "--group-share-heartbeat-interval-ms", "3000",
    "--group-share-max-size", "1", "--group-share-max-share-sessions", "1",
)  # fmt: skip
def test_the_flags_are_the_share_group_configs_defaults_and_bounds(server: KcoordServer) -> None:
    sock: socket.socket = connect(server.address)
    described = configs(sock, "share-flags")
    assert described["share.record.lock.duration.ms"]["value"] == "20000"
    assert described["share.delivery.count.limit"]["value"] == "3"
    assert described["share.partition.max.record.locks"]["value"] == "2000"
    below = alter(sock, "share-flags", [{"name": "share.record.lock.duration.ms", "config_operation": SET,
                                         "value": "19000"}])  # fmt: skip
    assert below["error_code"] == ErrorCode.INVALID_CONFIG, below
    above = alter(sock, "share-flags", [{"name": "share.partition.max.record.locks", "config_operation": SET,
                                         "value": "3000"}])  # fmt: skip
    assert above["error_code"] == ErrorCode.INVALID_CONFIG, above
    within = alter(sock, "share-flags", [{"name": "share.partition.max.record.locks", "config_operation": SET,
                                          "value": "2400"}])  # fmt: skip
    assert within["error_code"] == ErrorCode.NONE, within
    assert configs(sock, "share-flags")["share.partition.max.record.locks"]["value"] == "2400"


def _join(sock: socket.socket, group: str) -> dict[str, object]:
    body = {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "rack_id": None,
            "subscribed_topic_names": ["share-flags-topic"]}  # fmt: skip
    return call(sock, 76, 1, body)


@pytest.mark.server_args(
    "--group-share-min-heartbeat-interval-ms", "1000", "--group-share-heartbeat-interval-ms", "3000",
    "--group-share-max-size", "1",
)  # fmt: skip
def test_the_group_side_takes_the_heartbeat_interval_and_the_max_size(server: KcoordServer) -> None:
    sock = connect(server.address)
    first = _join(sock, "share-flags-size")
    assert (first["error_code"], first["heartbeat_interval_ms"]) == (0, 3000), first
    second = _join(sock, "share-flags-size")
    assert second["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED, second


def _heartbeat(sock: socket.socket, group: str, member: str, epoch: int) -> dict[str, object]:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": ["share-flags-topic"] if epoch == 0 else None}  # fmt: skip
    return call(sock, 76, 1, body)


@pytest.mark.server_args("--group-share-assignment-interval-ms", "0")
def test_an_assignment_interval_of_zero_assigns_initialized_partitions_at_once(server: KcoordServer) -> None:
    """group.share.assignment.interval.ms = 0 (GroupMetadataManager.canComputeNextTargetAssignment):
    the heartbeat after the share partitions' initialization recomputes the target at once; with
    Kafka's default (1 s, the next test) that heartbeat keeps the target of the first one."""
    sock = connect(server.address)
    assert create_topic(sock, "share-flags-topic", 2)["error_code"] == 0
    first = _heartbeat(sock, "share-flags-interval", "m1", 0)
    assert (first["error_code"], first["member_epoch"]) == (0, 2), first
    second = _heartbeat(sock, "share-flags-interval", "m1", 2)
    assignment = second["assignment"]
    assert isinstance(assignment, dict) and second["member_epoch"] == 3, second
    assert [t["partitions"] for t in assignment["topic_partitions"]] == [[0, 1]], second
    described = configs(sock, "share-flags-interval")["share.assignment.interval.ms"]
    assert (described["value"], described["config_source"]) == ("0", 4), described  # STATIC_BROKER_CONFIG


@pytest.mark.server_args("--group-share-max-assignment-interval-ms", "30000")
def test_the_default_interval_batches_and_the_max_bounds_the_group_config(server: KcoordServer) -> None:
    sock = connect(server.address)
    assert create_topic(sock, "share-flags-topic", 2)["error_code"] == 0
    assert _heartbeat(sock, "share-flags-batch", "m1", 0)["member_epoch"] == 2
    kept = _heartbeat(sock, "share-flags-batch", "m1", 2)  # within 1 s of the first target
    assert (kept["error_code"], kept["member_epoch"], kept["assignment"]) == (0, 2, None), kept
    interval = "share.assignment.interval.ms"
    above = alter(sock, "share-flags-batch", [{"name": interval, "config_operation": SET, "value": "30001"}])
    assert above["error_code"] == ErrorCode.INVALID_CONFIG, above
    within = alter(sock, "share-flags-batch", [{"name": interval, "config_operation": SET, "value": "20000"}])
    assert within["error_code"] == ErrorCode.NONE, within


def test_the_assignment_interval_must_be_within_its_min_and_max() -> None:
    with pytest.raises(SystemExit) as exited:
        parse_serve_argv(["--group-share-assignment-interval-ms", "20000"], env={})
    assert "must be within [0, 15000]" in str(exited.value)
    config = parse_serve_argv(["--group-share-assignment-interval-ms", "250"], env={})
    assert config.group_config().share_assignment_interval_ms == 250
