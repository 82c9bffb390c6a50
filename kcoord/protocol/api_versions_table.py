"""What ApiVersions advertises: api key -> (min, max). The only source of that answer.

Every range here must be defined by the API's request and response schema (a test checks it), so we
never advertise a version we cannot decode. Ranges are what a Kafka 4.3 broker advertises
(`docs/gen/kafka_api_versions.py`, written from Kafka 4.3's message JSON files; the table of every API
with the reasons for each difference is generated into docs/compat.md). The one deliberate limit:
Produce starts at v3, the first version that carries record batches of magic 2, the only format
kcoord stores (Kafka 4 advertises v0-2 too, only to refuse them: KAFKA-18659). Topic ids (Fetch
v13+, Produce v13, OffsetCommit and OffsetFetch v10) are the durable ids Metadata returns.
"""

SERVED_VERSIONS: dict[int, tuple[int, int]] = {
    0: (3, 13),  # Produce (v12: Transactions V2, KIP-890; v13: topic ids, KIP-516)
    1: (4, 18),  # Fetch (v18: a follower's high watermark, KIP-1166)
    2: (1, 11),  # ListOffsets (v0 removed by KIP-896)
    3: (0, 13),  # Metadata (v13: top-level error code, KIP-1102)
    8: (2, 10),  # OffsetCommit (v0-1 removed by KIP-896; v10: topic ids)
    9: (1, 10),  # OffsetFetch (v0 removed by KIP-896; v10: topic ids)
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups (v6: GROUP_ID_NOT_FOUND, KIP-1043)
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake (v1: tokens in SaslAuthenticate)
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics (v0-1 removed by KIP-896)
    20: (1, 6),  # DeleteTopics (v0 removed by KIP-896)
    21: (0, 2),  # DeleteRecords
    22: (0, 5),  # InitProducerId (v6, KIP-939, is unstable in Kafka 4.3: not advertised)
    23: (2, 4),  # OffsetForLeaderEpoch (v0-1 removed by KIP-896)
    24: (0, 5),  # AddPartitionsToTxn
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 5),  # EndTxn
    27: (1, 2),  # WriteTxnMarkers (v0 removed in Kafka 4.0; v2: transaction_version, KIP-1228)
    28: (0, 5),  # TxnOffsetCommit
    29: (1, 3),  # DescribeAcls (v0 removed by KIP-896)
    30: (1, 3),  # CreateAcls (v0 removed by KIP-896)
    31: (1, 3),  # DeleteAcls (v0 removed by KIP-896)
    32: (1, 4),  # DescribeConfigs (v0 removed by KIP-896)
    33: (0, 2),  # AlterConfigs
    34: (1, 2),  # AlterReplicaLogDirs (v0 removed by KIP-896)
    35: (1, 5),  # DescribeLogDirs (v0 removed by KIP-896; v5: is_cordoned)
    36: (0, 2),  # SaslAuthenticate (v1: session_lifetime_ms, KIP-368)
    37: (0, 3),  # CreatePartitions
    42: (0, 2),  # DeleteGroups
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 1),  # AlterPartitionReassignments (v1: allow_replication_factor_change, KIP-860)
    46: (0, 0),  # ListPartitionReassignments
    47: (0, 0),  # OffsetDelete
    50: (0, 0),  # DescribeUserScramCredentials (KIP-554)
    51: (0, 0),  # AlterUserScramCredentials (KIP-554)
    55: (0, 2),  # DescribeQuorum (kcoord's metadata store as a one-voter quorum)
    57: (0, 2),  # UpdateFeatures
    60: (0, 2),  # DescribeCluster (v2: fenced brokers, KIP-1073)
    61: (0, 0),  # DescribeProducers
    65: (0, 0),  # DescribeTransactions
    66: (0, 2),  # ListTransactions (v2: Kafka 4.1's transactional_id_pattern)
    68: (0, 1),  # ConsumerGroupHeartbeat (KIP-848)
    69: (0, 1),  # ConsumerGroupDescribe (KIP-848)
    74: (0, 1),  # ListConfigResources (v0 ListClientMetricsResources; v1 KIP-1142, Kafka 4.1)
    75: (0, 0),  # DescribeTopicPartitions (KIP-966)
    78: (1, 2),  # ShareFetch (KIP-932; v2 KIP-1206 acquire mode, KIP-1222 renew)
    79: (1, 2),  # ShareAcknowledge (KIP-932; v2 KIP-1222 renew)
    76: (1, 1),  # ShareGroupHeartbeat (KIP-932; v0 early access, removed in 4.1)
    77: (1, 1),  # ShareGroupDescribe (KIP-932)
    90: (0, 1),  # DescribeShareGroupOffsets (KIP-932; v1 lag, KIP-1226)
    91: (0, 0),  # AlterShareGroupOffsets (KIP-932)
    92: (0, 0),  # DeleteShareGroupOffsets (KIP-932)
}
