"""What wraps the API handlers: an explicit list of middlewares, applied in one documented order when the
handler table is built, once at startup (the composition root passes the list: kcoord/wiring/app.py).

A request passes the layers outermost first, in the order of `Layer`:

1. TEST_CONTROLS (`--enable-test-controls`, kcoord/wiring/controls/wiring.py): logs every request and
   injects the armed faults, so a fault or a log entry sees the request as the client sent it, before
   any other layer answers it.
2. CLUSTER_ROUTING (cluster mode, kcoord/cluster/edge.py): a coordinator API for a group or
   transactional id whose shard this node does not serve is refused (NOT_COORDINATOR, ...) before the
   handler runs, and FindCoordinator answers from the cluster's view.

Authorization is not a layer: Kafka's KafkaApis authorizes per resource inside each API (an answer
names which topics or groups were refused), so the handlers call kcoord/broker/authz.py themselves.
Transaction verification is not one either: it is a port the handlers ask (verification.py).

A middleware wraps only the APIs it has business with and returns the others' handler itself, so an
API no layer applies to is called directly: no call per request is added. None of them holds the
state a test-control reset replaces (they reach it through the context each call gets), so the table
outlives a reset.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Protocol

from kcoord.broker.apis import HANDLERS
from kcoord.broker.context import Handler

__all__ = ["Layer", "Middleware", "handler_table"]


class Layer(enum.IntEnum):
    """Where a middleware sits: lower is outer (sees the request first)."""

    TEST_CONTROLS = 10
    CLUSTER_ROUTING = 20


class Middleware(Protocol):
    @property
    def layer(self) -> Layer: ...

    def wrap(self, api_key: int, inner: Handler) -> Handler:
        """The handler of `api_key` with this layer around `inner` (`inner` itself when this layer has
        nothing to do with the API; a layer may also answer an API itself without calling `inner`)."""
        ...


def handler_table(
    middlewares: Sequence[Middleware], plain: Mapping[int, Handler] = HANDLERS
) -> dict[int, Handler]:
    """api key -> the handler a connection calls: each of `plain` inside `middlewares`, ordered by layer
    (the outermost wraps last); of two middlewares of one layer the first given is the outer."""
    innermost_first = list(reversed(sorted(middlewares, key=lambda m: m.layer)))
    table: dict[int, Handler] = {}
    for api_key, handler in plain.items():
        for middleware in innermost_first:
            handler = middleware.wrap(api_key, handler)
        table[api_key] = handler
    return table
