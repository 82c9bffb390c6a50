"""AlterConfigs (33) v0-2 and IncrementalAlterConfigs (44) v0-1: a topic's own configs.

AlterConfigs replaces a topic's whole set of configs (what is not named goes back to its default);
IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT per key, APPEND and SUBTRACT only to
LIST configs (Kafka's `ConfigurationControlManager.incrementalAlterConfigResource`). The result is
validated as CreateTopics validates configs (`kcoord/broker/topics/configs.py`): INVALID_CONFIG with
Kafka's message. Answered per resource once the new configs are durable; the topic's open partition
logs take them at once (a smaller `segment.bytes` rolls at the next append, retention applies at the
next check, as in Kafka).

Errors per resource: a duplicate resource or key INVALID_REQUEST; an unknown topic
UNKNOWN_TOPIC_OR_PARTITION; a group: `group_config_resources.py` (written to the group's own log);
the broker INVALID_REQUEST (kcoord's settings come from its command line
and are read-only at run time; docs/compat.md); any other resource type INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from kcoord.broker.apis.describe_configs import BROKER, TOPIC, config_refusal
from kcoord.broker.apis.group_config_resources import GROUP, cluster_wide, new_group_configs
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.configs import TOPIC_CONFIGS, ConfigType, InvalidConfig, validate_topic_configs
from kcoord.coordinator.groups.group_configs import GroupConfigsChanged
from kcoord.coordinator.metadata import validate_topic_name
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle_alter", "handle_incremental"]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
Failure = tuple[ErrorCode, str | None]


def handle_alter(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    _handle(ctx, req, meta, respond, incremental=False)


def handle_incremental(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    _handle(ctx, req, meta, respond, incremental=True)


def _handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, incremental: bool) -> None:
    resources: list[dict[str, Any]] = req["resources"]
    counts = Counter((int(r["resource_type"]), str(r["resource_name"])) for r in resources)
    outcomes: list[Failure | dict[str, str]] = []
    for resource in resources:
        key = (int(resource["resource_type"]), str(resource["resource_name"]))
        outcomes.append(_outcome(ctx, meta, resource, counts[key] > 1, incremental))
    changed = [i for i, c in enumerate(outcomes) if isinstance(c, dict)]
    if not changed or req["validate_only"]:
        respond({"responses": _responses(resources, outcomes, {})})
        return
    _write(ctx, resources, outcomes, changed, respond, incremental)


def _write(
    ctx: ServerContext,
    resources: list[dict[str, Any]],
    outcomes: list[Failure | dict[str, str]],
    changed: list[int],
    respond: Respond,
    incremental: bool,
) -> None:
    """The topics' new configs in one write, each group's in its own (its group's log); answered once
    every write settled."""
    topics = [i for i in changed if int(resources[i]["resource_type"]) == TOPIC]
    groups = [i for i in changed if int(resources[i]["resource_type"]) == GROUP]
    failed: dict[int, Failure] = {}
    remaining = [(1 if topics else 0) + len(groups)]

    def settled() -> None:
        remaining[0] -= 1
        if remaining[0] == 0:
            for i in topics:
                if i not in failed:
                    ctx.data.reconfigure(str(resources[i]["resource_name"]))
            respond({"responses": _responses(resources, outcomes, failed)})

    def topics_written(error: BaseException | None) -> None:
        if error is not None:
            failed.update(dict.fromkeys(topics, _storage_failure(error)))
        settled()

    if topics:
        ctx.topics.set_configs(
            [(str(resources[i]["resource_name"]), _configs(outcomes[i])) for i in topics], topics_written
        )
    for i in groups:
        _GroupAlter(ctx, resources[i], incremental, i, failed, settled).write(_configs(outcomes[i]))


def _configs(outcome: Failure | dict[str, str]) -> dict[str, str]:
    assert isinstance(outcome, dict)
    return outcome


class _GroupAlter:
    """One group's new configs, written; computed again and written again when another node wrote the
    group's configs in between (cluster mode: GroupConfigsChanged), as Kafka's controller applies
    concurrent alters one after the other. The node follows the other write within milliseconds
    (kcoord/cluster/metadata_sync.py), so a few tries with a short backoff are enough."""

    TRIES = 8
    BACKOFF_S = 0.05

    def __init__(
        self,
        ctx: ServerContext,
        resource: dict[str, Any],
        incremental: bool,
        index: int,
        failed: dict[int, Failure],
        settled: Callable[[], None],
    ) -> None:
        self.ctx, self.resource, self.incremental = ctx, resource, incremental
        self.index, self.failed, self.settled = index, failed, settled
        self.tries = 0

    def write(self, configs: dict[str, str]) -> None:
        self.tries += 1
        anywhere = cluster_wide(self.ctx)  # cluster mode: any node writes a group's configs
        name = str(self.resource["resource_name"])
        self.ctx.manager.group_configs.alter(name, configs, self._written, anywhere=anywhere)

    def _written(self, refused: ErrorCode | None, error: BaseException | None) -> None:
        if isinstance(error, GroupConfigsChanged) and self.tries < self.TRIES:
            delay = self.BACKOFF_S * self.tries
            asyncio.get_running_loop().call_later(delay, self._again)
            return
        if refused is not None:
            self.failed[self.index] = (refused, None)
        elif error is not None:
            self.failed[self.index] = _storage_failure(error)
        self.settled()

    def _again(self) -> None:
        outcome = new_group_configs(self.ctx, self.resource, self.incremental)
        if isinstance(outcome, tuple):  # no longer valid on top of the other node's change
            self.failed[self.index] = outcome
            self.settled()
            return
        self.write(outcome)


def _storage_failure(error: BaseException) -> Failure:
    return ErrorCode.KAFKA_STORAGE_ERROR, f"storage failure: {error}"


def _responses(
    resources: list[dict[str, Any]], outcomes: list[Failure | dict[str, str]], failed: dict[int, Failure]
) -> list[dict[str, Any]]:
    responses = []
    for i, (resource, outcome) in enumerate(zip(resources, outcomes, strict=True)):
        entry: dict[str, Any] = {
            "resource_type": int(resource["resource_type"]),
            "resource_name": str(resource["resource_name"]),
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        failure = outcome if isinstance(outcome, tuple) else failed.get(i)
        if failure is not None:
            entry["error_code"], entry["error_message"] = failure
        responses.append(entry)
    return responses


def _new_configs(ctx: ServerContext, resource: dict[str, Any], incremental: bool) -> Failure | dict[str, str]:
    """The topic's complete new set of own configs, or why not."""
    name = str(resource["resource_name"])
    if (reason := validate_topic_name(name)) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, reason
    topic = ctx.topics.get(name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    if ctx.topics.is_pending(name):
        return ErrorCode.INVALID_REQUEST, f"Topic '{name}' is being changed by another request."
    entries: list[dict[str, Any]] = resource["configs"]
    names = [str(e["name"]) for e in entries]
    if len(set(names)) != len(names):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    if not incremental:
        wanted: dict[str, str | None] = {str(e["name"]): e["value"] for e in entries}
    else:
        applied = _apply_operations(topic.config_map(), entries)
        if isinstance(applied, tuple):
            return applied
        wanted = dict(applied)
    try:
        return validate_topic_configs(wanted)
    except InvalidConfig as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)


def _apply_operations(current: dict[str, str], entries: list[dict[str, Any]]) -> Failure | dict[str, str]:
    configs = dict(current)
    for entry in entries:
        key, operation, value = str(entry["name"]), int(entry["config_operation"]), entry["value"]
        if operation not in _OPERATIONS:
            return ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation} for key {key}"
        definition = TOPIC_CONFIGS.get(key)
        if definition is None:
            return ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}"
        if operation == SET:
            if value is None:
                return ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {key}"
            configs[key] = str(value)
        elif operation == DELETE:
            configs.pop(key, None)
        else:
            if definition.type is not ConfigType.LIST:
                return ErrorCode.INVALID_CONFIG, (
                    f"Can't {_OPERATIONS[operation]} to key {key} because its type is not LIST."
                )
            items = [i for i in configs.get(key, definition.default).split(",") if i]
            given = [i.strip() for i in str(value or "").split(",") if i.strip()]
            if operation == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            configs[key] = ",".join(items)
    return configs


def _outcome(
    ctx: ServerContext, meta: RequestMeta, resource: dict[str, Any], duplicate: bool, incremental: bool
) -> Failure | dict[str, str]:
    if duplicate:
        return ErrorCode.INVALID_REQUEST, "Duplicate resource."
    if ctx.authorizer is not None:  # ALTER_CONFIGS; no message (KafkaApis.configsAuthorizationApiError)
        kind, name = int(resource["resource_type"]), str(resource["resource_name"])
        refused = config_refusal(ctx, meta, 44 if incremental else 33, AclOperation.ALTER_CONFIGS, kind, name)
        if refused is not None:
            return refused[0], None
    kind = int(resource["resource_type"])
    if kind == BROKER:
        return ErrorCode.INVALID_REQUEST, (
            "kcoord's broker settings are read-only at run time: set them with `kcoord serve` flags "
            "or KCOORD_* environment variables"
        )
    if kind == GROUP:
        return new_group_configs(ctx, resource, incremental)
    if kind != TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}"
    return _new_configs(ctx, resource, incremental)
