"""Hypothesis round trips for every request/response schema x every version.

Values are generated from the schema itself (`message_strategy`): only the fields the version
carries, nulls only where the version allows them, non-ASCII text, empty and multi-entry arrays.
The walker is reused by the consumer-protocol, records and kafka-python cross-check tests.
"""

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.protocol import types as t
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from kcoord.protocol.schema import Field, Schema, array

_INT_RANGES = {
    id(t.INT8): (-(2**7), 2**7 - 1),
    id(t.INT16): (-(2**15), 2**15 - 1),
    id(t.INT32): (-(2**31), 2**31 - 1),
    id(t.INT64): (-(2**63), 2**63 - 1),
    id(t.UINT16): (0, 2**16 - 1),
}
_NULLABLE_KINDS = {id(t.NULLABLE_STRING), id(t.NULLABLE_BYTES), id(t.RECORDS)}
# Mostly non-ASCII on purpose: multi-byte UTF-8 is where length prefixes go wrong.
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
BINARY = st.binary(max_size=24)


def array_item(kind: Any) -> Any | None:
    """The item type if `kind` is an `array(...)`, else None."""
    if isinstance(kind, type(array(t.INT32))) and not isinstance(kind, Schema):
        for attr in ("item", "items", "element", "of"):
            if hasattr(kind, attr):
                return getattr(kind, attr)
    return None


def is_flexible(schema: Schema, version: int) -> bool:
    return schema.flexible_since is not None and version >= schema.flexible_since


def present(field: Field, version: int) -> bool:
    return field.since <= version and (field.until is None or version <= field.until)


def nullable(field: Field, version: int) -> bool:
    if id(field.type) in _NULLABLE_KINDS:
        return True
    return field.nullable_since is not None and version >= field.nullable_since


def value_strategy(kind: Any, version: int, may_be_null: bool) -> st.SearchStrategy[Any]:
    base = _non_null_strategy(kind, version)
    return st.one_of(st.none(), base) if may_be_null else base


def _non_null_strategy(kind: Any, version: int) -> st.SearchStrategy[Any]:
    if isinstance(kind, Schema):
        return struct_strategy(kind, version)
    item = array_item(kind)
    if item is not None:
        return st.lists(value_strategy(item, version, False), max_size=3)
    if id(kind) in _INT_RANGES:
        low, high = _INT_RANGES[id(kind)]
        return st.integers(low, high)
    simple: dict[int, st.SearchStrategy[Any]] = {
        id(t.BOOLEAN): st.booleans(),
        id(t.FLOAT64): st.floats(allow_nan=False),
        id(t.UUID): st.uuids(),
        id(t.STRING): TEXT,
        id(t.NULLABLE_STRING): TEXT,
        id(t.BYTES): BINARY,
        id(t.NULLABLE_BYTES): BINARY,
        id(t.RECORDS): BINARY,
    }
    return simple[id(kind)]


