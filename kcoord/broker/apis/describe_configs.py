"""DescribeConfigs (32), v0-4. v0: is_default; v1: config_source and synonyms (include_synonyms);
v3: config_type and documentation (include_documentation); v4: flexible.

Topics: every Kafka topic config with the topic's own value (DYNAMIC_TOPIC_CONFIG) or Kafka's default
(DEFAULT_CONFIG), or for compression.type and its levels the broker's setting (STATIC_BROKER_CONFIG);
`kcoord/broker/topics/configs.py` says which of them kcoord acts on. The broker (resource
name = our node id; "" names the cluster-wide dynamic defaults, none here, as on a Kafka cluster where
none were set): the settings kcoord was started with (STATIC_BROKER_CONFIG)
and the broker-level defaults behind the topic configs, all read-only (kcoord's settings are changed on
its command line, not at run time). Groups (type 32): `group_config_resources.py`. Other resource
types: INVALID_REQUEST, as Kafka's `ConfigHelper`
answers a type it does not describe. A requested key that does not exist is left out, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.group_config_resources import GROUP, describe_group
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.config_docs import DOCS
from kcoord.broker.topics.configs import (
    BROKER_DEFAULTS,
    TOPIC_CONFIGS,
    ConfigEntry,
    ConfigSource,
    ConfigType,
    TopicConfigDef,
    broker_settings,
    describe_topic,
)
from kcoord.broker.topics.synonyms import (
    BROKER_CHAINS,
    BROKER_ONLY_DEFAULTS,
    DYNAMIC_DEFAULTS,
    config_synonyms,
)
from kcoord.coordinator.metadata import validate_topic_name
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["BROKER", "TOPIC", "broker_configs", "config_refusal", "handle"]

TOPIC = 2  # ConfigResource.Type
BROKER = 4


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    synonyms = bool(req.get("include_synonyms", False))
    documentation = bool(req.get("include_documentation", False))
    results = []
    for resource in req["resources"]:
        kind, name = int(resource["resource_type"]), str(resource["resource_name"])
        keys = resource["configuration_keys"]
        result: dict[str, Any] = {"resource_type": kind, "resource_name": name, "configs": []}
        refused = None
        if ctx.authorizer is not None:  # ConfigHelper.handleDescribeConfigsRequest: the error's own message
            refused = config_refusal(ctx, meta, 32, AclOperation.DESCRIBE_CONFIGS, kind, name)
        described = refused or _describe(ctx, kind, name, keys)
        if isinstance(described, tuple):
            result["error_code"], result["error_message"] = described
        else:  # Kafka never sets the message then: its generated default, "" (ConfigHelper.describeConfigs)
            result["error_code"], result["error_message"] = ErrorCode.NONE, ""
            result["configs"] = [_entry(e, kind, version, synonyms, documentation) for e in described]
        results.append(result)
    respond({"results": results})


# ConfigResource.Type -> what authorizes it and the error a refusal answers (ConfigHelper,
# KafkaApis.configsAuthorizationApiError), with the error's default message.
_CONFIG_RESOURCES = {
    TOPIC: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
    BROKER: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    8: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    32: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
}


def config_refusal(
    ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation, kind: int, name: str
) -> tuple[ErrorCode, str] | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on the resource (the cluster for a broker or broker logger)."""
    known = _CONFIG_RESOURCES.get(kind)
    if known is None:
        return None  # refused by the resource checks that follow
    resource_type, error, message = known
    target = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else name
    if authz.allowed(ctx, meta, api_key, operation, resource_type, target):
        return None
    return error, message


