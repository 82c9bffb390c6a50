"""The derived codec of one schema at one version, generated once and cached (`codec_for`).

Its own module so that `schema` (the definitions) and `codegen` (which reads them) import each other in
one direction only: codegen imports schema, and this module imports both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcoord.protocol.codegen import generate
from kcoord.protocol.schema import Schema

__all__ = ["Codec", "codec_for"]


@dataclass(frozen=True, eq=False)
class Codec:
    """The derived codec of one schema at one version."""

    schema: Schema
    version: int
    parse: Callable[[bytes], dict[str, Any]]
    # (message, bytes consumed): for formats that newer peers extend by appending (ConsumerProtocol).
    parse_prefix: Callable[[bytes], tuple[dict[str, Any], int]]
    build: Callable[[Mapping[str, Any]], bytes]
    source: str


_CODECS: dict[tuple[Schema, int], Codec] = {}


def codec_for(schema: Schema, version: int) -> Codec:
    """The codec for `schema` at `version`, generated once and cached."""
    key = (schema, version)
    codec = _CODECS.get(key)
    if codec is None:
        if schema.versions is not None and version not in schema.versions:
            raise ValueError(f"{schema.name} has no version {version}")
        codec = Codec(schema, version, **generate(schema, version))
        _CODECS[key] = codec
    return codec
