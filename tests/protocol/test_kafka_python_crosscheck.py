"""Cross-check our codecs against an independent implementation: kafka-python 3.0.12.

kafka-python builds its messages from Kafka 4.x JSON schemas (`kafka.protocol.{consumer,metadata,admin,
producer}`); those dropped some old versions (KIP-896), which kafka-python still has as hand-written
positional structs in `kafka.protocol.old`. For every (api, version) either of them implements:
- requests/responses kafka-python encodes decode to the same field values in our codec;
- what we encode decodes in kafka-python to the values we put in.
Field names match because both sides use Kafka's JSON names in snake_case.
"""

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import kafka.protocol.old as kp_old
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from kcoord.protocol.schema import Schema
from tests.protocol.test_messages_roundtrip import array_item, message_strategy, present


def _json_classes() -> dict[tuple[int, bool], type[ApiMessage]]:
    classes: dict[tuple[int, bool], type[ApiMessage]] = {}
    for name in ("consumer", "metadata", "admin", "producer"):
        module = importlib.import_module(f"kafka.protocol.{name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, ApiMessage) and getattr(obj, "_json", None):
                classes[(obj.API_KEY, obj.is_request())] = obj
    return classes


def _old_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(kp_old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        found.update({k: v for k, v in vars(module).items() if isinstance(v, type) and "_v" in k})
    return found


API_VERSIONS = 18
JSON_CLASSES = _json_classes()
OLD_CLASSES = _old_classes()


# kafka-python's hand-written structs that disagree with Kafka's schema: DescribeLogDirsRequest_v0 has
# `partitions` as one INT32 where Kafka's v0 has []int32 (DescribeLogDirsRequest.json); v1-4 are checked
# against its JSON classes.
WRONG_IN_KAFKA_PYTHON = frozenset({("DescribeLogDirsRequest", 0)})


def _cases(schemas: dict[int, Schema], is_request: bool) -> Iterator[Any]:
    for api_key, schema in sorted(schemas.items()):
        kp_cls = JSON_CLASSES.get((api_key, is_request))
        for version in schema.versions:
            if kp_cls is not None and kp_cls.valid_versions[0] <= version <= kp_cls.valid_versions[1]:
                yield pytest.param(schema, version, kp_cls, id=f"{schema.name}-v{version}-json")
            elif (
                f"{schema.name}_v{version}" in OLD_CLASSES
                and (schema.name, version) not in WRONG_IN_KAFKA_PYTHON
            ):
                old_cls = OLD_CLASSES[f"{schema.name}_v{version}"]
                yield pytest.param(schema, version, old_cls, id=f"{schema.name}-v{version}-old")


CASES = list(_cases(REQUEST_SCHEMAS, True)) + list(_cases(RESPONSE_SCHEMAS, False))


# -- our dicts <-> kafka-python JSON-schema objects ------------------------------------------------

# kafka-python patches Kafka's authorized-operations INT32s into a set of bit numbers ("bitfield",
# None for INT32_MIN = "not requested") and renames two of them (kafka.protocol.metadata.metadata).
BITFIELDS = {
    ("MetadataResponse", "cluster_authorized_operations"): "authorized_operations",
    ("MetadataResponseTopic", "topic_authorized_operations"): "authorized_operations",
    ("DescribedGroup", "authorized_operations"): "authorized_operations",
    ("DescribeClusterResponse", "cluster_authorized_operations"): "authorized_operations",
}


def _int_to_bits(value: int) -> set[int] | None:
    bits = {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}
    return None if bits == {31} else bits


def _bits_to_int(bits: set[int] | None) -> int:
    value = sum(1 << b for b in ({31} if bits is None else bits))
    return value - (1 << 32) if value & (1 << 31) else value


def _to_kp(schema: Schema, version: int, message: dict[str, Any], kp_cls: Any) -> Any:
    kp_fields = kp_cls._struct.fields
    kwargs = {}
    for field in schema.fields:
        if (schema.name, field.name) in BITFIELDS and present(field, version):
            kwargs[BITFIELDS[schema.name, field.name]] = _int_to_bits(message[field.name])
        elif present(field, version):
            assert field.name in kp_fields, f"{schema.name}.{field.name} unknown to kafka-python"
            kwargs[field.name] = _value_to_kp(field.type, version, message[field.name], kp_fields[field.name])
    return kp_cls(**kwargs)


def _value_to_kp(kind: Any, version: int, value: Any, kp_field: Any) -> Any:
    if value is None:
        return None
    if isinstance(kind, Schema):
        return _to_kp(kind, version, value, kp_field.data_class)
    item = array_item(kind)
    if isinstance(item, Schema):
        return [_to_kp(item, version, v, kp_field.data_class) for v in value]
    return value


def _from_kp(schema: Schema, version: int, obj: Any) -> dict[str, Any]:
    fields = {}
    for field in schema.fields:
        if (schema.name, field.name) in BITFIELDS and present(field, version):
            fields[field.name] = _bits_to_int(getattr(obj, BITFIELDS[schema.name, field.name]))
        elif present(field, version):
            fields[field.name] = _value_from_kp(field.type, version, getattr(obj, field.name))
    return fields


def _value_from_kp(kind: Any, version: int, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(kind, Schema):
        return _from_kp(kind, version, value)
    item = array_item(kind)
    if isinstance(item, Schema):
        return [_from_kp(item, version, v) for v in value]
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


# -- our dicts <-> kafka-python's positional `old` structs -----------------------------------------


def _to_old(schema: Schema, version: int, message: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        _value_to_old(f.type, version, message[f.name]) for f in schema.fields if present(f, version)
    )


def _value_to_old(kind: Any, version: int, value: Any) -> Any:
    if isinstance(kind, Schema) and value is not None:  # a nullable struct (DescribeTopicPartitions' cursor)
        return _to_old(kind, version, value)
    item = array_item(kind)
    if isinstance(item, Schema) and value is not None:
        return [_to_old(item, version, v) for v in value]
    return value


def _from_old(schema: Schema, version: int, values: Any) -> dict[str, Any]:
    fields = [f for f in schema.fields if present(f, version)]
    assert len(fields) == len(values), f"{schema.name} v{version}: field count differs from kafka-python"
    return {f.name: _value_from_old(f.type, version, v) for f, v in zip(fields, values, strict=True)}


def _value_from_old(kind: Any, version: int, value: Any) -> Any:
    if isinstance(kind, Schema) and value is not None:
        return _from_old(kind, version, value)
    item = array_item(kind)
    if isinstance(item, Schema) and value is not None:
        return [_from_old(item, version, v) for v in value]
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def _present_only(schema: Schema, version: int, message: dict[str, Any]) -> dict[str, Any]:
    return _from_old(schema, version, _to_old(schema, version, message))


# -- the checks ------------------------------------------------------------------------------------


def _kp_encode(schema: Schema, version: int, message: dict[str, Any], kp_cls: Any) -> bytes:
    if issubclass(kp_cls, ApiMessage):
        return bytes(_to_kp(schema, version, message, kp_cls[version]).encode())
    return bytes(kp_cls(*_to_old(schema, version, message)).encode())


def _kp_decode(schema: Schema, version: int, data: bytes, kp_cls: Any) -> dict[str, Any]:
    if issubclass(kp_cls, ApiMessage):
        return _from_kp(schema, version, kp_cls.decode(data, version=version))
    obj = kp_cls.decode(data)
    return _from_old(schema, version, [getattr(obj, name) for name in kp_cls.SCHEMA.names])


CROSS = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(("schema", "version", "kp_cls"), CASES)
@CROSS
@given(data=st.data())
def test_kafka_python_encoding_decodes_identically(
    schema: Schema, version: int, kp_cls: Any, data: st.DataObject
) -> None:
    message = data.draw(message_strategy(schema, version))
    encoded = _kp_encode(schema, version, message, kp_cls)
    decoded = codec_for(schema, version).parse(encoded)
    assert _present_only(schema, version, dict(decoded)) == _present_only(schema, version, message)


@pytest.mark.parametrize(("schema", "version", "kp_cls"), CASES)
@CROSS
@given(data=st.data())
def test_our_encoding_decodes_in_kafka_python(
    schema: Schema, version: int, kp_cls: Any, data: st.DataObject
) -> None:
    message = data.draw(message_strategy(schema, version))
    if schema.api_key == API_VERSIONS:
        # kafka-python reads any ApiVersions response with a non-zero error as v0 (KIP-511 fallback);
        # test_api_versions_error_body_is_read_as_v0 covers that case.
        message["error_code"] = 0
    encoded = codec_for(schema, version).build(message)
    assert _kp_decode(schema, version, encoded, kp_cls) == _present_only(schema, version, message)


@pytest.mark.parametrize("requested_version", range(5))
def test_api_versions_error_body_is_read_as_v0(requested_version: int) -> None:
    """An UNSUPPORTED_VERSION answer is a v0 body whatever version was asked for (kafka-group-protocol.md
    section 1.6); kafka-python parses it as v0 regardless of the version it sent."""
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    encoded = codec_for(RESPONSE_SCHEMAS[API_VERSIONS], 0).build(body)
    decoded = JSON_CLASSES[(API_VERSIONS, False)].decode(encoded, version=requested_version)
    assert decoded.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(18, 0, 4)]


# kafka-python 3.0.12 has no classes for the consumer protocol of KIP-848; the requests of those two
# APIs are checked against frames librdkafka sends instead (tests/protocol/test_golden_frames.py:
# ConsumerGroupHeartbeat v1 joining, owning, steady and leaving, ConsumerGroupDescribe v0), and
# librdkafka reads our heartbeat responses in tests/integration/test_consumer_protocol.py.
# ConsumerGroupHeartbeat, ConsumerGroupDescribe, ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
# ShareAcknowledge; 90-92: the share-group offset APIs, cross-checked against Kafka's jar in
# test_share_group_offsets_java; 76 and 77 against bytes Kafka 4.3.1's classes wrote in
# test_share_group_frames.py
NOT_IN_KAFKA_PYTHON = frozenset({68, 69, 76, 77, 78, 79, 90, 91, 92})


def test_every_api_is_cross_checked_at_some_version() -> None:
    checked = {(case.values[0].api_key, case.values[0].name.endswith("Request")) for case in CASES}
    served = (set(REQUEST_SCHEMAS) | set(RESPONSE_SCHEMAS)) - NOT_IN_KAFKA_PYTHON
    expected = {(k, True) for k in served & set(REQUEST_SCHEMAS)} | {
        (k, False) for k in served & set(RESPONSE_SCHEMAS)
    }
    assert checked == expected
