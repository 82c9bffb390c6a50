"""Server configuration: one frozen dataclass, filled from command-line flags and `KCOORD_*` env vars.

Every setting is named after the Kafka broker setting it mirrors and defaults to Kafka's value
(`group.initial.rebalance.delay.ms` -> `--group-initial-rebalance-delay-ms` /
`KCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS` / `group_initial_rebalance_delay_ms`).
Precedence: flag > environment > default.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kcoord.broker.security.listeners import Endpoint, Listener, resolve_listeners
from kcoord.broker.security.settings import (
    SECURITY_METAVARS,
    SECURITY_OPTIONS,
    SECURITY_SWITCHES,
    check_security,
)
from kcoord.broker.topics.configs import (
    BROKER_DEFAULTED,
    TOPIC_CONFIGS,
    InvalidConfig,
    validate_topic_configs,
)
from kcoord.coordinator.groups.config import GroupConfig
from kcoord.coordinator.transactions.config import TransactionConfig
from kcoord.wiring.share_flags import SHARE_OPTIONS, check_share_bounds, share_group_bounds

__all__ = ["Config", "HostPort", "add_serve_arguments", "config_from_args", "parse_host_port"]

ENV_PREFIX = "KCOORD_"
# always | interval:<ms> | never, as storage.LogConfig takes it
FsyncPolicy = str
LogFormat = Literal["text", "json"]


@dataclass(frozen=True, slots=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Config:
    """Everything `kcoord serve` needs. Defaults are Kafka's (see `docs/kafka-group-protocol.md` §8.6)."""

    listen: HostPort = HostPort("0.0.0.0", 9092)  # listeners=PLAINTEXT://0.0.0.0:9092
    # advertised.listeners: what Metadata/FindCoordinator return. None = the bound listen address,
    # with 0.0.0.0 replaced by 127.0.0.1 (a client cannot connect to the wildcard address).
    advertised_listener: HostPort | None = None
    # -- listeners, TLS and SASL (issue 25): Kafka's settings; none set = the one PLAINTEXT listener above --
    listeners: tuple[Endpoint, ...] | None = None  # listeners: NAME://host:port,...
    advertised_listeners: tuple[Endpoint, ...] | None = None  # advertised.listeners
    listener_security_protocol_map: tuple[tuple[str, str], ...] | None = None  # None = Kafka's default
    ssl_keystore_location: Path | None = None  # PEM: private key and certificate chain
    ssl_key_password: str | None = None  # the PEM key's password, if encrypted
    ssl_truststore_location: Path | None = None  # PEM CA bundle for client certificates
    ssl_client_auth: str = "none"  # none|requested|required (SSL listeners only, KIP-684)
    ssl_principal_mapping_rules: str = "DEFAULT"  # ssl.principal.mapping.rules (RULE:...,DEFAULT)
    ssl_handshake_timeout_ms: int = 10_000  # a TLS handshake not done by then closes the socket
    sasl_enabled_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    sasl_plain_users: str | None = None  # user=password[,user=password]: prefer the env variable
    sasl_plain_users_file: Path | None = None  # one user=password per line
    # user=password,...: SCRAM credentials (both mechanisms) created at startup if the user has none,
    # like kafka-storage format --add-scram; the first admin of a SASL-only deployment.
    sasl_scram_bootstrap_users: str | None = None
    sasl_server_max_receive_size: int = 524_288  # sasl.server.max.receive.size: pre-auth frame cap
    connection_failed_authentication_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    connections_max_reauth_ms: int = 0  # KIP-368; 0 = sessions never expire
    sasl_oauthbearer_jwks_endpoint_url: str | None = None  # https://... or file:///... (KIP-768)
    sasl_oauthbearer_jwks_endpoint_refresh_ms: int = 3_600_000
    sasl_oauthbearer_expected_audience: tuple[str, ...] = ()  # any of them in `aud`; () = not checked
    sasl_oauthbearer_expected_issuer: str | None = None  # `iss` must equal it; None = not checked
    sasl_oauthbearer_sub_claim_name: str = "sub"  # the claim that names the principal
    sasl_oauthbearer_scope_claim_name: str = "scope"
    sasl_oauthbearer_clock_skew_seconds: int = 30
    # Kafka's default OAUTHBEARER validator, unsigned `alg: none` tokens: development only, an explicit
    # opt-in, never beside the settings above (OAuthBearerUnsecuredValidatorCallbackHandler's options).
    sasl_oauthbearer_unsecured: bool = False
    sasl_oauthbearer_unsecured_validator_principal_claim_name: str = "sub"
    sasl_oauthbearer_unsecured_validator_scope_claim_name: str = "scope"
    sasl_oauthbearer_unsecured_validator_required_scope: tuple[str, ...] = ()
    sasl_oauthbearer_unsecured_validator_allowable_clock_skew_ms: int = 0
    # The HTTP endpoint's TLS (PEM key + chain) and bearer token (every path but /healthz and /readyz).
    http_ssl_keystore_location: Path | None = None
    http_ssl_key_password: str | None = None
    http_bearer_token: str | None = None
    data_dir: Path = Path("./data")  # log.dirs
    node_id: int = 0  # node.id / broker.id
    # Cluster mode (issue 27): the PostgreSQL DSN holding the nodes' shared state; None = one node on
    # the local log (the default, which never imports asyncpg). --lease-ttl-ms: shard and node leases.
    cluster: str | None = None
    lease_ttl_ms: int = 5000
    # -- node-to-node calls in cluster mode (issue 35): Kafka's inter.broker.listener.name (None = the
    # first listener), sasl.mechanism.inter.broker.protocol, and the user and password of the listener's
    # client login (listener.name.<name>.<mechanism>.sasl.jaas.config); an SSL listener presents
    # --ssl-keystore-location and checks peers against --ssl-truststore-location, as Kafka's does.
    inter_broker_listener_name: str | None = None
    sasl_mechanism_inter_broker_protocol: str = "PLAIN"
    inter_broker_sasl_username: str | None = None
    inter_broker_sasl_password: str | None = None  # prefer the env variable
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int | None = None  # Kafka: Integer.MAX_VALUE = unbounded
    # The consumer protocol (KIP-848): Kafka's group.consumer.* settings, defaults and bounds.
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_max_size: int | None = None  # Kafka: Integer.MAX_VALUE = unbounded
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    group_consumer_migration_policy: str = "bidirectional"  # bidirectional|upgrade|downgrade|disabled
    # Share groups (KIP-932): Kafka 4.3's group.share.* settings and defaults (wiring/share_flags.py).
    group_share_delivery_count_limit: int = 5
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_partition_max_record_locks: int = 2000
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4000
    group_share_max_share_sessions: int = 2000  # share sessions per broker (ShareSessionCache)
    group_share_max_size: int = 200
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_min_heartbeat_interval_ms: int = 5000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_assignment_interval_ms: int = 1000  # GroupCoordinatorConfig (Kafka 4.3)
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    # The transaction coordinator: Kafka's transaction.* / transactional.id.* settings and defaults.
    transaction_max_timeout_ms: int = 900_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    # The finalized feature level `transaction.version` ApiVersions advertises (KIP-890): 2 lets Kafka 4
    # clients use Transactions V2 (Produce v12, EndTxn v5: an epoch bump per transaction); 0 or 1 keep
    # every client on the V1 flow.
    transaction_version: int = 2
    # transaction.partition.verification.enable (KIP-890 part 1): a transactional batch for a partition
    # the producer's transaction does not have is refused. Off only to reproduce a hanging transaction.
    transaction_partition_verification_enable: bool = True
    auto_create_topics: bool = True  # auto.create.topics.enable
    # compression.type (producer|uncompressed|gzip|snappy|lz4|zstd) and its KIP-390 levels: the default of
    # every topic without its own (a batch in another codec is recompressed to it on append).
    compression_type: str = "producer"
    compression_gzip_level: int = -1  # compression.gzip.level: 1-9, or -1 = zlib's default
    compression_lz4_level: int = 9  # compression.lz4.level: 1-17
    compression_zstd_level: int = 3  # compression.zstd.level: -131072-22
    num_partitions: int = 1  # num.partitions, for auto-created topics and CreateTopics with -1
    # offsets.topic.num.partitions: the partitions of the `__consumer_offsets` view (issue 33 item 5), each
    # group in Kafka's partition for it. Cluster mode uses the shard count `kcoord cluster init` stored.
    offsets_topic_num_partitions: int = 50
    fsync: FsyncPolicy = "always"
    # The storage history area (storage/history.py, issue 28): what compaction replaced, for the pipeline.
    history_retention_ms: int = 604_800_000  # 7 days; 0 keeps no history
    history_retention_bytes: int = 1 << 30  # 1 GiB; 0 keeps no history
    log_level: str = "INFO"
    log_format: LogFormat = "text"
    # socket.request.max.bytes: a bigger frame closes the connection.
    socket_request_max_bytes: int = 104_857_600
    # How long shutdown waits for in-flight requests (parked joins are answered at once).
    shutdown_timeout_s: float = 10.0
    cluster_id: str = "kcoord"
    # The HTTP endpoint (/metrics, /healthz, /readyz, /v1/groups): off unless an address is given.
    http_listen: HostPort | None = None
    # /v1/test/* (force a rebalance, expire a member, inject errors and latency): off by default.
    enable_test_controls: bool = False
    # Per-group series in /metrics: at most this many groups (the largest total lag first).
    metrics_max_groups: int = 100
    # -- authorization (issue 25, h/acl): Kafka's authorizer.class.name, super.users and
    # allow.everyone.if.no.acl.found. None = no authorizer: every request is allowed, ACL APIs answer
    # SECURITY_DISABLED. "standard" = StandardAuthorizer (kcoord/broker/security/authorizer.py).
    authorizer: str | None = None
    super_users: tuple[str, ...] = ()  # `User:admin;User:ops`, compared as principal strings
    allow_everyone_if_no_acl_found: bool = False

    def topic_defaults(self) -> dict[str, str]:
        """The topic configs this broker defaults away from Kafka's default (`compression.type` and its
        levels), by topic config name: what a topic without its own value takes."""
        values = {name: str(getattr(self, name.replace(".", "_"))) for name in BROKER_DEFAULTED}
        return {name: value for name, value in values.items() if value != TOPIC_CONFIGS[name].default}

    def group_config(self) -> GroupConfig:
        """The subset the pure group logic needs."""
        return GroupConfig(
            group_initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=self.group_min_session_timeout_ms,
            group_max_session_timeout_ms=self.group_max_session_timeout_ms,
            group_max_size=self.group_max_size,
            consumer_heartbeat_interval_ms=self.group_consumer_heartbeat_interval_ms,
            consumer_session_timeout_ms=self.group_consumer_session_timeout_ms,
            consumer_max_size=self.group_consumer_max_size,
            consumer_assignors=self.group_consumer_assignors,
            consumer_migration_policy=self.group_consumer_migration_policy,
            share_heartbeat_interval_ms=self.group_share_heartbeat_interval_ms,
            share_session_timeout_ms=self.group_share_session_timeout_ms,
            share_max_size=self.group_share_max_size,
            share_assignment_interval_ms=self.group_share_assignment_interval_ms,
            offsets_retention_ms=self.offsets_retention_minutes * 60_000,
            offsets_retention_check_interval_ms=self.offsets_retention_check_interval_ms,
        )

    def share_group_bounds(self) -> tuple[dict[str, str], dict[str, int]]:
        """The group.share.* settings as GroupConfigBounds' (defaults, limits) of the share.* group
        configs (ShareGroupConfig.extractShareGroupConfigMap)."""
        return share_group_bounds(self)

    def resolved_listeners(self) -> tuple[Listener, ...]:
        """The sockets to bind: `--listeners` joined with the map and the advertised entries, or the
        single PLAINTEXT listener of `--listen` / `--advertised-listener` (today's default)."""
        if self.listeners is None:
            shown = self.advertised_listener
            return (
                Listener(
                    "PLAINTEXT",
                    "PLAINTEXT",
                    self.listen.host,
                    self.listen.port,
                    None if shown is None else (shown.host, shown.port),
                ),
            )
        return resolve_listeners(
            self.listeners, self.advertised_listeners, self.listener_security_protocol_map
        )

    def transaction_config(self) -> TransactionConfig:
        """The subset the pure transaction coordinator needs."""
        return TransactionConfig(
            transaction_max_timeout_ms=self.transaction_max_timeout_ms,
            transactional_id_expiration_ms=self.transactional_id_expiration_ms,
            abort_timed_out_transaction_cleanup_interval_ms=(
                self.transaction_abort_timed_out_transaction_cleanup_interval_ms
            ),
            remove_expired_transaction_cleanup_interval_ms=(
                self.transaction_remove_expired_transaction_cleanup_interval_ms
            ),
            transaction_version=self.transaction_version,
        )


