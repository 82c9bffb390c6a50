"""KcoordContainer's configuration: settings as `kcoord serve` flags, the bridge-network listeners (a
published port chosen before start, the network alias), and a server that exits during start-up
failing `start()` at once with its own words rather than a timeout."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.timeout(300)


def test_bridge_network_listeners_advertise_the_published_port_and_the_alias(
    docker_host: str, kcoord_image: str
) -> None:
    from kcoord.testing.containers import KcoordContainer

    container = KcoordContainer(kcoord_image, settings={"num_partitions": 3}).with_network_aliases("kafka")
    container._configure()  # what start() does before creating the container
    env = container.env
    [(published, host_port)] = [(p, h) for p, h in container.ports.items() if h is not None]
    host = container.get_docker_client().host()
    assert published == "9092" and isinstance(host_port, int)
    assert env["KCOORD_LISTENERS"] == "EXTERNAL://0.0.0.0:9092,INTERNAL://0.0.0.0:9093"
    assert env["KCOORD_ADVERTISED_LISTENERS"] == f"EXTERNAL://{host}:{host_port},INTERNAL://kafka:9093"
    assert env["KCOORD_LISTEN"] == ""  # the image's single listener, replaced by the two above
    assert env["KCOORD_ENABLE_TEST_CONTROLS"] == "true"
    assert env["KCOORD_NUM_PARTITIONS"] == "3"
    assert env["KCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS"] == "0"
    assert container.get_bootstrap_server() == f"{host}:{host_port}"
    assert container.get_internal_bootstrap_server() == "kafka:9093"


def test_without_aliases_a_generated_alias_is_advertised_and_given(
    docker_host: str, kcoord_image: str
) -> None:
    from kcoord.testing.containers import KcoordContainer

    container = KcoordContainer(kcoord_image)
    container._configure()
    alias = container.get_internal_bootstrap_server().removesuffix(":9093")
    assert alias.startswith("kcoord-") and container._network_aliases == [alias]


def test_unknown_and_container_owned_settings_are_refused(docker_host: str, kcoord_image: str) -> None:
    from kcoord.testing.containers import KcoordContainer

    with pytest.raises(ValueError, match=r"unknown kcoord setting.*'fsnyc'"):
        KcoordContainer(kcoord_image, settings={"fsnyc": "always"})
    with pytest.raises(ValueError, match=r"'listeners'.* set by the container"):
        KcoordContainer(kcoord_image).with_settings(listeners="PLAINTEXT://:1")


def test_a_server_that_exits_fails_start_at_once_with_its_reason(docker_host: str, kcoord_image: str) -> None:
    from testcontainers.core.exceptions import ContainerStartException

    from kcoord.testing.containers import KcoordContainer

    container = KcoordContainer(kcoord_image, settings={"fsync": "sometimes"}, startup_timeout=120)
    started = time.monotonic()
    try:
        with pytest.raises(ContainerStartException, match=r"exited[\s\S]*KCOORD_FSYNC"):
            container.with_host_network().start()
    finally:
        container.stop()
    assert time.monotonic() - started < 60  # the exit was noticed, not the 120 s start-up timeout
