"""A TCP proxy between a node's pool and PostgreSQL that breaks the connection of one `kcoord_flush`
call at a chosen moment: `arm(after_commit=True)` lets the call reach PostgreSQL and commit, then
drops the connection before any of the answer reaches the node (the answer lost after the commit, as
in a restart in immediate mode or a network cut right after the commit); `arm(after_commit=False)`
drops it before the call reaches PostgreSQL (nothing written). Either way the node sees its connection
closed in the middle of the call and cannot tell which happened: the outcome is unknown.

It reads PostgreSQL's wire protocol (frontend/backend protocol 3, unencrypted: the pool must connect
with ssl=False) only to find the call: the statement whose Parse names `kcoord_flush(`, then the Bind
of that statement. The commit of an implicit transaction happens at its Sync, before ReadyForQuery,
so "after the commit" is when the server's ReadyForQuery ('Z') for that call arrives at the proxy.
Runs on the test's own event loop.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

__all__ = ["CommitDropProxy"]

_CHUNK = 1 << 16
_FLUSH = b"kcoord_flush("


def _frames(buffer: bytearray, *, typed: bool = True) -> list[tuple[int, bytes]]:
    """Complete messages at the front of `buffer` (removed from it): (type byte, payload)."""
    out: list[tuple[int, bytes]] = []
    while True:
        head = 5 if typed else 4
        if len(buffer) < head:
            return out
        length = struct.unpack_from(">i", buffer, head - 4)[0]
        end = head - 4 + length
        if len(buffer) < end:
            return out
        out.append((buffer[0] if typed else 0, bytes(buffer[head:end])))
        del buffer[:end]


class _Connection:
    """One proxied session: which prepared statements are `kcoord_flush`, and whether it is doomed."""

    def __init__(self, proxy: CommitDropProxy, client: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.flush_statements: set[bytes] = set()
        self.started = False  # the untyped startup message was seen
        self.doomed = False  # a flush call is in flight on an armed proxy: hold the server's answer
        self.from_client = bytearray()
        self.from_server = bytearray()

    def client_bytes(self, chunk: bytes) -> bool:
        """Forward the client's bytes? False: the connection was dropped before the call."""
        self.from_client += chunk
        if not self.started:
            if not _frames(self.from_client, typed=False):
                return True
            self.started = True
        for kind, payload in _frames(self.from_client):
            if kind == ord("P"):
                name, _, rest = payload.partition(b"\0")
                if _FLUSH in rest:
                    self.flush_statements.add(name)
            elif kind == ord("B") and self.proxy.armed is not None:
                statement = payload.split(b"\0", 2)[1]
                if statement in self.flush_statements:
                    return self._doom()
        return True

    def _doom(self) -> bool:
        after_commit, self.proxy.armed = self.proxy.armed, None
        if after_commit:
            self.doomed = True
            return True
        self.drop()
        return False

    def server_bytes(self, chunk: bytes) -> bool:
        """Forward the server's bytes? False: held, and the connection dropped after the commit."""
        if not self.doomed:
            return True
        self.from_server += chunk
        if any(kind == ord("Z") for kind, _ in _frames(self.from_server)):
            self.drop()
            self.proxy.dropped.set()
        return False

    def drop(self) -> None:
        self.proxy.dropped.set()
        for writer in (self.client, self.upstream):
            if writer is not None:
                writer.transport.abort()


class CommitDropProxy:
    """127.0.0.1:`port` -> 127.0.0.1:`upstream_port`."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.armed: bool | None = None  # the next flush call's fate: True after its commit, False before
        self.dropped = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def arm(self, *, after_commit: bool) -> None:
        self.dropped.clear()
        self.armed = after_commit

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = _Connection(self, writer)
        try:
            up_reader, conn.upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            await asyncio.gather(
                self._pump(reader, conn.upstream, conn.client_bytes),
                self._pump(up_reader, writer, conn.server_bytes),
            )
        except OSError:
            conn.drop()
        finally:
            self._tasks.discard(task)

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, check: Callable[[bytes], bool]
    ) -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                if check(chunk):
                    writer.write(chunk)
                    await writer.drain()
        except OSError:
            pass
        finally:
            writer.transport.abort()
