"""The known, documented differences between Apache Kafka 4.3 and kcoord: the only place they are listed.

Each row names the API, a regular expression over the difference's path (tests/oracle/diff.py; the
path of a list of structs goes through its key, e.g. `api_keys.api_key=45.max_version`) and the
row of docs/compat.md that documents it, as `Section | Behaviour` (the section heading and the first
cell of the row, verbatim; test_known.py checks that every row cited exists); `when` narrows a row to
the differences where Kafka's value matches it. A difference without a
row here is a finding: the test that meets it fails, or is marked xfail(strict=True) with the finding.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KNOWN", "Known"]


@dataclass(frozen=True, slots=True)
class Known:
    api: str
    path: str
    compat: str
    when: str = ""  # when set, a regular expression Kafka's value must match (searched) too


def _absent(*keys: int, compat: str) -> list[Known]:
    """APIs Kafka's broker advertises and kcoord does not serve, for a documented reason."""
    return [Known("ApiVersions", rf"api_keys\.api_key={key}", compat) for key in keys]


_TOOLS = "The tools' security settings, `kcoord acls`, `kcoord users` (issue 25)"
_TOKENS = f"{_TOOLS} | `kcoord acls` options not offered"
_QUOTAS = f"{_TOOLS} | `kcoord users`"
_SHARE_STREAMS = "Offsets and admin | ListGroups `types_filter`"
_BROKER_ONLY = (
    "Topic configs and cluster admin (CreateTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,"
    " DescribeCluster) | DescribeCluster endpoint type 2 (controllers)"
)

_CONFIG_ADMIN = (
    "Topic configs and cluster admin (CreateTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,"
    " DescribeCluster)"
)
_BROKER_CONFIGS = f"{_CONFIG_ADMIN} | Broker configs"
_DOCUMENTATION = f"{_CONFIG_ADMIN} | `documentation` (DescribeConfigs v3+ with include_documentation)"
_KCOORD_STATIC = r"^\['[a-z.]+@5'\]$"  # Kafka lists only the setting's default: kcoord's flag comes first

KNOWN: tuple[Known, ...] = (
    # Kafka 4 still advertises Produce v0-2 (for old librdkafka, KAFKA-18659) but refuses them.
    Known(
        "ApiVersions",
        r"api_keys\.api_key=0\.min_version",
        "Data plane (Produce, Fetch, ListOffsets, DeleteRecords, InitProducerId) | Message formats",
    ),
    # Delegation tokens (38-41), client quotas (48-49), the share coordinator's inter-broker APIs (83-87),
    # streams groups (88-89), the controllers' own admin APIs (64, 80, 81).
    *_absent(38, 39, 40, 41, compat=_TOKENS),
    *_absent(48, 49, compat=_QUOTAS),
    *_absent(83, 84, 85, 86, 87, 88, 89, compat=_SHARE_STREAMS),
    *_absent(64, 80, 81, compat=_BROKER_ONLY),
    # kcoord is configured on its command line: its settings are STATIC_BROKER_CONFIG where Kafka's
    # (not set in the oracle's server.properties) are DEFAULT_CONFIG, and every one is read-only.
    Known("DescribeConfigs(broker)", r"configs\..*\.config_source", _BROKER_CONFIGS, when=r"^5$"),
    Known("DescribeConfigs(broker)", r"(results\[0\]\.)?configs\..*\.read_only", _BROKER_CONFIGS),
    Known("DescribeConfigs(broker)", r"configs\..*\.synonyms", _BROKER_CONFIGS, when=_KCOORD_STATIC),
    # Kafka's default is Kerberos, which kcoord does not offer: it reports the mechanisms it enables.
    Known(
        "DescribeConfigs(broker)",
        r"configs\.sasl\.enabled\.mechanisms\.value",
        f"{_TOOLS} | SASL mechanisms",
        when=r"^GSSAPI$",
    ),
    # The same for the group configs whose broker setting is a `kcoord serve` flag (their synonym chain
    # is the broker setting's, ConfigHelper.createGroupConfigEntry).
    Known(
        "DescribeConfigs",
        r"results\[0\]\.configs\.name=(consumer\.(session\.timeout|heartbeat\.interval)\.ms|share\.[a-z.]+)"
        r"\.config_source",
        _BROKER_CONFIGS,
        when=r"^5$",
    ),
    Known(
        "DescribeConfigs",
        r"results\[0\]\.configs\.name=(consumer\.(session\.timeout|heartbeat\.interval)\.ms|share\.[a-z.]+)"
        r"\.synonyms",
        _BROKER_CONFIGS,
        when=r"^\{'name=group\.(consumer|share)\.[a-z.]+': \{[^{}]*'source': 5\}\}$",
    ),
    # kcoord writes its own documentation (Kafka's sentences are not copied): every config's, topic,
    # broker and group alike.
    Known("DescribeConfigs", r"(results\[\d+\]\.)?configs\..*\.documentation", _DOCUMENTATION),
    # RE2 for re2j: the same regexes refused, the reason after the colon in RE2's words.
    Known(
        "ConsumerGroupHeartbeat",
        r"error_message",
        "Consumer protocol (KIP-848) | Validation order",
        when=r"^SubscribedTopicRegex `.*` is not a valid regular expression: ",
    ),
)
