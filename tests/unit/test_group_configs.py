"""Group configs in the pure group logic (FakeClock, in-memory log): Kafka's checks and messages
(GroupConfig.validateValues / GroupConfigManager.validate), the record and its codec, applied only once
durable, and the tombstone that goes with an expired empty group."""

from __future__ import annotations

import pytest

from kcoord import storage
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group_configs import (
    GROUP_CONFIGS,
    GroupConfigBounds,
    GroupConfigRecord,
    InvalidGroupConfig,
    validate_group_configs,
)
from kcoord.coordinator.persistence.codec import from_storage, render, to_storage
from kcoord.coordinator.runtime.phases import Phase, ShardPhases
from kcoord.coordinator.runtime.shards import shard_of
from tests.unit.conftest import Harness

DAY = 86_400_000
BOUNDS = GroupConfigBounds()


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"consumer.heartbeat.interval.ms": "4999"},
         "consumer.heartbeat.interval.ms must be greater than or equal to "
         "group.consumer.min.heartbeat.interval.ms"),
        # the session must exceed the interval, the other defaulting to the broker's
        ({"consumer.heartbeat.interval.ms": "15000", "consumer.session.timeout.ms": "45000"}, None),
        ({"share.delivery.count.limit": "11"},
         "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"),
        ({"share.partition.max.record.locks": "99"},
         "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"),
        ({"share.renew.acknowledge.enable": "yes"},
         "Invalid value yes for configuration share.renew.acknowledge.enable: "
         "Expected value to be either true or false"),
        ({"streams.session.timeout.ms": None},
         "Null value not supported for group configs: streams.session.timeout.ms"),
        ({"share.auto.offset.reset": "by_duration:PT1H"}, None),
        # Kafka 4.3.1's assignment intervals: ConfigDef atLeast(0), then the broker's min/max (0, 15000)
        ({"consumer.assignment.interval.ms": "15001"},
         "consumer.assignment.interval.ms must be less than or equal to "
         "group.consumer.max.assignment.interval.ms"),
        ({"share.assignment.interval.ms": "-1"},
         "Invalid value -1 for configuration share.assignment.interval.ms: Value must be at least 0"),
        ({"streams.assignment.interval.ms": "0"}, None),
        ({"streams.assignment.interval.ms": "15001"},
         "streams.assignment.interval.ms must be less than or equal to "
         "group.streams.max.assignment.interval.ms"),
    ],
)  # fmt: skip
def test_validation_has_kafkas_messages(configs: dict[str, str | None], message: str | None) -> None:
    if message is None:
        assert validate_group_configs(configs, BOUNDS) == configs
        return
    with pytest.raises(InvalidGroupConfig) as info:
        validate_group_configs(configs, BOUNDS)
    assert str(info.value) == message


def test_the_session_must_exceed_the_brokers_interval_when_only_it_is_set() -> None:
    bounds = GroupConfigBounds(
        defaults={"group.consumer.heartbeat.interval.ms": "1000"},
        limits={
            "group.consumer.min.session.timeout.ms": 500,
            "group.consumer.min.heartbeat.interval.ms": 100,
        },
    )
    with pytest.raises(
        InvalidGroupConfig, match=r"consumer\.session\.timeout\.ms must be greater than consumer"
    ):
        validate_group_configs({"consumer.session.timeout.ms": "1000"}, bounds)
    assert validate_group_configs({"consumer.session.timeout.ms": "1001"}, bounds)


def test_the_keys_are_kafka_43s() -> None:
    """GroupConfig.CONFIG_DEF of the 4.3.1 jar: 17 keys (the *.assignor.offload.enable names it declares
    are not defined there, so a broker neither describes nor accepts them)."""
    assert sorted(GROUP_CONFIGS) == sorted(
        [
            *(
                f"consumer.{k}"
                for k in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")
            ),
            *(
                f"share.{k}"
                for k in (
                    "session.timeout.ms",
                    "heartbeat.interval.ms",
                    "record.lock.duration.ms",
                    "delivery.count.limit",
                    "partition.max.record.locks",
                    "auto.offset.reset",
                    "isolation.level",
                    "renew.acknowledge.enable",
                    "assignment.interval.ms",
                )
            ),
            *(
                f"streams.{k}"
                for k in (
                    "session.timeout.ms",
                    "heartbeat.interval.ms",
                    "num.standby.replicas",
                    "initial.rebalance.delay.ms",
                    "assignment.interval.ms",
                )
            ),
        ]
    )