def parse_host_port(text: str) -> HostPort:
    """`host:port`, `[v6]:port` or `:port` (all interfaces)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected host:port, got {text!r}")
    host = host.strip("[]") or "0.0.0.0"
    return HostPort(host, int(port))


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_fsync(text: str) -> str:
    """always | interval[:<ms>] | never; a bare `interval` fsyncs every second (Bitcask's default)."""
    policy = text.strip().lower()
    if policy == "interval":
        return "interval:1000"
    if policy in ("always", "never") or (policy.startswith("interval:") and policy[9:].isdigit()):
        return policy
    raise argparse.ArgumentTypeError(f"expected always, interval[:<ms>] or never, got {text!r}")


def parse_log_level(text: str) -> str:
    """A logging level name, any case (Python's levels; WARN is WARNING)."""
    level = text.strip().upper()
    level = "WARNING" if level == "WARN" else level
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise argparse.ArgumentTypeError(f"expected DEBUG, INFO, WARNING or ERROR, got {text!r}")
    return level


def parse_log_format(text: str) -> str:
    format_ = text.strip().lower()
    if format_ not in ("text", "json"):
        raise argparse.ArgumentTypeError(f"expected text or json, got {text!r}")
    return format_


ASSIGNORS = ("uniform", "range")  # coordinator.groups.consumer.assignors.ASSIGNORS, Kafka's names


def parse_assignors(text: str) -> tuple[str, ...]:
    """group.consumer.assignors: a comma-separated list of uniform and range (Kafka's short names)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in ASSIGNORS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(ASSIGNORS)}, got {text!r}"
        )
    return names


def parse_migration_policy(text: str) -> str:
    """group.consumer.migration.policy, any case (Kafka's ConsumerGroupMigrationPolicy)."""
    policy = text.strip().lower()
    if policy not in ("bidirectional", "upgrade", "downgrade", "disabled"):
        raise argparse.ArgumentTypeError(
            f"expected bidirectional, upgrade, downgrade or disabled, got {text!r}"
        )
    return policy


def check_consumer_bounds(config: Config) -> None:
    """GroupCoordinatorConfig's checks of the consumer protocol's timing settings."""
    for what in ("heartbeat_interval", "session_timeout"):
        value = getattr(config, f"group_consumer_{what}_ms")
        low = getattr(config, f"group_consumer_min_{what}_ms")
        high = getattr(config, f"group_consumer_max_{what}_ms")
        flag = f"--group-consumer-{what.replace('_', '-')}-ms"
        if not low <= value <= high:
            raise SystemExit(
                f"kcoord: {flag}={value} must be within [{low}, {high}] (its min and max settings)"
            )
    if config.group_consumer_heartbeat_interval_ms >= config.group_consumer_session_timeout_ms:
        raise SystemExit(
            "kcoord: --group-consumer-heartbeat-interval-ms must be less than "
            "--group-consumer-session-timeout-ms"
        )


def parse_transaction_version(text: str) -> int:
    """The `transaction.version` feature level (Kafka 4's TransactionVersion: 0, 1 or 2)."""
    if text.strip() not in ("0", "1", "2"):
        raise argparse.ArgumentTypeError(f"expected 0, 1 or 2, got {text!r}")
    return int(text)


def parse_authorizer(text: str) -> str | None:
    """`standard` (Kafka's StandardAuthorizer) or `none`."""
    lowered = text.strip().lower()
    if lowered in ("standard", "none"):
        return None if lowered == "none" else lowered
    raise argparse.ArgumentTypeError(f"expected standard or none, got {text!r}")


def parse_super_users(text: str) -> tuple[str, ...]:
    """super.users: `;`-separated `Type:name` principals (StandardAuthorizer.getConfiguredSuperUsers)."""
    users = tuple(value.strip() for value in text.split(";") if value.strip())
    for user in users:
        principal_type, sep, name = user.partition(":")
        if not sep or not principal_type or not name:
            raise argparse.ArgumentTypeError(f"expected principals as Type:name;..., got {user!r}")
    return users


def _topic_default(name: str) -> Callable[[str], str | int]:
    """The parser of a topic config's broker default: validated as KafkaConfig validates it (the topic
    config's own ConfigDef validator, so the same message); a level is an int."""

    def parse(text: str) -> str | int:
        try:
            value = validate_topic_configs({name: text})[name]
        except InvalidConfig as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return int(value) if name.endswith(".level") else value

    return parse


parse_compression_type = _topic_default("compression.type")
parse_compression_gzip_level = _topic_default("compression.gzip.level")
parse_compression_lz4_level = _topic_default("compression.lz4.level")
parse_compression_zstd_level = _topic_default("compression.zstd.level")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _nonempty_name(text: str) -> str:
    """A listener or user name (not empty)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a name, got nothing")
    return text.strip()


def _secret(text: str) -> str:
    return text


def _inter_broker_mechanism(text: str) -> str:
    """sasl.mechanism.inter.broker.protocol: the password mechanisms a node can log in with."""
    mechanism = text.strip().upper()
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise argparse.ArgumentTypeError(f"expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got {text!r}")
    return mechanism


# (flag, parser, help). The dataclass field is the flag without dashes, the env var is KCOORD_ + it.
_OPTIONS: tuple[tuple[str, object, str], ...] = (
    ("--listen", parse_host_port, "host:port to bind (listeners), default 0.0.0.0:9092; port 0 = any"),
    ("--advertised-listener", parse_host_port, "host:port returned to clients (advertised.listeners)"),
    *SECURITY_OPTIONS,  # listeners, TLS and SASL (issue 25): kcoord/broker/security/settings.py
    ("--data-dir", Path, "directory of the durable log (log.dirs), default ./data"),
    ("--node-id", _non_negative_int, "broker id returned in Metadata/FindCoordinator, default 0"),
    ("--cluster", str, "cluster mode: postgresql://user@host:port/db (needs kcoord[cluster]); default off"),
    ("--lease-ttl-ms", _positive_int, "cluster mode: shard and node lease time to live, default 5000"),
    ("--inter-broker-listener-name", _nonempty_name, "cluster mode: the listener nodes call each other on"),
    (
        "--sasl-mechanism-inter-broker-protocol",
        _inter_broker_mechanism,
        "cluster mode: PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 on a SASL inter-broker listener, default PLAIN",
    ),
    ("--inter-broker-sasl-username", _nonempty_name, "cluster mode: this node's user on that listener"),
    ("--inter-broker-sasl-password", _secret, "its password: prefer the env variable"),
    ("--group-initial-rebalance-delay-ms", _non_negative_int, "default 3000"),
    (
        "--offsets-topic-num-partitions",
        _positive_int,
        "partitions of the __consumer_offsets view (offsets.topic.num.partitions), default 50",
    ),
    ("--group-min-session-timeout-ms", _non_negative_int, "default 6000"),
    ("--group-max-session-timeout-ms", _non_negative_int, "default 1800000"),
    ("--group-max-size", _positive_int, "default unbounded"),
    ("--group-consumer-heartbeat-interval-ms", _positive_int, "consumer protocol, default 5000"),
    ("--group-consumer-min-heartbeat-interval-ms", _positive_int, "default 5000"),
    ("--group-consumer-max-heartbeat-interval-ms", _positive_int, "default 15000"),
    ("--group-consumer-session-timeout-ms", _positive_int, "consumer protocol, default 45000"),
    ("--group-consumer-min-session-timeout-ms", _positive_int, "default 45000"),
    ("--group-consumer-max-session-timeout-ms", _positive_int, "default 60000"),
    ("--group-consumer-max-size", _positive_int, "members of a consumer-protocol group, default unbounded"),
    (
        "--group-consumer-assignors",
        parse_assignors,
        "server assignors, the first the default; default uniform,range",
    ),
    (
        "--group-consumer-migration-policy",
        parse_migration_policy,
        "online migration between the protocols: bidirectional|upgrade|downgrade|disabled; "
        "default bidirectional",
    ),
    *SHARE_OPTIONS,  # --group-share-*: kcoord/wiring/share_flags.py
    ("--offsets-retention-minutes", _positive_int, "default 10080 (7 days)"),
    ("--offsets-retention-check-interval-ms", _positive_int, "default 600000"),
    ("--transaction-max-timeout-ms", _positive_int, "transaction.max.timeout.ms, default 900000"),
    (
        "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
        _positive_int,
        "how often timed-out transactions are aborted, default 10000",
    ),
    ("--transactional-id-expiration-ms", _positive_int, "idle transactional ids expire, default 604800000"),
    (
        "--transaction-remove-expired-transaction-cleanup-interval-ms",
        _positive_int,
        "how often idle transactional ids are expired, default 3600000",
    ),
    ("--transaction-version", parse_transaction_version, "finalized transaction.version 0|1|2, default 2"),
    (
        "--transaction-partition-verification-enable",
        _parse_bool,
        "refuse transactional batches for partitions not in the transaction (KIP-890), default true",
    ),
    ("--auto-create-topics", _parse_bool, "auto.create.topics.enable, default true"),
    ("--num-partitions", _positive_int, "partitions of auto-created topics, default 1"),
    (
        "--compression-type",
        parse_compression_type,
        "compression.type of topics without their own: producer|uncompressed|gzip|snappy|lz4|zstd, "
        "default producer",
    ),
    ("--compression-gzip-level", parse_compression_gzip_level, "compression.gzip.level, default -1"),
    ("--compression-lz4-level", parse_compression_lz4_level, "compression.lz4.level, default 9"),
    ("--compression-zstd-level", parse_compression_zstd_level, "compression.zstd.level, default 3"),
    ("--fsync", parse_fsync, "always|interval[:<ms>]|never (unsafe), default always"),
    ("--history-retention-ms", _non_negative_int, "age of history kept for the pipeline, default 7 days"),
    ("--history-retention-bytes", _non_negative_int, "bytes of history kept, default 1073741824 (1 GiB)"),
    ("--log-level", parse_log_level, "DEBUG|INFO|WARNING|ERROR, default INFO"),
    ("--log-format", parse_log_format, "text|json, default text"),
    ("--http-listen", parse_host_port, "host:port of the HTTP endpoint (/metrics, /v1/groups), default off"),
    ("--metrics-max-groups", _non_negative_int, "groups with per-group series in /metrics, default 100"),
    # -- authorization (issue 25, h/acl) --
    ("--authorizer", parse_authorizer, "standard = Kafka's StandardAuthorizer with ACLs; default none"),
    ("--super-users", parse_super_users, "super.users: principals allowed everything, `User:a;User:b`"),
    ("--allow-everyone-if-no-acl-found", _parse_bool, "allow a resource no ACL applies to, default false"),
)
# Switches without a value (`--enable-test-controls`); the env var takes true/false.
_SWITCHES: tuple[tuple[str, str], ...] = (
    ("--enable-test-controls", "serve /v1/test/* (rebalance, expire, inject errors); default off"),
    *SECURITY_SWITCHES,  # --sasl-oauthbearer-unsecured
)
_METAVARS: dict[object, str] = {
    parse_host_port: "HOST:PORT",
    Path: "DIR",
    _parse_bool: "true|false",
    str: "DSN",
    parse_fsync: "always|interval[:MS]|never",
    parse_log_level: "LEVEL",
    parse_log_format: "text|json",
    parse_assignors: "NAME[,NAME]",
    parse_migration_policy: "POLICY",
    parse_authorizer: "standard|none",
    parse_compression_type: "TYPE",
    parse_compression_gzip_level: "LEVEL",
    parse_compression_lz4_level: "LEVEL",
    parse_compression_zstd_level: "LEVEL",
    parse_super_users: "PRINCIPAL[;PRINCIPAL]",
    _nonempty_name: "NAME",
    _secret: "PASSWORD",
    _inter_broker_mechanism: "MECH",
    **SECURITY_METAVARS,
}


def _field_name(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per `Config` setting; absent flags stay None so env/defaults apply."""
    for flag, parse, help_text in _OPTIONS:
        name = _field_name(flag)
        env = ENV_PREFIX + name.upper()
        metavar = _METAVARS.get(parse, "N")
        parser.add_argument(
            flag,
            type=parse,  # type: ignore[arg-type]
            default=None,
            metavar=metavar,
            help=f"{help_text} [env {env}]",
        )
    for flag, help_text in _SWITCHES:
        env = ENV_PREFIX + _field_name(flag).upper()
        parser.add_argument(
            flag, action="store_const", const=True, default=None, help=f"{help_text} [env {env}]"
        )


def config_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Config:
    """Build the `Config`: flag if given, else `KCOORD_<NAME>` if set, else the Kafka default."""
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    options = (*_OPTIONS, *((flag, _parse_bool, help_text) for flag, help_text in _SWITCHES))
    for flag, parse, _ in options:
        name = _field_name(flag)
        value = getattr(args, name, None)
        if value is None and (raw := env.get(ENV_PREFIX + name.upper())) not in (None, ""):
            try:
                value = parse(raw)  # type: ignore[operator]
            except (argparse.ArgumentTypeError, ValueError) as exc:
                raise SystemExit(f"kcoord: bad {ENV_PREFIX + name.upper()}={raw!r}: {exc}") from None
        if value is not None:
            values[name] = value
    config = dataclasses.replace(Config(), **values)  # type: ignore[arg-type]
    check_consumer_bounds(config)
    check_share_bounds(config)
    check_security(config, values)
    if config.enable_test_controls and config.http_listen is None:
        raise SystemExit("kcoord: --enable-test-controls needs --http-listen (the controls are HTTP calls)")
    return config


def parse_serve_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Config:
    """Convenience for tests: parse `serve` flags alone."""
    parser = argparse.ArgumentParser(prog="kcoord serve")
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(list(argv)), env)
