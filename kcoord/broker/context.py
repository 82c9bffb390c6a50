"""What every API handler gets: the group manager, the topic registry and this broker's identity."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kcoord.broker.security import ANONYMOUS, KafkaPrincipal
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership
from kcoord.broker.verification import LOCAL, TxnVerification
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.metadata.scram_credentials import ScramCredentials
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.wiring.config import Config, HostPort

if TYPE_CHECKING:
    from kcoord.broker.markers import TxnMarkers
    from kcoord.broker.request_stats import RequestStats
    from kcoord.broker.security.authorizer import StandardAuthorizer
    from kcoord.broker.share.edge import ShareEdge
    from kcoord.coordinator.metadata.acl_store import AclStore

__all__ = ["Brokers", "DelayedResponses", "Handler", "Request", "RequestMeta", "Respond", "ServerContext"]

# Decoded request bodies: Kafka JSON field names -> values whose types the schema fixes.
Request = dict[str, Any]
Respond = Callable[[dict[str, object]], None]


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """What handlers need from the request header and the connection (one per connection and
    client id, cached by the connection).

    `client_host` is stored and shown as given (Kafka shows `/1.2.3.4`; the server decides the
    format).
    """

    api_version: int
    client_id: str
    client_host: str
    # Who sent it and on which listener (issue 25): set by the connection once it is authenticated.
    principal: KafkaPrincipal = ANONYMOUS
    listener_name: str = "PLAINTEXT"
    # Which connection sent it (a number unique for the server's life): a share session belongs to the
    # connection that opened it and ends when it closes (ShareSessionCache's connectionIdToSessionMap).
    connection_id: int = 0


class DelayedResponses:
    """Responses that wait on a timer (Fetch's max_wait_ms); all fire at once on shutdown."""

    __slots__ = ("_loop", "_tokens", "_waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._tokens = itertools.count()
        self._waiting: dict[int, tuple[asyncio.TimerHandle, Callable[[], None]]] = {}

    def add(self, delay_ms: int, fire: Callable[[], None]) -> int:
        """Calls `fire` after `delay_ms` (or at shutdown); the token cancels it."""
        token = next(self._tokens)
        handle = self._loop.call_later(max(delay_ms, 0) / 1000.0, self._fire, token)
        self._waiting[token] = (handle, fire)
        return token

    def cancel(self, token: int) -> None:
        waiting = self._waiting.pop(token, None)
        if waiting is not None:
            waiting[0].cancel()

    def _fire(self, token: int) -> None:
        _, fire = self._waiting.pop(token)
        fire()

    def fire_due(self, horizon: float) -> int:
        """Fire now what is due by loop time `horizon` (the test controls' `advance()`); how many."""
        due = sorted((handle.when(), token) for token, (handle, _) in self._waiting.items())
        fired = 0
        for when, token in due:
            if when > horizon:
                break
            waiting = self._waiting.pop(token, None)
            if waiting is None:  # cancelled by one fired before it
                continue
            handle, fire = waiting
            handle.cancel()
            fire()
            fired += 1
        return fired

    def fire_all(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for handle, fire in waiting.values():
            handle.cancel()
            fire()

    def __len__(self) -> int:
        return len(self._waiting)


class Brokers(Protocol):
    """The live brokers of a cluster (cluster mode's membership; None on a single node, which is
    the only broker and the controller)."""

    def brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(node id, host, port, rack) of every live node, as listener `listener` advertises it."""
        ...

    def listed(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """The brokers Metadata lists: the live ones and those whose lease lapsed a short while ago
        without a graceful stop (kcoord/cluster/membership.py LAPSED_LISTED_S), never as leaders."""
        ...

    def controller_id(self) -> int: ...

    def ready(self) -> tuple[bool, str]:
        """(False, why) while the node cannot reach its cluster's database (/readyz answers 503)."""
        ...


@dataclass(slots=True)
class ServerContext:
    """Shared by every connection; built by `coordinator.app` once recovery has finished."""

    config: Config
    manager: GroupManager
    topics: TopicRegistry
    data: TopicData
    producer_ids: ProducerIds
    transactions: TransactionCoordinator
    markers: TxnMarkers
    advertised: HostPort
    delayed: DelayedResponses
    # api key -> (min, max) actually served: SERVED_VERSIONS restricted to keys that have a handler.
    served: dict[int, tuple[int, int]]
    # Who leads each partition, and the elections and reassignments that move leadership (ElectLeaders,
    # Alter/ListPartitionReassignments): SingleNodeLeadership today, partition leases in cluster mode.
    leadership: PartitionLeadership
    shutting_down: bool = False
    # A test-control reset is replacing the state: connections accepted meanwhile wait (hold()).
    holding: bool = False
    # Cached encoded ApiVersions frames (version -> frame with correlation id 0).
    api_versions_frames: dict[int, bytes] = field(default_factory=dict)
    # -- observability (kcoord/wiring/http.py): both stay empty/None unless --http-listen is given --
    # api key -> handler, built once at startup with the middlewares around them (middleware.py);
    # empty = `apis.HANDLERS`.
    handlers: dict[int, Handler] = field(default_factory=dict)
    # Counted once per answered request when metrics are on.
    stats: RequestStats | None = None
    # -- authorization (issue 25): both None unless --authorizer standard. Handlers check
    # `ctx.authorizer is None` first, so the default path pays one attribute test per check
    # (kcoord/broker/authz.py has the calls; the ACL APIs write through `acls`).
    authorizer: StandardAuthorizer | None = None
    acls: AclStore[StandardAuthorizer] | None = None
    # -- listeners (issue 25): listener name -> the endpoint it advertises (Metadata, FindCoordinator,
    # DescribeCluster answer with the listener the request came in on); empty = `advertised` for all.
    endpoints: dict[str, HostPort] = field(default_factory=dict)
    # SCRAM credentials (coordinator log record type 9); None only in tests that build a bare context.
    credentials: ScramCredentials | None = None
    # Cluster mode (issue 27): the live nodes Metadata and DescribeCluster list; None = this node alone.
    brokers: Brokers | None = None
    # Who answers Produce's and TxnOffsetCommit's transaction verification (KIP-890, verification.py):
    # this node's `transactions` (LOCAL), or in cluster mode the transactional id's owner.
    verification: TxnVerification = LOCAL
    # Share groups' data side (issue 34, kcoord/broker/share): the share-partition tenant, the share
    # sessions and the parked ShareFetches; None where the tenant is not built (cluster mode for now),
    # and ShareFetch/ShareAcknowledge answer UNSUPPORTED_VERSION.
    share: ShareEdge | None = None

    def endpoint(self, meta: RequestMeta) -> HostPort:
        """The advertised endpoint of the listener this request arrived on."""
        return self.endpoints.get(meta.listener_name, self.advertised)

    @property
    def node_id(self) -> int:
        return self.config.node_id


Handler = Callable[[ServerContext, Request, RequestMeta, Respond], None]