def test_every_key_has_a_default() -> None:
    assert {name: BOUNDS.default(name) for name in GROUP_CONFIGS}[
        "share.isolation.level"
    ] == "read_uncommitted"


@pytest.mark.parametrize("configs", [(("consumer.session.timeout.ms", "50000"),), ()])
def test_the_record_round_trips_through_storage(configs: tuple[tuple[str, str], ...]) -> None:
    record = GroupConfigRecord("g", configs)
    stored = to_storage(record)
    assert stored.type == 11 and (stored.value is None) == (not configs)
    framed = storage.Record(stored.type, stored.key, stored.value)
    assert from_storage(framed) == record
    assert render(framed).startswith("group_config group=g")


def test_configs_apply_once_durable_and_go_with_an_expired_group() -> None:
    h = Harness(offsets_retention_ms=DAY)
    h.commit({("t", 0): 1})
    h.log.hold = True
    done: list[object] = []
    h.mgr.group_configs.alter("g", {"consumer.session.timeout.ms": "50000"}, lambda e, x: done.append((e, x)))
    assert h.mgr.group_configs.of("g") == {} and not done  # not yet durable: not in force
    h.log.release()
    assert done == [(None, None)] and h.mgr.group_configs.of("g") == {"consumer.session.timeout.ms": "50000"}
    assert h.mgr.group_configs.configured() == ["g"]
    h.advance(2 * DAY)  # offsets expire, the empty group is deleted, its configs with it
    assert h.mgr.group("g") is None
    assert GroupConfigRecord("g", ()) in h.log.records
    assert h.mgr.group_configs.of("g") == {} and h.mgr.group_configs.configured() == []


def test_cluster_mode_every_node_holds_and_writes_every_groups_configs() -> None:
    """Cluster mode (group_config_api.py): a group's configs are cluster-wide records, so a node that
    does not coordinate the group still holds them (`known`, read by a share partition's leader), lists
    them (`configured(anywhere=True)`) and writes them (`alter(anywhere=True)`); the shard's phase
    refuses only the plain calls, which one node uses. A shard moving away (`unload`) leaves them."""
    phases = ShardPhases(4, Phase.NOT_OWNED)
    phases.loaded()
    h = Harness(phases=phases)
    group = "g"  # its shard (of 4) is not served here
    assert h.mgr.group_configs.error(group) is ErrorCode.NOT_COORDINATOR
    done: list[object] = []
    h.mgr.group_configs.alter(group, {"share.delivery.count.limit": "3"}, lambda e, x: done.append((e, x)))
    assert done == [(ErrorCode.NOT_COORDINATOR, None)] and not h.log.records
    h.mgr.group_configs.alter(
        group, {"share.delivery.count.limit": "3"}, lambda e, x: done.append((e, x)), anywhere=True
    )
    record = GroupConfigRecord(group, (("share.delivery.count.limit", "3"),))
    assert done[1:] == [(None, None)] and record in h.log.records
    assert h.mgr.group_configs.of(group) is None  # the plain read: refused by the phase
    assert dict(h.mgr.group_configs.known(group)) == {"share.delivery.count.limit": "3"}
    assert h.mgr.group_configs.configured() == [] and h.mgr.group_configs.configured(anywhere=True) == [group]
    phases.set(shard_of(group, 4), Phase.ACTIVE)
    h.mgr.unload(lambda g: g == group)  # the shard moves on: the configs are not the shard's
    assert dict(h.mgr.group_configs.known(group)) == {"share.delivery.count.limit": "3"}
    assert dict(h.mgr.group_configs.known("other")) == {}