def _describe(
    ctx: ServerContext, kind: int, name: str, keys: list[str] | None
) -> list[ConfigEntry] | tuple[ErrorCode, str | None]:
    if kind == TOPIC:
        if (reason := validate_topic_name(name)) is not None:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, reason
        topic = ctx.topics.get(name)
        if topic is None:  # ConfigHelper.describeConfigs sets the error code alone: the message is ""
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""
        return describe_topic(topic.config_map(), keys, ctx.config.topic_defaults())
    if kind == BROKER:
        if name not in ("", str(ctx.node_id)):
            # Kafka's ConfigHelper.describeConfigs message for another broker's id
            return ErrorCode.INVALID_REQUEST, (
                f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}"
            )
        if not name:  # the cluster-wide defaults: Kafka lists its dynamic defaults
            return [e for e in cluster_defaults() if not keys or e.name in keys]
        entries = broker_configs(ctx)
        return entries if not keys else [e for e in entries if e.name in keys]
    if kind == GROUP:
        return describe_group(ctx, name, keys)
    return ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}"


def _entry(entry: ConfigEntry, kind: int, version: int, synonyms: bool, docs: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": entry.name,
        "value": entry.value,
        "read_only": kind == BROKER,
        "is_sensitive": False,
    }
    if version == 0:
        body["is_default"] = entry.source is ConfigSource.DEFAULT_CONFIG
    else:
        body["config_source"] = entry.source
        body["synonyms"] = (
            [{"name": n, "value": v, "source": s} for n, v, s in entry.synonyms()] if synonyms else []
        )
    if version >= 3:
        body["config_type"] = entry.definition.type
        text = entry.definition.documentation or DOCS.get(entry.name) or _broker_doc(entry.name)
        body["documentation"] = (text or None) if docs else None
    return body


# Kafka's defaults of the settings kcoord reports (KafkaConfig; None: no default), so that a setting
# shows its DEFAULT_CONFIG synonym after the STATIC_BROKER_CONFIG one as Kafka's ConfigHelper lists them.
_KAFKA_DEFAULTS: dict[str, str | None] = {
    "node.id": None,  # KRaftConfigs defines it without a default
    "broker.id": "-1",
    "listeners": "PLAINTEXT://:9092",
    "advertised.listeners": None,
    "listener.security.protocol.map": (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    ),
    "sasl.enabled.mechanisms": "GSSAPI",
    "ssl.client.auth": "none",
    "connections.max.reauth.ms": "0",
    "log.dirs": None,
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "socket.request.max.bytes": "104857600",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
}


def _static_settings(ctx: ServerContext) -> list[tuple[str, ConfigType, str | None]]:
    config = ctx.config
    listeners = config.resolved_listeners()  # issue 25: every listener, as Kafka lists them
    bound = ",".join(f"{listener.name}://{listener.host}:{listener.port}" for listener in listeners)
    advertised = ",".join(
        f"{listener.name}://{ctx.endpoints.get(listener.name, ctx.advertised)}" for listener in listeners
    )
    protocols = ",".join(f"{listener.name}:{listener.security_protocol}" for listener in listeners)
    return [
        ("node.id", ConfigType.INT, str(config.node_id)),
        ("broker.id", ConfigType.INT, str(config.node_id)),
        ("listeners", ConfigType.LIST, bound),
        ("advertised.listeners", ConfigType.LIST, advertised),
        ("listener.security.protocol.map", ConfigType.LIST, protocols),
        ("sasl.enabled.mechanisms", ConfigType.LIST, ",".join(config.sasl_enabled_mechanisms)),
        ("ssl.client.auth", ConfigType.STRING, config.ssl_client_auth),
        ("connections.max.reauth.ms", ConfigType.LONG, str(config.connections_max_reauth_ms)),
        ("log.dirs", ConfigType.STRING, str(config.data_dir)),
        ("num.partitions", ConfigType.INT, str(config.num_partitions)),
        ("default.replication.factor", ConfigType.INT, "1"),
        ("auto.create.topics.enable", ConfigType.BOOLEAN, str(config.auto_create_topics).lower()),
        ("group.initial.rebalance.delay.ms", ConfigType.INT, str(config.group_initial_rebalance_delay_ms)),
        ("group.min.session.timeout.ms", ConfigType.INT, str(config.group_min_session_timeout_ms)),
        ("group.max.session.timeout.ms", ConfigType.INT, str(config.group_max_session_timeout_ms)),
        ("group.max.size", ConfigType.INT, str(config.group_max_size or 2_147_483_647)),
        ("offsets.retention.minutes", ConfigType.INT, str(config.offsets_retention_minutes)),
        (
            "offsets.retention.check.interval.ms",
            ConfigType.LONG,
            str(config.offsets_retention_check_interval_ms),
        ),
        ("socket.request.max.bytes", ConfigType.INT, str(config.socket_request_max_bytes)),
        *_consumer_group_settings(ctx),
    ]


