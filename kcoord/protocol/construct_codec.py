"""The same schemas derived as compiled `construct` codecs.

Every Kafka primitive that construct cannot compile on its own (compact strings/bytes/arrays,
unsigned varints, the tagged-field section) is a small Construct subclass that implements both
`_parse/_build` and `_emitparse/_emitbuild`; the emitted code calls the module-level helpers below,
so `.compile()` yields code with no interpreted ("linked") part — `is_fully_compiled` checks that.
construct silently falls back to interpretation for VarInt, Adapters, Select and friends
(environment-notes.md), which is why none of them appear here.

This codec is the reference the generated one (protocol.codegen) is tested against; the server
uses the generated one because it is 7-9x faster (figures in kcoord/protocol/codegen.py, bench/protocol.py).
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any

import construct

from kcoord.protocol.errors import DecodeError
from kcoord.protocol.schema import Field, Schema, fresh_default
from kcoord.protocol.types import (
    BINARY,
    BOOLEAN,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    TEXT,
    UINT16,
    UUID,
    Array,
    Primitive,
    encode_uvarint,
)

_FIXED = {
    BOOLEAN: construct.Flag,
    INT8: construct.Int8sb,
    INT16: construct.Int16sb,
    INT32: construct.Int32sb,
    INT64: construct.Int64sb,
    UINT16: construct.Int16ub,
    FLOAT64: construct.Float64b,
}


# -- helpers the emitted code calls ---------------------------------------------------------------
def _read(stream: Any, n: int) -> bytes:
    data = stream.read(n)
    if n < 0 or len(data) != n:
        raise construct.StreamError("truncated")
    return bytes(data)


def read_uvarint(stream: Any) -> int:
    result = 0
    for shift in range(0, 35, 7):
        byte = _read(stream, 1)[0]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result
    raise construct.StreamError("unsigned varint longer than 5 bytes")


def read_length(stream: Any, compact: bool, width: int) -> int:
    """Length or count: compact = uvarint(n + 1), legacy = signed int of `width` bytes; -1 = null."""
    if compact:
        return read_uvarint(stream) - 1
    return int.from_bytes(_read(stream, width), "big", signed=True)


def write_length(stream: Any, n: int, compact: bool, width: int) -> None:
    stream.write(encode_uvarint(n + 1) if compact else n.to_bytes(width, "big", signed=True))


def read_blob(stream: Any, compact: bool, width: int, nullable: bool, text: bool) -> Any:
    n = read_length(stream, compact, width)
    if n < 0:
        if nullable and n == -1:
            return None
        raise construct.StreamError("null or negative length where not allowed")
    data = _read(stream, n)
    return data.decode() if text else data


def write_blob(stream: Any, obj: Any, compact: bool, width: int, nullable: bool, text: bool) -> Any:
    if obj is None:
        if not nullable:
            raise construct.StreamError("null where not allowed")
        write_length(stream, -1, compact, width)
        return obj
    data = obj.encode() if text else bytes(obj)
    write_length(stream, len(data), compact, width)
    stream.write(data)
    return obj


def read_count(stream: Any, compact: bool, nullable: bool) -> int:
    n = read_length(stream, compact, 4)
    if n < -1 or (n == -1 and not nullable):
        raise construct.StreamError("null or negative array count where not allowed")
    remaining = len(stream.getbuffer()) - stream.tell() if hasattr(stream, "getbuffer") else n
    if n > remaining:
        raise construct.StreamError("array count exceeds the remaining bytes")  # fail before allocating
    return n


def read_tags(stream: Any, known: dict[int, Any], this: Any) -> dict[int, Any]:
    """Tagged section: known tags parsed with their construct, unknown ones skipped (KIP-482)."""
    found: dict[int, Any] = {}
    for _ in range(read_uvarint(stream)):
        tag = read_uvarint(stream)
        data = _read(stream, read_uvarint(stream))
        if tag in known:
            found[tag] = known[tag](io.BytesIO(data), this)
    return found


def write_tags(stream: Any, obj: Mapping[int, bytes]) -> Any:
    stream.write(encode_uvarint(len(obj)))
    for tag in sorted(obj):
        stream.write(encode_uvarint(tag) + encode_uvarint(len(obj[tag])) + obj[tag])
    return obj


_HELPERS = (
    "from kcoord.protocol.construct_codec import "
    "read_uvarint, read_blob, write_blob, read_count, write_length, read_tags, write_tags"
)


# -- compile-friendly primitives ------------------------------------------------------------------
class Blob(construct.Construct):  # type: ignore[misc]
    """STRING/BYTES in legacy (int16/int32 length) or compact (uvarint) form, optionally nullable."""

    def __init__(self, compact: bool, width: int, nullable: bool, text: bool) -> None:
        super().__init__()
        self.args = (compact, width, nullable, text)

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return read_blob(stream, *self.args)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return write_blob(stream, obj, *self.args)

    def _emitparse(self, code: Any) -> str:
        code.append(_HELPERS)
        return f"read_blob(io, {', '.join(map(repr, self.args))})"

    def _emitbuild(self, code: Any) -> str:
        code.append(_HELPERS)
        return f"write_blob(io, obj, {', '.join(map(repr, self.args))})"


class KafkaArray(construct.Subconstruct):  # type: ignore[misc]
    """ARRAY / COMPACT_ARRAY of `subcon`, null when nullable."""

    def __init__(self, subcon: Any, compact: bool, nullable: bool) -> None:
        super().__init__(subcon)
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = read_count(stream, self.compact, self.nullable)
        return None if n < 0 else [self.subcon._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            write_length(stream, -1, self.compact, 4)
            return obj
        write_length(stream, len(obj), self.compact, 4)
        return [self.subcon._build(item, stream, context, path) for item in obj]

    def _emitparse(self, code: Any) -> str:
        code.append(_HELPERS)
        name = f"parse_array_{code.allocateId()}"
        code.append(f"""
            def {name}(io, this):
                n = read_count(io, {self.compact!r}, {self.nullable!r})
                return None if n < 0 else ListContainer([{self.subcon._compileparse(code)} for _ in range(n)])
        """)
        return f"{name}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(_HELPERS)
        name = f"build_array_{code.allocateId()}"
        code.append(f"""
            def {name}(items, io, this):
                if items is None:
                    write_length(io, -1, {self.compact!r}, 4)
                    return items
                write_length(io, len(items), {self.compact!r}, 4)
                for obj in items:
                    {self.subcon._compilebuild(code)}
                return items
        """)
        return f"{name}(obj, io, this)"


class NullableStruct(construct.Subconstruct):  # type: ignore[misc]
    """A nullable struct field: an INT8 marker (-1 null, 1 present), then the struct if present."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        marker = construct.Int8sb._parsereport(stream, context, path)
        return None if marker < 0 else self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        construct.Int8sb._build(-1 if obj is None else 1, stream, context, path)
        return obj if obj is None else self.subcon._build(obj, stream, context, path)

    def _emitparse(self, code: Any) -> str:
        name = f"parse_nullable_struct_{code.allocateId()}"
        code.append(f"""
            def {name}(io, this):
                marker = {construct.Int8sb._compileparse(code)}
                return None if marker < 0 else {self.subcon._compileparse(code)}
        """)
        return f"{name}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        name = f"build_nullable_struct_{code.allocateId()}"
        code.append(f"""
            def {name}(value, io, this):
                obj = -1 if value is None else 1
                {construct.Int8sb._compilebuild(code)}
                if value is None:
                    return value
                obj = value
                return {self.subcon._compilebuild(code)}
        """)
        return f"{name}(obj, io, this)"


