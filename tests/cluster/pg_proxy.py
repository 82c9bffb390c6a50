"""A TCP proxy between one node and PostgreSQL that can black-hole the traffic: `cut()` stops
forwarding in both directions without closing anything (what a network partition does: nothing
arrives, nothing is refused, no RST), `heal()` forwards again what was held and what comes next.

Held bytes are delivered after the heal, as TCP's retransmissions deliver them after a short
partition; `heal(reset=True)` is a longer one instead: every connection is lost (closed with a RST
both ways), with the bytes it held. A connection made during the cut is accepted (the kernel does
it) but not connected upstream until the heal, as a SYN that gets no answer. Runs its own event
loop in a daemon thread, so the synchronous process tests can drive it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["BlackHoleProxy"]

_CHUNK = 1 << 16


class BlackHoleProxy:
    """127.0.0.1:`port` -> 127.0.0.1:`upstream_port`."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._open = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="pg-proxy")

    def start(self) -> int:
        self._thread.start()
        self._call(self._listen())
        return self.port

    def cut(self) -> None:
        self._loop.call_soon_threadsafe(self._open.clear)

    def heal(self, *, reset: bool = False) -> None:
        """Forward again. `reset`: first close every connection made before (what the node finds
        when the partition outlasted TCP's retransmissions, or the server dropped its sessions);
        the held bytes are lost with them."""
        if reset:
            self._call(self._reset())
        self._loop.call_soon_threadsafe(self._open.set)

    def close(self) -> None:
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    # -- on the proxy's loop ---------------------------------------------------------------------------
    def _call(self, coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _listen(self) -> None:
        self._open.set()
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._open.wait()  # a connect during the cut waits, unanswered
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                await self._open.wait()  # held while cut: read no more, forward nothing
                writer.write(chunk)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _reset(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
