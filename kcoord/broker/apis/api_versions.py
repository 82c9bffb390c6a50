"""ApiVersions (18), v0-4. v1: throttle_time_ms; v3: flexible body (header stays v0), client software
name/version validated; v3+ tagged feature fields: the one feature kcoord has, `transaction.version`
(KIP-890), supported 0-2 and finalized at `--transaction-version`. As Kafka's
ApiVersionsResponse.maybeFilterSupportedFeatureKeys, a supported range starting at 0 is omitted below v4
(KAFKA-17492: older clients cannot read it) and, as createFinalizedFeatureKeys, a finalized level 0 is
not listed. Kafka 4 clients use Transactions V2 only when the finalized level is at least 2
(TransactionManager, `transaction.version`).

Answered from cached frames (one encode per version for the server's lifetime; only the correlation
id is patched in). An unsupported version gets the v0-layout UNSUPPORTED_VERSION body listing key 18's
range, without parsing the request body (KIP-511, Kafka's `ApiVersionsRequest.getErrorResponse`).
"""

from __future__ import annotations

import re
import struct

from kcoord.broker.context import ServerContext
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_request, encode_response

__all__ = ["API_KEY", "frame"]

API_KEY = 18
TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2
_FALLBACK = -1  # cache slot of the UNSUPPORTED_VERSION answer
_CORRELATION = struct.Struct(">i")
# Kafka's ApiVersionsRequest.isValid: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def frame(ctx: ServerContext, api_version: int, correlation_id: int, payload: bytes) -> bytes:
    """The whole response frame; raises `DecodeError` for an undecodable v3+ body (caller closes)."""
    low, high = ctx.served[API_KEY]
    if not low <= api_version <= high:
        return _patched(_cached(ctx, _FALLBACK), correlation_id)
    if api_version >= 3:
        _, body = decode_request(payload)
        if not (
            _SOFTWARE.fullmatch(str(body["client_software_name"]))
            and _SOFTWARE.fullmatch(str(body["client_software_version"]))
        ):
            # Kafka answers INVALID_REQUEST with an empty key list.
            return encode_response(
                API_KEY, api_version, correlation_id, {"error_code": ErrorCode.INVALID_REQUEST}
            )
    return _patched(_cached(ctx, api_version), correlation_id)


def _cached(ctx: ServerContext, version: int) -> bytes:
    cached = ctx.api_versions_frames.get(version)
    if cached is None:
        cached = ctx.api_versions_frames[version] = _encode(ctx, version)
    return cached


def _encode(ctx: ServerContext, version: int) -> bytes:
    if version == _FALLBACK:
        low, high = ctx.served[API_KEY]
        fallback = {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": API_KEY, "min_version": low, "max_version": high}],
        }
        return encode_response(API_KEY, 0, 0, fallback)
    keys = [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, (low, high) in sorted(ctx.served.items())
    ]
    body: dict[str, object] = {"error_code": ErrorCode.NONE, "api_keys": keys}
    if version >= 3:
        level = ctx.config.transaction_version
        body["supported_features"] = (
            [{"name": TRANSACTION_VERSION, "min_version": 0, "max_version": MAX_TRANSACTION_VERSION}]
            if version >= 4
            else []
        )
        body["finalized_features_epoch"] = 0  # the features never change while the server runs
        body["finalized_features"] = (
            [{"name": TRANSACTION_VERSION, "max_version_level": level, "min_version_level": level}]
            if level
            else []
        )
    return encode_response(API_KEY, version, 0, body)


def _patched(cached: bytes, correlation_id: int) -> bytes:
    # ApiVersions responses always use header v0: size (4 bytes), correlation id (4 bytes), body.
    return cached[:4] + _CORRELATION.pack(correlation_id) + cached[8:]
