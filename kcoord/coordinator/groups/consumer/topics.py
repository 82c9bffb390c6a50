"""What a consumer group needs to know of topics, and how a member's subscription resolves to them.

The port `TopicView` lives here, with the package that consumes it; the server wires it to the topic
registry (coordinator/topics). A member subscribes by names, by a regular expression, or both
(KIP-848); Kafka matches a `SubscribedTopicRegex` against whole topic names with RE2 syntax
(com.google.re2j), so kcoord uses RE2 too, never Python's `re`.

With an authorizer, the topics an expression matches are kept only if the subscriber may DESCRIBE
them, silently (Kafka 4.0+, KAFKA-18813: GroupMetadataManager.refreshRegularExpressions and
filterTopicDescribeAuthorizedTopics, since moved to TopicRegexResolver). The check comes in as a
plain `Describable` callable, built by the server from the heartbeat's principal and host, so this
package never sees the authorizer; None (no authorizer) filters nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Protocol

import re2

__all__ = ["Describable", "TopicView", "compile_regex", "metadata_hash", "regex_error", "subscribed_names"]


class TopicView(Protocol):
    """The topics that exist now."""

    @property
    def version(self) -> int:
        """Changes whenever a topic is created, deleted or grows: cached resolutions are stale."""
        ...

    def describe(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of an existing topic, else None."""
        ...

    def name_of(self, topic_id: uuid.UUID) -> str | None: ...

    def names(self) -> Iterable[str]: ...


# May the subscriber DESCRIBE this topic? Kafka asks the authorizer with the request context of the
# heartbeat that triggers the regex refresh (logIfDenied=false: a filtered topic is not a denial).
Describable = Callable[[str], bool]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an invalid expression is the client's error, answered, not logged


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> tuple[re2._Regexp | None, str | None]:
    try:
        return re2.compile(pattern, _OPTIONS), None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        return None, reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


def compile_regex(pattern: str) -> re2._Regexp | None:
    """The compiled expression, or None if RE2 refuses it (INVALID_REGULAR_EXPRESSION)."""
    return _compiled(pattern)[0]


def regex_error(pattern: str) -> str | None:
    """Why RE2 refuses `pattern` (its description), or None if it compiles."""
    return _compiled(pattern)[1]


def subscribed_names(
    names: Iterable[str], regex: str | None, topics: TopicView, describable: Describable | None = None
) -> set[str]:
    """The topic names a subscription covers: its names, plus every existing topic whose whole name
    the expression matches and, given `describable`, that it allows (Kafka's ConsumerGroup
    subscribedTopicNames with resolved regexes). Names are not filtered: the server refused the
    request if any of them was not describable (KafkaApis.handleConsumerGroupHeartbeat)."""
    out = set(names)
    if regex:
        compiled = compile_regex(regex)
        if compiled is not None:
            matched = (name for name in topics.names() if compiled.fullmatch(name) is not None)
            out.update(matched if describable is None else filter(describable, matched))
    return out


def metadata_hash(names: Iterable[str], topics: TopicView) -> int:
    """A 63-bit hash of the subscribed topics that exist: their names, ids and partition counts.
    A change of it bumps the group epoch, as Kafka 4.1's ConsumerGroupMetadataValue.MetadataHash
    does (a topic created, deleted or grown). Not Kafka's Murmur3 value: only equality matters."""
    digest = hashlib.blake2b(digest_size=8)
    found = False
    for name in sorted(names):
        described = topics.describe(name)
        if described is not None:
            found = True
            digest.update(f"{name}\0{described[0]}\0{described[1]}\0".encode())
    # Utils.computeGroupHash: no existing topic hashes to 0, a new group's own hash, so that a group
    # subscribed to nothing that exists has no hash change to bump its epoch for (a member's changed
    # subscription still does).
    return int.from_bytes(digest.digest(), "big") >> 1 if found else 0
