"""Topic and group names unique to one test on one pytest-xdist worker.

Against one server per test run (the session server without a reset, a real cluster with
`--kafka-bootstrap`), tests must not share topics or groups: the name carries the test's name
(readable in a server log), the xdist worker id, and a short hash of the test's full node id (two
tests of the same name in different modules differ). Kafka allows [a-zA-Z0-9._-], 249 characters
(Kafka's Topic.validate); group ids have no such rule, and get the same form.
"""

from __future__ import annotations

import hashlib
import os
import re

__all__ = ["Names", "worker_id"]

_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]+")
READABLE_CHARS = 120


def worker_id() -> str:
    """pytest-xdist's worker id ("gw0", ...), "main" without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


class Names:
    """`topic()`, `group()` for one test; a suffix names another one (`topic("payments")`)."""

    def __init__(self, nodeid: str, test_name: str) -> None:
        digest = hashlib.sha1(nodeid.encode()).hexdigest()[:6]
        readable = _ILLEGAL.sub("_", test_name).strip("_.-")[:READABLE_CHARS] or "test"
        self.base = f"{readable}-{worker_id()}-{digest}"

    def topic(self, suffix: str = "") -> str:
        return self._name("topic", suffix)

    def group(self, suffix: str = "") -> str:
        return self._name("group", suffix)

    def transactional_id(self, suffix: str = "") -> str:
        return self._name("txn", suffix)

    def _name(self, kind: str, suffix: str) -> str:
        tail = f"-{_ILLEGAL.sub('_', suffix)}" if suffix else ""
        return f"{self.base}-{kind}{tail}"
