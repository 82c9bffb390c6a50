"""The plugin's pure parts, in-process: keyword settings as `kcoord serve` flags, and unique names."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.testing.names import Names
from kcoord.testing.settings import SettingsError, build_config
from kcoord.wiring.config import HostPort

LISTEN = HostPort("127.0.0.1", 0)


def test_keywords_are_kcoord_serve_flags_over_the_test_defaults(tmp_path: Path) -> None:
    config = build_config(
        {"fsync": "always", "auto_create_topics": False, "group_consumer_assignors": ("range", "uniform"),
         "num_partitions": 3},
        tmp_path, LISTEN,
    )  # fmt: skip
    assert (config.fsync, config.auto_create_topics, config.num_partitions) == ("always", False, 3)
    assert config.group_consumer_assignors == ("range", "uniform")
    assert (config.group_initial_rebalance_delay_ms, config.group_min_session_timeout_ms) == (0, 100)
    assert (config.listen, config.data_dir, config.enable_test_controls) == (LISTEN, tmp_path, True)


def test_defaults_are_for_tests_and_a_setting_can_restore_kafkas(tmp_path: Path) -> None:
    assert build_config({}, tmp_path, LISTEN).fsync == "never"
    assert (
        build_config(
            {"group_initial_rebalance_delay_ms": 3000}, tmp_path, LISTEN
        ).group_initial_rebalance_delay_ms
        == 3000
    )


def test_the_environment_does_not_change_a_tests_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCOORD_FSYNC", "always")
    assert build_config({}, tmp_path, LISTEN).fsync == "never"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"no_such_flag": 1}, "kcoord settings: unknown setting no_such_flag=1 (not a kcoord serve flag)"),
        ({"fsync": "sometimes"}, "kcoord settings: argument --fsync: expected always"),
        ({"listen": "0.0.0.0:9092"}, "kcoord settings: listen is chosen by the fixture and cannot be set"),
        ({"group_consumer_heartbeat_interval_ms": 50_000}, "heartbeat-interval-ms=50000 must be within"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_one_line(tmp_path: Path, settings: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        build_config(settings, tmp_path, LISTEN)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_names_carry_the_test_and_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    names = Names("tests/a/test_x.py::test_orders[p/1]", "test_orders[p/1]")
    other_module = Names("tests/b/test_x.py::test_orders[p/1]", "test_orders[p/1]")
    assert names.topic().startswith("test_orders_p_1-gw3-") and names.topic().endswith("-topic")
    assert names.topic() != other_module.topic()  # same test name, another module
    assert len({names.topic(), names.topic("payments"), names.group(), names.transactional_id()}) == 4