def _consumer_group_settings(ctx: ServerContext) -> list[tuple[str, ConfigType, str | None]]:
    """The broker's group.consumer.* settings: the defaults and bounds of the groups' configs."""
    names = [
        f"{bound}{what}"
        for what in ("session.timeout.ms", "heartbeat.interval.ms")
        for bound in ("", "min.", "max.")
    ]
    config = ctx.config
    return [
        (f"group.consumer.{n}", ConfigType.INT, str(getattr(config, "group_consumer_" + n.replace(".", "_"))))
        for n in names
    ]


def _broker_entry(
    name: str, kind: ConfigType, static: dict[str, str], defaults: Mapping[str, str | None]
) -> ConfigEntry:
    """ConfigHelper.createBrokerConfigEntry: the synonyms of the name's chain
    (DynamicBrokerConfig.brokerConfigSynonyms); the value is the setting's own, or its default (null
    when Kafka has none)."""
    chain = next((c for c in BROKER_CHAINS.values() if name in c), (name,))
    synonyms = config_synonyms(name, chain, static, defaults)
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    value = DYNAMIC_DEFAULTS.get(name, static.get(name, defaults.get(name)))
    return ConfigEntry(name, value, source, TopicConfigDef(name, kind, value or "", True), tuple(synonyms))


# A broker setting behind a topic config is documented by that config's text.
_BY_BROKER_NAME = {d.broker_synonym: d.name for d in TOPIC_CONFIGS.values() if d.broker_synonym is not None}


def cluster_defaults() -> list[ConfigEntry]:
    """The BROKER resource "": the cluster-wide dynamic defaults (`synonyms.DYNAMIC_DEFAULTS`), each its
    own only synonym (ConfigHelper.createBrokerConfigEntry with perBrokerConfig false keeps only the
    DYNAMIC_DEFAULT_BROKER_CONFIG synonyms)."""
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return [
        ConfigEntry(
            name,
            value,
            source,
            TopicConfigDef(name, TOPIC_CONFIGS[_BY_BROKER_NAME[name]].type, value, True),
            ((name, value, source),),
        )
        for name, value in sorted(DYNAMIC_DEFAULTS.items())
    ]


def _broker_doc(name: str) -> str | None:
    topic_config = _BY_BROKER_NAME.get(name)
    return None if topic_config is None else DOCS.get(topic_config)


def broker_configs(ctx: ServerContext) -> list[ConfigEntry]:
    """The broker's settings under Kafka's names: kcoord's own flags (STATIC_BROKER_CONFIG), then every
    broker setting behind a topic config (ServerTopicConfigSynonyms, with the secondary names such as
    log.retention.hours), set by a flag (compression) or at Kafka's default."""
    static_settings = _static_settings(ctx)
    static = {name: value for name, _, value in static_settings if value is not None}
    static |= broker_settings(ctx.config.topic_defaults())  # --compression-type and its levels, where set
    defaults: dict[str, str | None] = {**_KAFKA_DEFAULTS, **BROKER_DEFAULTS}
    types = {name: kind for name, kind, _ in static_settings}
    for definition in TOPIC_CONFIGS.values():
        if definition.broker_synonym is not None:
            types.setdefault(definition.broker_synonym, definition.type)
    types |= {name: ConfigType(kind) for name, (_, kind) in BROKER_ONLY_DEFAULTS.items() if name not in types}
    entries = [_broker_entry(name, kind, static, defaults) for name, kind in types.items()]
    return sorted(entries, key=lambda e: e.name)
