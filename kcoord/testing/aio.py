"""`server.aio`: every call of a server object as a coroutine, for async tests.

An async test's clients (aiokafka) run on the test's own event loop; a blocking call on that loop
(waiting for a group to be Stable, while the consumer it waits for needs the loop to heartbeat) would
wait for itself. `await server.aio.wait_stable(group)` runs the same call on a worker thread instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["AsyncCalls"]


class AsyncCalls:
    """`await calls.<name>(...)` is `server.<name>(...)` run off the event loop."""

    def __init__(self, server: object) -> None:
        self._server = server

    def __getattr__(self, name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
        call = getattr(self._server, name)

        async def off_the_loop(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(call, *args, **kwargs)

        off_the_loop.__name__ = name
        return off_the_loop
