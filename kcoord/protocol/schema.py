"""The schema DSL: each API's request and response is defined once, every version derived from it.

    Field(name, type, *, since=0, until=None, nullable_since=None, default=MISSING,
          tag=None, tagged_since=None)
    array(item)                      # item: a primitive or a nested Schema
    Schema(name, fields, api_key=None, versions=None, flexible_since=None)
    codec_for(schema, version)       # (kcoord.protocol.codecs) cached: .parse(bytes), .build(mapping)

Messages are plain dicts keyed by the field names (Kafka's JSON field names in snake_case). A decoded
message holds every field of the schema; fields the version does not carry hold their default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcoord.protocol.types import Array, Primitive, implicit_default


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True, eq=False)
class Field:
    """One field; present in versions since..until (inclusive, None = open ended)."""

    name: str
    type: Any
    since: int = field(default=0, kw_only=True)
    until: int | None = field(default=None, kw_only=True)
    nullable_since: int | None = field(default=None, kw_only=True)
    default: Any = field(default=MISSING, kw_only=True)
    tag: int | None = field(default=None, kw_only=True)
    tagged_since: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.default is MISSING:
            object.__setattr__(self, "default", _default_for(self.type))

    def present(self, version: int, flexible: bool) -> bool:
        """Carried on the wire in `version`: tagged fields exist only in flexible versions (KIP-482)."""
        if version < self.since or (self.until is not None and version > self.until):
            return False
        if self.tag is None:
            return True
        return flexible and version >= (self.tagged_since if self.tagged_since is not None else self.since)

    def nullable(self, version: int) -> bool:
        if isinstance(self.type, Primitive) and self.type.nullable:
            return True
        return self.nullable_since is not None and version >= self.nullable_since


class Schema:
    """A struct: a top-level message (with api_key and versions) or a nested one."""

    __slots__ = ("api_key", "fields", "flexible_since", "name", "versions")

    def __init__(
        self,
        name: str,
        fields: tuple[Field, ...] = (),
        api_key: int | None = None,
        versions: range | None = None,
        flexible_since: int | None = None,
    ) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.api_key = api_key
        self.versions = versions
        self.flexible_since = flexible_since
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: duplicate field names")

    def is_flexible(self, version: int) -> bool:
        return self.flexible_since is not None and version >= self.flexible_since

    def defaults(self) -> dict[str, Any]:
        return {f.name: fresh_default(f.default) for f in self.fields}

    def __repr__(self) -> str:
        return f"Schema({self.name!r})"


def array(item: Any) -> Array:
    return Array(item)


def _default_for(kind: Any) -> Any:
    if isinstance(kind, Schema):
        return kind.defaults()
    return implicit_default(kind)


def fresh_default(value: Any) -> Any:
    """A copy of a default that a decoded message may own (defaults are shared, messages mutable)."""
    if isinstance(value, dict):
        return {k: fresh_default(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fresh_default(v) for v in value]
    return value
