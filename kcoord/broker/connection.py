"""One client connection: an asyncio `Protocol` that splits frames and answers them in request order.

Kafka serves a connection's requests one after the other (the socket is muted while one is in flight,
`docs/kafka-group-protocol.md` §1.1). We read ahead: a request takes its place in a FIFO of response
slots when received (a parked JoinGroup holds back every later response on its socket) and its handler
starts when ordering.py says: after every earlier request it could observe; only reads overlap.

A SASL listener's connection is read through its `SaslGate` until authenticated (sasl_gate.py); an
SSL listener's principal is the client certificate's mapped DN, taken once the handshake is done.
Either way the per-request path is the PLAINTEXT one: one `is not None` check of the gate.

Bad input (malformed or oversized frame, unknown API key or version, undecodable body) closes only
this connection, with one log line. ApiVersions at a version we do not serve gets the v0-layout
UNSUPPORTED_VERSION answer instead (KIP-511), handled in `apis/api_versions.py`.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import struct
import time
from typing import cast

from kcoord.broker.apis import HANDLERS, api_versions, produce
from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.listener import PLAINTEXT_LISTENER, ListenerSetup
from kcoord.broker.ordering import RequestOrder, request_kind
from kcoord.broker.request_stats import ALWAYS_TIMED, LATENCY_SAMPLE_EVERY
from kcoord.broker.sasl_gate import COMPLETE, SASL_HANDSHAKE, Outcome, SaslGate
from kcoord.broker.security.principal import ANONYMOUS, KafkaPrincipal
from kcoord.broker.security.ssl_principal import NoMatchingRule
from kcoord.broker.security.tls import ssl_principal
from kcoord.protocol.errors import DecodeError, UnsupportedVersion
from kcoord.protocol.frames import FrameSplitter, FrameTooLarge, decode_request, encode_response

__all__ = ["Connection"]

log = logging.getLogger("kcoord.connection")

_CONNECTION_IDS = itertools.count(1)  # RequestMeta.connection_id
_HEAD = struct.Struct(">hhi")  # request_api_key, request_api_version, correlation_id
# Read-ahead bound: past this many unanswered requests we stop reading the socket (memory stays bounded
# against a client that pipelines without reading its responses).
MAX_IN_FLIGHT = 1024
_RESUME_BELOW = MAX_IN_FLIGHT // 2


class _Slot:
    """The place of one response in the connection's FIFO; `respond` fills it (once)."""

    __slots__ = ("api_key", "api_version", "conn", "correlation_id", "frame", "kind", "received")

    def __init__(
        self, conn: Connection, api_key: int, api_version: int, correlation_id: int, kind: int
    ) -> None:
        self.conn = conn
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.kind = kind  # how ordering.py counted it when it started
        self.frame: bytes | None = None
        self.received = 0.0  # perf_counter() at receipt if metrics time this request (RequestStats)

    def respond(self, body: dict[str, object]) -> None:
        if self.frame is not None:
            log.error(
                "second response for api_key=%d correlation_id=%d ignored", self.api_key, self.correlation_id
            )
            return
        conn = self.conn
        if conn._closed:
            return
        conn._order.finished(self.kind)
        if (stats := conn._stats) is not None and (
            self.received or body.get("error_code")
        ):  # nothing to record for an untimed success: skip the call (the hot path)
            stats.answered(self.api_key, self.api_version, self.received, body)
        try:
            self.frame = encode_response(self.api_key, self.api_version, self.correlation_id, body)
        except Exception:
            # A response the codec refuses is a bug in a handler. `respond` may run inside the group
            # logic or a timer: log it and drop this connection, never raise into the caller.
            log.exception("cannot encode api_key=%d api_version=%d", self.api_key, self.api_version)
            conn.abort("response encoding failed")
            return
        conn._slot_ready()


