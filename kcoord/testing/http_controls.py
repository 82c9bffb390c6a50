"""The test controls of a kcoord server over HTTP: what `KcoordContainer` calls (and anyone holding only
the HTTP address of a server started with `--enable-test-controls`).

The same calls as the pytest plugin's in-process server object, with the same results
(`kcoord.testing.views` objects), over the `/v1/test/...` routes of the control table (issue 26).
Bytes arrive base64-encoded over HTTP; the views decode them. Only the standard library is used, so
this module costs nothing to import.

    controls = HttpControls("http://127.0.0.1:8080")
    controls.reset()
    controls.fail("OffsetCommit", "NOT_COORDINATOR", count=2)
    controls.advance(45)  # session timeouts expire now
    [record.value for record in controls.records("orders")]

A refusal (unknown API or error name, an existing topic, an unknown group) raises `ControlError` with
the server's HTTP status and message.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from kcoord.testing.views import Fault, Group, Record, RequestEntry, committed_map

__all__ = ["ControlError", "HttpControls"]

_POLL_S = 0.05  # wait_stable's poll interval: a rebalance takes tens of milliseconds with delay 0


class ControlError(Exception):
    """The server refused a control: 400 bad argument, 404 unknown thing, 409 conflict."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class HttpControls:
    """A client of one server's HTTP test controls (`base_url` like "http://127.0.0.1:8080")."""

    def __init__(self, base_url: str, *, timeout: float = 30.0, bearer_token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}

    # -- state ------------------------------------------------------------------------------------------

    def reset(self) -> float:
        """Empty the server as if freshly started (connections stay open); the milliseconds it took."""
        return float(self._call("POST", "/v1/test/reset", {})["reset_ms"])

    def advance(self, seconds: float) -> dict[str, int]:
        """Move the server's clock forward: timers due in the window fire now. `{"advanced_ms", "now_ms",
        "fired"}`."""
        answer = self._call("POST", "/v1/test/advance", {"seconds": seconds})
        return {key: int(value) for key, value in answer.items() if isinstance(value, int | float)}

    def configure(self, **changes: object) -> dict[str, Any]:
        """Change runtime settings (e.g. group_min_session_timeout_ms); the settings now in force."""
        return dict(self._call("POST", "/v1/test/config", changes))

    # -- topics, offsets, groups ------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        body = {"name": name, "partitions": partitions, "config": dict(config or {})}
        self._call("POST", "/v1/test/topics", body)

    def records(self, topic: str) -> list[Record]:
        """Every data record of `topic`, in (partition, offset) order; aborted ones flagged."""
        rows = self._call("GET", f"/v1/test/topics/{_quote(topic)}/records")
        return [Record.from_json(topic, row, b64=True) for row in rows]

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's stable committed offsets as `{(topic, partition): offset}`."""
        return committed_map(self._call("GET", f"/v1/test/groups/{_quote(group)}/committed"))

    def group(self, group_id: str) -> Group | None:
        """The group as DescribeGroups / ConsumerGroupDescribe show it; None if there is none (as the
        plugin's in-process server answers)."""
        try:
            return Group.from_json(self._call("GET", f"/v1/test/groups/{_quote(group_id)}"))
        except ControlError as exc:
            if exc.status == 404:
                return None
            raise

    def wait_stable(self, group_id: str, timeout: float = 10.0) -> Group:
        """Poll `group()` until the group is Stable with at least one member; TimeoutError says the last
        state seen."""
        deadline = time.monotonic() + timeout
        last = "unknown (no such group)"
        while True:
            found = self.group(group_id)
            if found is not None:
                if found.state == "Stable" and found.members:
                    return found
                last = f"{found.state} with {len(found.members)} members"
            if time.monotonic() >= deadline:
                raise TimeoutError(f"group {group_id!r} not Stable after {timeout} s: {last}")
            time.sleep(_POLL_S)

    # -- faults -----------------------------------------------------------------------------------------

    def fail(
        self,
        api: str | int,
        error: str | int,
        count: int = 1,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
    ) -> Fault:
        """The next `count` matching requests of `api` are answered with Kafka's `error`."""
        filters = {"topic": topic, "partition": partition, "group": group}
        return self._add_fault({"kind": "error", "api": api, "error": error, "count": count, **filters})

    def delay(self, api: str | int, ms: int, count: int = 1) -> Fault:
        """The next `count` requests of `api` are answered after `ms` milliseconds."""
        return self._add_fault({"kind": "delay", "api": api, "ms": ms, "count": count})

    def disconnect(self, api: str | int, count: int = 1) -> Fault:
        """The next `count` requests of `api` lose their connection instead of an answer."""
        return self._add_fault({"kind": "disconnect", "api": api, "count": count})

    def fired(self) -> list[Fault]:
        """Faults that fired at least once, in order of first firing."""
        return [Fault.from_json(row) for row in self._call("GET", "/v1/test/faults/fired")]

    def faults(self) -> list[Fault]:
        """Faults still armed."""
        return [Fault.from_json(row) for row in self._call("GET", "/v1/test/faults")]

    def clear_faults(self) -> None:
        self._call("DELETE", "/v1/test/faults")

    # -- request log ------------------------------------------------------------------------------------

    def requests(self, since: int = 0) -> list[RequestEntry]:
        """The request-log entries after sequence number `since`, oldest first."""
        rows = self._call("GET", f"/v1/test/requests?since={int(since)}")
        return [RequestEntry.from_json(row) for row in rows]

    # -- transport --------------------------------------------------------------------------------------

    def _add_fault(self, body: dict[str, object]) -> Fault:
        return Fault.from_json(self._call("POST", "/v1/test/faults", body))

    def _call(self, method: str, path: str, body: Mapping[str, object] | None = None) -> Any:
        """One JSON round trip; a 4xx/5xx answer raises ControlError with the server's message."""
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, **({"Content-Type": "application/json"} if data is not None else {})}
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ControlError(exc.code, _error_message(exc.read())) from None
        return json.loads(payload) if payload else None


def _quote(name: str) -> str:
    """A topic or group id as one path segment (group ids may hold '/', spaces, anything)."""
    return urllib.parse.quote(name, safe="")


def _error_message(payload: bytes) -> str:
    """The controls answer errors as {"error": message}; anything else is shown as it came."""
    try:
        parsed = json.loads(payload)
    except ValueError:
        return payload.decode(errors="replace")
    if isinstance(parsed, dict) and "error" in parsed:
        return str(parsed["error"])
    return str(parsed)
