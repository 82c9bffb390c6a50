"""The share-group test controls (issue 34) on a real in-process server with real sockets: a share
partition's records and their states read back, every acquisition lock expired now, and advance()
driving the lock timers (records acquired by a ShareFetch come back AVAILABLE with their delivery count
once the clock passes share.record.lock.duration.ms), through the methods and their HTTP routes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.controls.conftest import Served
from tests.server.test_dataplane_wire import batch, produce
from tests.server.test_share_fetch_wire import acquired, offsets, set_group_configs, share_fetch, topic_id
from tests.server.wire import connect

LOCK_S = 30  # share.record.lock.duration.ms, Kafka's default


def _http(served: Served, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{served.http_port}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _states(served: Served) -> list[tuple[int, int, str, int, str | None]]:
    view = served.call(lambda c: c.share_partition("g", "t", 0))
    return [(r["first_offset"], r["last_offset"], r["state"], r["delivery_count"], r["member_id"])
            for r in view["records"]]  # fmt: skip


def test_expire_now_and_advance_release_acquired_records(served: Served) -> None:
    served.call(lambda c: c.create_topic("t", 1))
    sock = connect(("127.0.0.1", int(served.bootstrap.rsplit(":", 1)[1])))
    assert produce(sock, "t", 0, batch(3))["error_code"] == ErrorCode.NONE
    set_group_configs(sock, "g", share_auto_offset_reset="earliest")
    tid = topic_id(sock, "t")
    assert offsets(acquired(share_fetch(sock, tid=tid, epoch=0, member="m"))) == {0: 1, 1: 1, 2: 1}
    assert _states(served) == [(0, 2, "ACQUIRED", 1, "m")]

    assert served.call(lambda c: c.expire_share_locks("g")) == {"released": 3}
    assert _states(served) == [(0, 2, "AVAILABLE", 1, None)]
    assert offsets(acquired(share_fetch(sock, tid=tid, epoch=1, member="m"))) == {0: 2, 1: 2, 2: 2}

    served.call(lambda c: c.advance(LOCK_S - 1))  # not yet due
    assert _states(served) == [(0, 2, "ACQUIRED", 2, "m")]
    advanced = served.call(lambda c: c.advance(1.5))
    assert advanced["fired"] >= 1
    assert _states(served) == [(0, 2, "AVAILABLE", 2, None)]


def test_the_http_routes(served: Served) -> None:
    served.call(lambda c: c.create_topic("t", 1))
    sock = connect(("127.0.0.1", int(served.bootstrap.rsplit(":", 1)[1])))
    assert produce(sock, "t", 0, batch(2))["error_code"] == ErrorCode.NONE
    set_group_configs(sock, "g", share_auto_offset_reset="earliest")
    assert _http(served, "GET", "/v1/test/share-groups/g/partitions/t/0")[0] == 404  # no state yet
    share_fetch(sock, tid=topic_id(sock, "t"), epoch=0, member="m")
    status, view = _http(served, "GET", "/v1/test/share-groups/g/partitions/t/0")
    assert status == 200 and (view["start_offset"], view["records"][0]["state"]) == (0, "ACQUIRED")
    assert _http(served, "POST", "/v1/test/share-groups/expire-locks", {"group": "other"}) == (
        200,
        {"released": 0},
    )
    assert _http(served, "POST", "/v1/test/share-groups/expire-locks", {}) == (200, {"released": 2})
    assert _http(served, "GET", "/v1/test/share-groups/g/partitions/t/9")[0] == 404
    assert _http(served, "GET", "/v1/test/share-groups/g/partitions/t/x")[0] == 400


@pytest.mark.parametrize("group", [5, ["g"]])
def test_a_bad_group_is_refused(served: Served, group: object) -> None:
    assert _http(served, "POST", "/v1/test/share-groups/expire-locks", {"group": group})[0] == 400
