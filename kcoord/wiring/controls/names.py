"""Kafka API and error names as the test controls take them: a name (any case) or a number."""

from __future__ import annotations

from kcoord.coordinator.groups.controls import TestControlError
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.metrics import API_NAMES

__all__ = ["ALL_API_NAMES", "ControlError", "api_key", "api_name", "error_code"]

# A control that cannot apply: `status` is the HTTP status (400 bad argument, 404 unknown thing,
# 409 conflict). One class with the group controls' error, so the HTTP routes answer both alike.
ControlError = TestControlError

# Every API the server serves, by Kafka's message names (the metrics' table plus the SASL and SCRAM ones).
ALL_API_NAMES: dict[int, str] = {
    **API_NAMES,
    17: "SaslHandshake",
    36: "SaslAuthenticate",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
}
_BY_NAME = {name.lower(): key for key, name in ALL_API_NAMES.items()}


def api_key(value: object) -> int:
    """An API by Kafka name ("Heartbeat", any case) or key (12)."""
    if isinstance(value, int) and not isinstance(value, bool) and value in ALL_API_NAMES:
        return value
    if isinstance(value, str) and value.lower() in _BY_NAME:
        return _BY_NAME[value.lower()]
    if isinstance(value, str) and value.isdigit() and int(value) in ALL_API_NAMES:
        return int(value)
    raise ControlError(400, f"unknown api {value!r}: give a Kafka API name or key")


def api_name(key: int) -> str:
    return ALL_API_NAMES.get(key, str(key))


def error_code(value: object) -> ErrorCode:
    """An error by Kafka name ("NOT_COORDINATOR", any case) or code (16)."""
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return ErrorCode(value)
        if isinstance(value, str):
            return ErrorCode(int(value)) if value.lstrip("-").isdigit() else ErrorCode[value.upper()]
    except (KeyError, ValueError):
        pass
    raise ControlError(400, f"unknown error {value!r}: give a Kafka error name or code")