class Connection(asyncio.Protocol):
    """Per-socket state: frame splitter, FIFO of response slots, read/write flow control."""

    def __init__(
        self, ctx: ServerContext, connections: set[Connection], listener: ListenerSetup = PLAINTEXT_LISTENER
    ) -> None:
        self._ctx = ctx
        self._listener = listener
        self._principal: KafkaPrincipal = ANONYMOUS
        self._gate: SaslGate | None = None  # SASL listeners: until authenticated (or while it may expire)
        self._handlers = ctx.handlers or HANDLERS  # middlewares applied once at startup
        self._stats = ctx.stats  # one attribute load per request fewer than through the context
        self._connections = connections
        self._splitter = FrameSplitter(ctx.config.socket_request_max_bytes)
        self._slots: collections.deque[_Slot] = collections.deque()
        self._order = RequestOrder(self._run, self._resume)
        self._metas: dict[tuple[int, str | None], RequestMeta] = {}
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._client_host = ""
        self._in_batch = False
        self._flush_scheduled = False
        self._closed = False
        self._reading_paused = False
        self._writing_paused = False
        self._draining = False  # shutdown: answer what was received, read nothing more
        self._held: list[bytes] | None = None  # a test-control reset: bytes kept until release()
        self._debug = log.isEnabledFor(logging.DEBUG)  # read once: the check costs per request
        self._id = next(_CONNECTION_IDS)

    # -- asyncio.Protocol ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport implements asyncio.Transport without subclassing it.
        self._transport = transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else str(peer)
        self._peer = f"{host}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._client_host = f"/{host}"  # Kafka shows InetAddress.toString(): "/127.0.0.1"
        self._connections.add(self)
        if self._ctx.shutting_down:
            transport.close()
            return
        if self._ctx.holding:  # accepted while a test-control reset runs: read after it
            self.hold()
        listener = self._listener
        if listener.principal_mapper is not None:
            try:
                self._principal = ssl_principal(
                    transport.get_extra_info("ssl_object"), listener.principal_mapper
                )
            except (NoMatchingRule, ValueError) as exc:
                self.abort(f"no SSL principal: {exc}")
                return
        if listener.sasl is not None:
            self._gate = SaslGate(listener.sasl, self._api_versions_frame)
            self._splitter.max_frame_bytes = min(
                listener.sasl_max_receive_size, self._splitter.max_frame_bytes
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._slots.clear()
        self._order.clear()
        self._connections.discard(self)
        # Its share sessions end with it (kcoord/broker/share/edge.py), except when the server itself
        # is stopping: then the members' acquisitions stay in memory only and are forgotten, as a Kafka
        # broker's shutdown leaves them (the next leader counts them as never delivered; tests/share).
        if self._ctx.share is not None and not self._ctx.shutting_down:
            self._ctx.share.connection_closed(self._id)

    def data_received(self, data: bytes) -> None:
        if self._closed or self._draining:
            if self._held is not None and not self._closed:
                self._held.append(data)  # read before pause_reading took effect: kept for release()
            return
        try:
            frames = self._splitter.feed(data)
        except (FrameTooLarge, DecodeError) as exc:
            self.abort(f"bad frame: {exc}")
            return
        # Answer everything this read produced with one write: pipelined requests stay cheap.
        self._in_batch = True
        try:
            for payload in frames:
                if self._closed:
                    return
                if self._gate is None or not self._gated(payload):
                    self._handle(payload)
        finally:
            self._in_batch = False
        self._flush()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    # -- requests ----------------------------------------------------------------------------------
    def _handle(self, payload: bytes) -> None:
        if len(payload) < _HEAD.size:
            self.abort(f"request of {len(payload)} bytes is shorter than a header")
            return
        api_key, api_version, correlation_id = _HEAD.unpack_from(payload)
        if api_key == api_versions.API_KEY:
            try:
                frame = api_versions.frame(self._ctx, api_version, correlation_id, payload)
            except (DecodeError, UnsupportedVersion) as exc:
                self.abort(f"undecodable ApiVersions v{api_version}: {exc}")
                return
            self._enqueue_frame(frame)
            return
        handler = self._handlers.get(api_key)
        served = self._ctx.served.get(api_key)
        if handler is None or served is None or not served[0] <= api_version <= served[1]:
            # Kafka fails request parsing and closes the connection (§1.6 point 5).
            self.abort(f"unsupported api_key={api_key} api_version={api_version}")
            return
        try:
            header, body = decode_request(payload)
        except (DecodeError, UnsupportedVersion) as exc:
            self.abort(f"undecodable api_key={api_key} api_version={api_version}: {exc}")
            return
        meta = self._metas.get((api_version, header.client_id)) or self._meta(api_version, header.client_id)
        if self._debug:
            log.debug(
                "request api_key=%d api_version=%d correlation_id=%d client_id=%s peer=%s",
                api_key,
                api_version,
                correlation_id,
                meta.client_id,
                self._peer,
            )
        kind = request_kind(self._ctx, api_key, api_version, body)  # ordering.py: read, commuting or write
        if api_key == produce.API_KEY and not produce.wants_response(body):
            respond: Respond = self._order.finished_silently  # acks=0: Kafka sends no response at all
        else:
            respond = self._new_slot(api_key, api_version, correlation_id, kind)
        if self._order.admit(handler, body, meta, respond, kind):
            self._run(handler, body, meta, respond)
        if len(self._slots) >= MAX_IN_FLIGHT:
            self._update_reading()

    def _run(self, handler: Handler, body: Request, meta: RequestMeta, respond: Respond) -> None:
        """Start one request's handler (RequestOrder decides when: at receipt or at its turn)."""
        try:
            handler(self._ctx, body, meta, respond)
        except Exception:
            log.exception("handler failed client_id=%s peer=%s", meta.client_id, self._peer)
            self.abort("handler failed")

    def _resume(self) -> None:
        """Requests waited behind one that finished: start those whose turn came (RequestOrder)."""
        if self._closed:
            return
        self._in_batch = True  # what the started requests answer at once leaves in one write
        try:
            self._order.resume()
        finally:
            self._in_batch = False
        self._flush()

    def _meta(self, api_version: int, client_id: str | None) -> RequestMeta:
        """The same client sends the same header fields on every request: one RequestMeta per
        (version, client id) for the connection's life, not one per request."""
        meta = RequestMeta(
            api_version, client_id or "", self._client_host, self._principal, self._listener.name, self._id
        )
        if len(self._metas) < 64:
            self._metas[api_version, client_id] = meta
        return meta

    # -- SASL (sasl_gate.py) ------------------------------------------------------------------------
    def _gated(self, payload: bytes) -> bool:
        """True if the gate took this frame; False lets an authenticated connection's request through."""
        gate = self._gate
        assert gate is not None
        if gate.state == COMPLETE:  # attached after authentication only because the session expires
            now = time.monotonic()
            handshake = len(payload) >= _HEAD.size and _HEAD.unpack_from(payload)[0] == SASL_HANDSHAKE
            if not (handshake and gate.begin_reauthentication(now)):
                if gate.expired(now):
                    self.abort(
                        "SASL session expired (connections.max.reauth.ms or the credential's lifetime)"
                    )
                    return True
                return False
        self._apply(gate.receive(payload))
        return True

    def _apply(self, outcome: Outcome) -> None:
        gate = self._gate
        assert gate is not None
        if outcome.frame is not None:
            self._enqueue_frame(outcome.frame)
        if outcome.failed:
            self._fail_authentication(outcome.failure_frame, gate.failure_reason, outcome.immediate)
            return
        if outcome.authenticated:
            assert gate.principal is not None
            self._principal = gate.principal
            self._metas.clear()
            self._splitter.max_frame_bytes = self._ctx.config.socket_request_max_bytes
            if gate.expires_at is None:
                self._gate = None  # nothing more to check: the request path is PLAINTEXT's again

    def _fail_authentication(self, frame: bytes | None, reason: str, immediate: bool) -> None:
        """Kafka mutes the channel, waits connection.failed.authentication.delay.ms, sends the failure
        response (if any) and closes."""
        log.info("authentication failed peer=%s listener=%s: %s", self._peer, self._listener.name, reason)
        self._draining = True
        self._update_reading()
        delay = 0.0 if immediate else self._listener.failed_authentication_delay_s

        def finish() -> None:
            if frame is not None and not self._closed:
                self._enqueue_frame(frame)
                self._flush()
            self.close()

        asyncio.get_running_loop().call_later(delay, finish)

    def _api_versions_frame(self, api_version: int, correlation_id: int, payload: bytes) -> bytes:
        return api_versions.frame(self._ctx, api_version, correlation_id, payload)

    def _new_slot(self, api_key: int, api_version: int, correlation_id: int, kind: int) -> Respond:
        slot = _Slot(self, api_key, api_version, correlation_id, kind)
        if (stats := self._stats) is not None:  # RequestStats.received, inlined: every request pays it
            row = stats.counts[api_key]
            count = row[api_version] = row[api_version] + 1
            if count <= LATENCY_SAMPLE_EVERY or not count % LATENCY_SAMPLE_EVERY or api_key in ALWAYS_TIMED:
                slot.received = time.perf_counter()
        self._slots.append(slot)
        return slot.respond

    def _enqueue_frame(self, frame: bytes) -> None:
        slot = _Slot(self, api_versions.API_KEY, 0, 0, True)
        slot.frame = frame
        self._slots.append(slot)
        if not self._in_batch:
            self._flush()

    def _slot_ready(self) -> None:
        # Responses completed outside a read (durable commits, joins released by a timer) usually
        # come in bursts: one storage write resolves every commit queued behind it. Writing on the
        # next loop turn sends the whole burst of this connection in one send() instead of one each.
        if not self._in_batch and not self._closed and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        if not self._closed:
            self._flush()

    def _flush(self) -> None:
        slots = self._slots
        if not slots or slots[0].frame is None or self._transport is None:
            return
        frames = []
        while slots and (frame := slots[0].frame) is not None:
            frames.append(frame)
            slots.popleft()
        try:
            if len(frames) == 1:
                self._transport.write(frames[0])
            else:  # one writev: large Fetch responses are not copied into a joined buffer first
                self._transport.writelines(frames)
        except (RuntimeError, OSError):  # the transport closed under us; connection_lost follows
            return
        if self._reading_paused:
            self._update_reading()

    # -- flow control and closing ---------------------------------------------------------------
    def _update_reading(self) -> None:
        if self._transport is None or self._closed:
            return
        should_pause = self._writing_paused or self._draining or len(self._slots) >= MAX_IN_FLIGHT
        if should_pause and not self._reading_paused:
            self._transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused and len(self._slots) < _RESUME_BELOW:
            self._transport.resume_reading()
            self._reading_paused = False

    @property
    def peer(self) -> str:
        """The client's address as "host:port" (the test controls' request log)."""
        return self._peer

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        return len(self._slots)

    def drain(self) -> None:
        """Shutdown: stop reading new requests; in-flight ones are still answered."""
        self._draining = True
        self._update_reading()

    def hold(self) -> None:
        """A test-control reset: read nothing until `release()`; what was received is still answered.
        The path of every request stays the same (one flag it already tests)."""
        if self._held is None:
            self._held = []
        self._draining = True
        self._update_reading()

    def release(self) -> None:
        """After the reset: read again, starting with the bytes that arrived while holding."""
        held, self._held = self._held, None
        if held is None:
            return
        self._draining = False
        self._update_reading()
        for data in held:
            self.data_received(data)

    def drop(self) -> None:
        """A crash (`App.abandon()`): the socket is reset, nothing more is written."""
        self._closed = True
        self._slots.clear()
        self._order.clear()
        self._connections.discard(self)
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        """Close after the responses already written are sent."""
        if self._transport is not None and not self._closed:
            self._closed = True
            self._transport.close()

    def abort(self, reason: str) -> None:
        """Bad input: one log line, then close only this connection."""
        if self._closed:
            return
        log.warning("closing connection peer=%s: %s", self._peer, reason)
        self._slots.clear()
        self._order.clear()
        self.close()