class TaggedFields(construct.Construct):  # type: ignore[misc]
    """The tagged-field section: parses to {tag: value} of known tags; builds from {tag: encoded}."""

    def __init__(self, known: dict[int, Any]) -> None:
        super().__init__()
        self.known = known

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        parsers = {
            tag: (lambda s, this, sub=sub: sub._parsereport(s, this, path)) for tag, sub in self.known.items()
        }
        return read_tags(stream, parsers, context)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return write_tags(stream, obj or {})

    def _emitparse(self, code: Any) -> str:
        code.append(_HELPERS)
        parsers = []
        for tag, sub in self.known.items():
            name = f"parse_tag_{code.allocateId()}"
            code.append(f"""
                def {name}(io, this):
                    return {sub._compileparse(code)}
            """)
            parsers.append(f"{tag}: {name}")
        return f"read_tags(io, {{{', '.join(parsers)}}}, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(_HELPERS)
        return "write_tags(io, obj)"


# -- deriving a construct per schema and version --------------------------------------------------
def _kind(kind: Any, version: int, compact: bool, nullable: bool) -> Any:
    if isinstance(kind, Schema):
        return (
            NullableStruct(_struct(kind, version, compact)) if nullable else _struct(kind, version, compact)
        )
    if isinstance(kind, Array):
        return KafkaArray(_kind(kind.item, version, compact, False), compact, nullable)
    if kind in _FIXED:
        return _FIXED[kind]
    if kind is UUID:
        return construct.Bytes(16)
    if isinstance(kind, Primitive) and (kind in TEXT or kind in BINARY):
        return Blob(compact, 2 if kind in TEXT else 4, nullable, kind in TEXT)
    raise NotImplementedError(f"no construct for {kind!r}")


