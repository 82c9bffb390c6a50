"""The in-process server's settings: `kcoord serve` flags given as keyword arguments.

`fsync="always"` is `--fsync always`, `enable_x=True` a bare switch, a tuple a comma-separated list.
The keywords go through the very parser `kcoord serve` uses (kcoord/wiring/config.py), so every
setting, its validation and its error message are the command's own; a bad one is a one-line
`SettingsError`. Environment variables (`KCOORD_*`) are ignored: a test's server is the same on every
machine.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from kcoord.wiring.config import Config, HostPort, add_serve_arguments, config_from_args

__all__ = ["TEST_DEFAULTS", "SettingsError", "build_config"]

# What a test wants that a production server does not: no wait before the first rebalance (Kafka's
# group.initial.rebalance.delay.ms), short session timeouts allowed, quick KIP-848 heartbeats, and no
# fsync (the data directory is a throwaway; kill() still loses what was not written).
TEST_DEFAULTS: Mapping[str, Any] = {
    "group_initial_rebalance_delay_ms": 0,
    "group_min_session_timeout_ms": 100,
    "group_consumer_min_session_timeout_ms": 1000,
    "group_consumer_min_heartbeat_interval_ms": 100,
    "group_consumer_heartbeat_interval_ms": 500,
    "fsync": "never",
}
# Chosen by the fixture: the address is 127.0.0.1 on a free port, the data directory is pytest's,
# and the controls the server object calls are always on.
FIXED = frozenset({"listen", "data_dir", "enable_test_controls"})
# A test's server does not wait 10 s for stragglers when it stops.
SHUTDOWN_TIMEOUT_S = 2.0


class SettingsError(ValueError):
    """A keyword that is not a `kcoord serve` flag, or a value the flag refuses (one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print the usage and exit
        raise SettingsError(f"kcoord settings: {message}")


def _flag_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)


def _argv(parser: _Parser, settings: Mapping[str, Any]) -> list[str]:
    # argparse keeps no public map from flag to action; this one is stable since Python 3.2
    actions = parser._option_string_actions
    argv: list[str] = []
    for name, value in settings.items():
        if name in FIXED:
            raise SettingsError(f"kcoord settings: {name} is chosen by the fixture and cannot be set")
        flag = "--" + name.replace("_", "-")
        action = actions.get(flag)
        if action is None:
            raise SettingsError(
                f"kcoord settings: unknown setting {name}={value!r} (not a kcoord serve flag)"
            )
        if action.nargs == 0:  # a switch: True is the bare flag, False leaves it out
            argv += [flag] if value else []
        elif value is not None:
            argv += [flag, _flag_value(value)]
    return argv


def build_config(settings: Mapping[str, Any], data_dir: Path, listen: HostPort) -> Config:
    """The `Config` of `kcoord serve <flags of settings>` over TEST_DEFAULTS, bound to `listen`."""
    parser = _Parser(prog="kcoord serve", add_help=False)
    add_serve_arguments(parser)
    argv = _argv(parser, {**TEST_DEFAULTS, **settings})
    argv += ["--listen", str(listen), "--data-dir", str(data_dir)]
    try:
        config = config_from_args(parser.parse_args(argv), env={})
    except SystemExit as exc:  # the cross-setting checks exit with the message, as the command does
        raise SettingsError(str(exc.code)) from None
    return dataclasses.replace(config, enable_test_controls=True, shutdown_timeout_s=SHUTDOWN_TIMEOUT_S)
