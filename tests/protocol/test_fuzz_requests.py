"""Random and mangled bytes into every request decoder: DecodeError or a message, nothing else.

A malformed frame closes the connection (style.md section 6), so any other exception type -- or a
hang -- would be a bug reachable by any client.
"""

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages import REQUEST_SCHEMAS
from kcoord.protocol.schema import Schema
from tests.protocol.test_messages_roundtrip import message_strategy

REQUEST_VERSIONS = [
    (schema, version) for _, schema in sorted(REQUEST_SCHEMAS.items()) for version in schema.versions
]
FUZZ = settings(max_examples=2500, deadline=None, suppress_health_check=list(HealthCheck))


def _decode_or_decode_error(schema: Schema, version: int, data: bytes) -> None:
    try:
        decoded = codec_for(schema, version).parse(data)
    except DecodeError:
        return
    assert isinstance(decoded, dict)


@FUZZ
@given(case=st.sampled_from(REQUEST_VERSIONS), data=st.binary(max_size=256))
def test_random_bytes_never_raise_anything_but_decode_error(case: tuple[Schema, int], data: bytes) -> None:
    _decode_or_decode_error(*case, data)


@st.composite
def _mangled_requests(draw: st.DrawFn) -> tuple[Schema, int, bytes]:
    """A valid encoding with one edit: truncated, a byte overwritten, or junk spliced in."""
    schema, version = draw(st.sampled_from(REQUEST_VERSIONS))
    valid: dict[str, Any] = draw(message_strategy(schema, version))
    data = bytearray(codec_for(schema, version).build(valid))
    position = draw(st.integers(0, len(data)))
    edit = draw(st.sampled_from(["truncate", "overwrite", "insert"]))
    if edit == "truncate":
        del data[position:]
    elif edit == "overwrite" and position < len(data):
        data[position] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
    else:
        data[position:position] = draw(st.binary(min_size=1, max_size=8))
    return schema, version, bytes(data)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_mangled_requests())
def test_mangled_requests_never_raise_anything_but_decode_error(case: tuple[Schema, int, bytes]) -> None:
    _decode_or_decode_error(*case)


def test_truncation_at_every_byte_is_a_decode_error() -> None:
    """Every strict prefix of a valid request fails: no request is a prefix of a longer one."""
    for schema, version in REQUEST_VERSIONS:
        data = codec_for(schema, version).build({})
        for cut in range(len(data)):
            try:
                codec_for(schema, version).parse(data[:cut])
            except DecodeError:
                continue
            raise AssertionError(f"{schema.name} v{version}: prefix of {cut}/{len(data)} bytes decoded")
