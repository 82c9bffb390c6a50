"""What a Kafka 4.3 broker advertises in ApiVersions, and why kcoord's answer differs where it does.

Written from Kafka 4.3.1's message schemas (kafka-clients-4.3.1.jar, common/message/*Request.json): every
API whose `listeners` include "broker", at its `validVersions`, less the newest version where the file
marks it `latestVersionUnstable` (advertised only with unstable.api.versions.enable). Two exceptions
are Kafka's own code, not its JSON: Produce is advertised from v0 (KAFKA-18659: Kafka 4 lists v0-2 so
old librdkafka clients connect, then refuses them), and GetTelemetrySubscriptions / PushTelemetry are
left out unless a metrics reporter implements ClientTelemetry (ApiVersionsResponse, KIP-714).
tests/protocol/test_api_versions_compat.py holds this table equal to kafka-python 3.0.12's capture of a
4.3 broker's answer (kafka.protocol.broker_version_data), an independent record of the same thing.
"""

from __future__ import annotations

# api key -> (name, min, max) as a Kafka 4.3 broker advertises it by default
KAFKA_4_3: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 0, 13),
    1: ("Fetch", 4, 18),
    2: ("ListOffsets", 1, 11),
    3: ("Metadata", 0, 13),
    8: ("OffsetCommit", 2, 10),
    9: ("OffsetFetch", 1, 10),
    10: ("FindCoordinator", 0, 6),
    11: ("JoinGroup", 0, 9),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 5),
    14: ("SyncGroup", 0, 5),
    15: ("DescribeGroups", 0, 6),
    16: ("ListGroups", 0, 5),
    17: ("SaslHandshake", 0, 1),
    18: ("ApiVersions", 0, 4),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 5),
    23: ("OffsetForLeaderEpoch", 2, 4),
    24: ("AddPartitionsToTxn", 0, 5),
    25: ("AddOffsetsToTxn", 0, 4),
    26: ("EndTxn", 0, 5),
    27: ("WriteTxnMarkers", 1, 2),
    28: ("TxnOffsetCommit", 0, 5),
    29: ("DescribeAcls", 1, 3),
    30: ("CreateAcls", 1, 3),
    31: ("DeleteAcls", 1, 3),
    32: ("DescribeConfigs", 1, 4),
    33: ("AlterConfigs", 0, 2),
    34: ("AlterReplicaLogDirs", 1, 2),
    35: ("DescribeLogDirs", 1, 5),
    36: ("SaslAuthenticate", 0, 2),
    37: ("CreatePartitions", 0, 3),
    38: ("CreateDelegationToken", 1, 3),
    39: ("RenewDelegationToken", 1, 2),
    40: ("ExpireDelegationToken", 1, 2),
    41: ("DescribeDelegationToken", 1, 3),
    42: ("DeleteGroups", 0, 2),
    43: ("ElectLeaders", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1),
    45: ("AlterPartitionReassignments", 0, 1),
    46: ("ListPartitionReassignments", 0, 0),
    47: ("OffsetDelete", 0, 0),
    48: ("DescribeClientQuotas", 0, 1),
    49: ("AlterClientQuotas", 0, 1),
    50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0),
    55: ("DescribeQuorum", 0, 2),
    57: ("UpdateFeatures", 0, 2),
    60: ("DescribeCluster", 0, 2),
    61: ("DescribeProducers", 0, 0),
    64: ("UnregisterBroker", 0, 0),
    65: ("DescribeTransactions", 0, 0),
    66: ("ListTransactions", 0, 2),
    68: ("ConsumerGroupHeartbeat", 0, 1),
    69: ("ConsumerGroupDescribe", 0, 1),
    74: ("ListConfigResources", 0, 1),
    75: ("DescribeTopicPartitions", 0, 0),
    76: ("ShareGroupHeartbeat", 1, 1),
    77: ("ShareGroupDescribe", 1, 1),
    78: ("ShareFetch", 1, 2),
    79: ("ShareAcknowledge", 1, 2),
    80: ("AddRaftVoter", 0, 1),
    81: ("RemoveRaftVoter", 0, 0),
    83: ("InitializeShareGroupState", 0, 0),
    84: ("ReadShareGroupState", 0, 0),
    85: ("WriteShareGroupState", 0, 1),
    86: ("DeleteShareGroupState", 0, 0),
    87: ("ReadShareGroupStateSummary", 0, 1),
    88: ("StreamsGroupHeartbeat", 0, 0),
    89: ("StreamsGroupDescribe", 0, 0),
    90: ("DescribeShareGroupOffsets", 0, 1),
    91: ("AlterShareGroupOffsets", 0, 0),
    92: ("DeleteShareGroupOffsets", 0, 0),
}

# Served by a Kafka 4.3 broker only when configured for it: listed in the table, not in KAFKA_4_3.
KAFKA_4_3_CONDITIONAL: dict[int, tuple[str, int, int]] = {
    71: ("GetTelemetrySubscriptions", 0, 0),
    72: ("PushTelemetry", 0, 0),
}

_TOKENS = "Delegation tokens are not part of kcoord (issue 33 leaves them out)"
_QUOTAS = "Client quotas are not part of kcoord (issue 33 leaves them out); nothing is throttled"
_SHARE = "Share groups (KIP-932) are not served yet (docs/share-groups, a later issue)"
_SHARE_STATE = "The share coordinator's state APIs, sent between brokers; not served with share groups"
_STREAMS = "Streams groups (KIP-1071) are not served: Kafka Streams applications use the classic protocol"
_VOTERS = "kcoord's metadata store is no Raft quorum (DescribeQuorum: one voter): no voter to add or remove"

# Why kcoord's range differs from Kafka 4.3's, for every API where it does (the generator refuses a
# difference without one).
WHY: dict[int, str] = {
    0: "Kafka 4 lists v0-2 only to refuse them (KAFKA-18659); kcoord stores magic-2 batches only, "
    "which v3 is the first to carry, and does not list what it would refuse",
    38: _TOKENS,
    39: _TOKENS,
    40: _TOKENS,
    41: _TOKENS,
    48: _QUOTAS,
    49: _QUOTAS,
    64: "Brokers register with, and unregister from, a KRaft controller; kcoord's nodes join and leave "
    "through PostgreSQL (cluster mode) and have no registration to remove",
    71: "Client telemetry (KIP-714) is not part of kcoord; Kafka too serves it only with a telemetry "
    "reporter configured",
    72: "Client telemetry (KIP-714) is not part of kcoord; Kafka too serves it only with a telemetry "
    "reporter configured",
    74: "Issue 33's configs work (ListConfigResources) lands separately",
    76: _SHARE,
    77: _SHARE,
    80: _VOTERS,
    81: _VOTERS,
    83: _SHARE_STATE,
    84: _SHARE_STATE,
    85: _SHARE_STATE,
    86: _SHARE_STATE,
    87: _SHARE_STATE,
    88: _STREAMS,
    89: _STREAMS,
    90: _SHARE,
    91: _SHARE,
    92: _SHARE,
}