# Cached per (schema, version): a strategy is built and validated once and reused by every example of
# every test that draws it. Built per example, building and validating the nested strategies took more
# CPU than drawing from them. Schemas hash by identity, and the shadows below are cached too.
# A tuple of the present fields mapped to a dict, not st.fixed_dictionaries: that one also draws a
# shuffle of each dict's key order (one more choice per key), keeps a printer per key and draws every
# absent field's st.just; 8% fewer instructions without. The codecs' indifference to key order, which the
# shuffle exercised, is asserted instead, in assert_round_trip.
@functools.cache
def struct_strategy(schema: Schema, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """A full message dict: present fields random, absent fields at their default."""
    fields = [field for field in schema.fields if present(field, version)]
    names = tuple(field.name for field in fields)
    absent = {field.name: field.default for field in schema.fields if not present(field, version)}
    values = st.tuples(*(value_strategy(field.type, version, nullable(field, version)) for field in fields))
    return values.map(functools.partial(_as_message, names, absent))


def _as_message(names: tuple[str, ...], absent: dict[str, Any], values: tuple[Any, ...]) -> dict[str, Any]:
    # Absent fields carry the schema's own default object, as st.just(field.default) did.
    return dict(zip(names, values, strict=True)) | absent


def message_strategy(schema: Schema, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_strategy(schema, version)


def schema_versions(schemas: dict[int, Schema]) -> Iterator[Any]:
    for api_key, schema in sorted(schemas.items()):
        for version in schema.versions:
            yield pytest.param(schema, version, id=f"{schema.name}-v{version}-key{api_key}")


def assert_round_trip(schema: Schema, version: int, message: dict[str, Any]) -> None:
    """Encode, decode, encode again; and the encoding follows the schema's field order, never the
    message's key order (every dict of the message reversed encodes to the same bytes)."""
    codec = codec_for(schema, version)
    data = codec.build(message)
    decoded = codec.parse(data)
    assert decoded == message
    assert codec.build(decoded) == data
    assert codec.build(reversed_keys(message)) == data


def reversed_keys(value: Any) -> Any:
    """`value` with the keys of every dict in it in reverse order."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


# Cached so that each shadow is one Schema object: codec_for caches by identity, so a new shadow per
# example generated and compiled its codec again every example.
@functools.cache
def with_unknown_tags(schema: Schema, flexible_since: int) -> Schema:
    """A copy of `schema` whose every struct carries one extra tagged field unknown to `schema`."""
    fields = [_shadow_field(field, flexible_since) for field in schema.fields]
    fields.append(
        Field(
            "unknown_tag_1000",
            t.STRING,
            since=flexible_since,
            tag=1000,
            tagged_since=flexible_since,
            default="",
        )
    )
    return Schema(
        schema.name,
        fields=tuple(fields),
        api_key=schema.api_key,
        versions=schema.versions,
        flexible_since=schema.flexible_since,
    )


def _shadow_field(field: Field, flexible_since: int) -> Field:
    kind = field.type
    if isinstance(kind, Schema):
        kind = with_unknown_tags(kind, flexible_since)
    elif isinstance(array_item(kind), Schema):
        kind = array(with_unknown_tags(array_item(kind), flexible_since))
    return Field(
        field.name,
        kind,
        since=field.since,
        until=field.until,
        nullable_since=field.nullable_since,
        default=field.default,
        tag=field.tag,
        tagged_since=field.tagged_since,
    )


def strip_unknown(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_unknown(v) for k, v in value.items() if k != "unknown_tag_1000"}
    if isinstance(value, list):
        return [strip_unknown(v) for v in value]
    return value


ROUND_TRIP = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(("schema", "version"), list(schema_versions(REQUEST_SCHEMAS)))
@ROUND_TRIP
@given(data=st.data())
def test_request_round_trips(schema: Schema, version: int, data: st.DataObject) -> None:
    assert_round_trip(schema, version, data.draw(message_strategy(schema, version)))


@pytest.mark.parametrize(("schema", "version"), list(schema_versions(RESPONSE_SCHEMAS)))
@ROUND_TRIP
@given(data=st.data())
def test_response_round_trips(schema: Schema, version: int, data: st.DataObject) -> None:
    assert_round_trip(schema, version, data.draw(message_strategy(schema, version)))


def _flexible_cases() -> Iterator[Any]:
    for schemas in (REQUEST_SCHEMAS, RESPONSE_SCHEMAS):
        for param in schema_versions(schemas):
            schema, version = param.values
            if is_flexible(schema, version):
                yield param


@pytest.mark.parametrize(("schema", "version"), list(_flexible_cases()))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_unknown_tagged_fields_are_skipped(schema: Schema, version: int, data: st.DataObject) -> None:
    """KIP-482: a newer peer may add tagged fields anywhere; we must skip them, never reject."""
    assert schema.flexible_since is not None
    shadow = with_unknown_tags(schema, schema.flexible_since)
    message = data.draw(message_strategy(shadow, version))
    data_with_unknown = codec_for(shadow, version).build(message)
    assert codec_for(schema, version).parse(data_with_unknown) == strip_unknown(message)
