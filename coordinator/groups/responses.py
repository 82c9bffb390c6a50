"""Response dicts shaped for the request's version.

A response carries only the fields its version has (the codec fills defaults for absent keys and
rejects non-default values for fields a version cannot carry), so every builder here takes the
version. Field names are the snake_case Kafka JSON names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.groups.errors import ErrorCode

__all__ = [
    "JoinMember",
    "join_error",
    "join_response",
    "sync_error",
    "sync_response",
]

Response = dict[str, object]


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


def join_response(
    version: int,
    *,
    error: ErrorCode = ErrorCode.NONE,
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    member_id: str = "",
    members: Sequence[JoinMember] = (),
    skip_assignment: bool = False,
) -> Response:
    """JoinGroup response. ProtocolName is non-nullable before v7 (Kafka sends "" there)."""
    resp: Response = {
        "error_code": int(error),
        "generation_id": generation_id,
        "protocol_name": protocol_name if version >= 7 else (protocol_name or ""),
        "leader": leader,
        "member_id": member_id,
        "members": [_join_member(version, m) for m in members],
    }
    if version >= 7:
        resp["protocol_type"] = protocol_type
    if version >= 9:
        resp["skip_assignment"] = skip_assignment
    return resp


def _join_member(version: int, m: JoinMember) -> dict[str, object]:
    entry: dict[str, object] = {"member_id": m.member_id, "metadata": m.metadata}
    if version >= 5:
        entry["group_instance_id"] = m.group_instance_id
    return entry


def join_error(version: int, error: ErrorCode, member_id: str = "") -> Response:
    """Kafka's JoinGroupResult(memberId, error): generation -1, no protocol, leader ""."""
    return join_response(version, error=error, member_id=member_id)


def sync_response(
    version: int, protocol_type: str | None, protocol_name: str | None, assignment: bytes
) -> Response:
    resp: Response = {"error_code": int(ErrorCode.NONE), "assignment": assignment}
    if version >= 5:
        resp["protocol_type"] = protocol_type
        resp["protocol_name"] = protocol_name
    return resp


def sync_error(version: int, error: ErrorCode) -> Response:
    """Error: ProtocolType/ProtocolName null (v5+), assignment empty bytes (never null)."""
    resp: Response = {"error_code": int(error), "assignment": b""}
    if version >= 5:
        resp["protocol_type"] = None
        resp["protocol_name"] = None
    return resp
