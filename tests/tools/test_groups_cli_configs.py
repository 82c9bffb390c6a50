"""`kcoord groups --describe` shows a group's configs (issue 33): the real CLI in its own process against
a real server; the group's own value is "group", the others the broker's "default"; JSON always
carries them."""

from __future__ import annotations

import pytest

from tests.cluster.nodes import commit
from tests.integration.conftest import create_topic, unique
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect
from tests.tools.test_groups_cli import groups_json, groups_ok, table

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_describe_shows_the_groups_configs(server: KcoordServer) -> None:
    topic, group = unique("t"), unique("g")
    create_topic(server.bootstrap, topic, 1)
    assert commit(server.address, group, topic, 5) == 0  # a simple group with an offset
    entry = {"name": "consumer.heartbeat.interval.ms", "config_operation": 0, "value": "6000"}
    body = {
        "resources": [{"resource_type": 32, "resource_name": group, "configs": [entry]}],
        "validate_only": False,
    }
    with connect(server.address) as sock:
        assert call(sock, 44, 1, body)["responses"][0]["error_code"] == 0

    rows = {
        r["CONFIG"]: r for r in table(groups_ok(server, "--describe", "--group", group, "--configs").stdout)
    }
    assert (
        rows["consumer.heartbeat.interval.ms"]["VALUE"],
        rows["consumer.heartbeat.interval.ms"]["SOURCE"],
    ) == (
        "6000",
        "group",
    )
    assert (rows["consumer.session.timeout.ms"]["VALUE"], rows["consumer.session.timeout.ms"]["SOURCE"]) == (
        "45000",
        "default",
    )
    [document] = groups_json(server, "--describe", "--group", group)
    configs = {c["name"]: (c["value"], c["source"]) for c in document["configs"]}
    assert configs["consumer.heartbeat.interval.ms"] == ("6000", "group")
    assert document["offsets"][0]["current_offset"] == 5
