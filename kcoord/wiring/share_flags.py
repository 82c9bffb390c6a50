"""The broker's share-group settings (KIP-932): Kafka 4.3's `group.share.*` of ShareGroupConfig and
GroupCoordinatorConfig as `--group-share-*` flags and `KCOORD_GROUP_SHARE_*` variables, their checks at
start, and what they feed: the defaults and bounds of the share.* group configs
(coordinator/groups/group_configs.py's GroupConfigBounds), as ShareGroupConfig.extractShareGroupConfigMap
makes the broker setting the default of the group's own.

Each flag's range is its ConfigDef validator in the Kafka 4.3.1 jar (`between(2, 10)` for
group.share.delivery.count.limit, `atLeast(1)` for the timings); the cross-checks are
ShareGroupConfig.validate (value within its min and max, max.share.sessions >= max.size) and
GroupCoordinatorConfig's (heartbeat interval below the session timeout, the assignment interval within
its min and max).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["SHARE_DEFAULTS", "SHARE_OPTIONS", "check_share_bounds", "share_group_bounds"]

# setting (without "group.share.") -> (Kafka 4.3.1's default, its ConfigDef range; None = unbounded)
_SETTINGS: dict[str, tuple[int, int, int | None]] = {
    "delivery.count.limit": (5, 2, 10),
    "min.delivery.count.limit": (2, 2, 5),
    "max.delivery.count.limit": (10, 5, 25),
    "record.lock.duration.ms": (30_000, 1000, 3_600_000),
    "min.record.lock.duration.ms": (15_000, 1000, 30_000),
    "max.record.lock.duration.ms": (60_000, 30_000, 3_600_000),
    "partition.max.record.locks": (2000, 100, 10_000),
    "min.partition.max.record.locks": (100, 100, 2000),
    "max.partition.max.record.locks": (4000, 2000, 10_000),
    "max.share.sessions": (2000, 1, None),
    "max.size": (200, 1, 1000),
    "session.timeout.ms": (45_000, 1, None),
    "min.session.timeout.ms": (45_000, 1, None),
    "max.session.timeout.ms": (60_000, 1, None),
    "heartbeat.interval.ms": (5000, 1, None),
    "min.heartbeat.interval.ms": (5000, 1, None),
    "max.heartbeat.interval.ms": (15_000, 1, None),
    # GroupCoordinatorConfig (Kafka 4.3): how often a share group's target assignment may be recomputed
    "assignment.interval.ms": (1000, 0, None),
    "min.assignment.interval.ms": (0, 0, None),
    "max.assignment.interval.ms": (15_000, 0, None),
}
SHARE_DEFAULTS: dict[str, int] = {
    "group_share_" + name.replace(".", "_"): default for name, (default, _, _) in _SETTINGS.items()
}
# The settings with a min and a max, whose group config is bounded by them (GroupConfig.validateValues).
_BOUNDED = (
    "delivery.count.limit",
    "record.lock.duration.ms",
    "partition.max.record.locks",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "assignment.interval.ms",
)


def _within(low: int, high: int | None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            shown = f"[{low}, {high}]" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"expected a value {shown}, got {value}")
        return value

    parse.__name__ = f"within_{low}_{high}"
    return parse


SHARE_OPTIONS: tuple[tuple[str, object, str], ...] = tuple(
    (
        "--group-share-" + name.replace(".", "-"),
        _within(low, high),
        f"group.share.{name}, default {default}",
    )
    for name, (default, low, high) in _SETTINGS.items()
)


def _value(config: object, name: str) -> int:
    value: int = getattr(config, "group_share_" + name.replace(".", "_"))
    return value


def _flag(name: str) -> str:
    return "--group-share-" + name.replace(".", "-")


def check_share_bounds(config: object) -> None:
    """ShareGroupConfig.validate and GroupCoordinatorConfig's share checks, as kcoord start errors."""
    for name in _BOUNDED:
        value, low, high = (_value(config, p + name) for p in ("", "min.", "max."))
        if not low <= value <= high:
            raise SystemExit(
                f"kcoord: {_flag(name)}={value} must be within [{low}, {high}] (its min and max settings)"
            )
    if _value(config, "max.share.sessions") < _value(config, "max.size"):
        raise SystemExit("kcoord: --group-share-max-share-sessions must be at least --group-share-max-size")
    if _value(config, "heartbeat.interval.ms") >= _value(config, "session.timeout.ms"):
        raise SystemExit(
            "kcoord: --group-share-heartbeat-interval-ms must be less than --group-share-session-timeout-ms"
        )


def share_group_bounds(config: object) -> tuple[dict[str, str], dict[str, int]]:
    """(defaults, limits) for GroupConfigBounds: each bounded setting is the default of its share.* group
    config (ShareGroupConfig.extractShareGroupConfigMap) and its min/max bound that config."""
    defaults = {f"group.share.{name}": str(_value(config, name)) for name in _BOUNDED}
    limits = {
        f"group.share.{side}.{name}": _value(config, f"{side}.{name}")
        for name in _BOUNDED
        for side in ("min", "max")
    }
    return defaults, limits