def _struct(schema: Schema, version: int, compact: bool) -> Any:
    present = [f for f in schema.fields if f.present(version, compact)]
    members = [
        f.name / _kind(f.type, version, compact, f.nullable(version)) for f in present if f.tag is None
    ]
    if compact:
        tagged = {
            f.tag: _kind(f.type, version, compact, f.nullable(version)) for f in present if f.tag is not None
        }
        members.append("_tagged" / TaggedFields(tagged))
    return construct.Struct(*members)


@cache
def construct_for(schema: Schema, version: int) -> Any:
    """The compiled construct of `schema` at `version`."""
    return _struct(schema, version, schema.is_flexible(version)).compile()


@cache
def _tag_codec(f: Field, version: int) -> Any:
    return _kind(f.type, version, True, f.nullable(version)).compile()


def is_fully_compiled(compiled: Any) -> bool:
    """True when construct linked no interpreted instance into the compiled code."""
    return not compiled.module.linkedinstances


# -- conversion between construct Containers and our message dicts --------------------------------
def _to_message(schema: Schema, version: int, flexible: bool, raw: Any) -> dict[str, Any]:
    tagged = raw.get("_tagged") or {}
    message: dict[str, Any] = {}
    for f in schema.fields:
        if not f.present(version, flexible):
            message[f.name] = fresh_default(f.default)
        elif f.tag is not None:
            known = f.tag in tagged
            message[f.name] = (
                _convert(f.type, version, flexible, tagged[f.tag]) if known else fresh_default(f.default)
            )
        else:
            message[f.name] = _convert(f.type, version, flexible, raw[f.name])
    return message


def _convert(kind: Any, version: int, flexible: bool, raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(kind, Schema):
        return _to_message(kind, version, flexible, raw)
    if isinstance(kind, Array):
        return [_convert(kind.item, version, flexible, item) for item in raw]
    if kind is UUID:
        return uuid.UUID(bytes=raw)
    return raw


def _from_message(schema: Schema, version: int, flexible: bool, message: Mapping[str, Any]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    tags: dict[int, bytes] = {}
    for f in schema.fields:
        value = message.get(f.name, f.default)
        if not f.present(version, flexible):
            if value != f.default:
                raise ValueError(f"field {f.name!r} cannot carry a non-default value in version {version}")
        elif f.tag is not None:
            if value != f.default:
                tags[f.tag] = _tag_codec(f, version).build(_unconvert(f.type, version, flexible, value))
        else:
            raw[f.name] = _unconvert(f.type, version, flexible, value)
    if flexible:
        raw["_tagged"] = tags
    return raw


def _unconvert(kind: Any, version: int, flexible: bool, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(kind, Schema):
        return _from_message(kind, version, flexible, value)
    if isinstance(kind, Array):
        return [_unconvert(kind.item, version, flexible, item) for item in value]
    if kind is UUID:
        return value.bytes
    return value


def parse(schema: Schema, version: int, data: bytes) -> dict[str, Any]:
    stream = io.BytesIO(data)
    try:
        raw = construct_for(schema, version).parse_stream(stream)
    except (construct.ConstructError, ValueError, struct.error) as exc:
        raise DecodeError(schema.api_key, version, None, str(exc)) from None
    if stream.tell() != len(data):
        raise DecodeError(schema.api_key, version, None, f"{len(data) - stream.tell()} trailing bytes")
    return _to_message(schema, version, schema.is_flexible(version), raw)


def build(schema: Schema, version: int, message: Mapping[str, Any]) -> bytes:
    flexible = schema.is_flexible(version)
    raw = _from_message(schema, version, flexible, message)
    stream = io.BytesIO()
    try:
        construct_for(schema, version).build_stream(raw, stream)
    except (construct.ConstructError, struct.error) as exc:
        raise ValueError(f"cannot encode {schema.name} v{version}: {exc}") from None
    return stream.getvalue()
