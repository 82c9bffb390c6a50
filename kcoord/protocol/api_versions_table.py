"""What ApiVersions advertises: api key -> (min, max). The only source of that answer.

Every range here must be defined by the API's request and response schema (a test checks it), so we
never advertise a version we cannot decode. Ranges are Kafka 3.9's (kafka-group-protocol.md section
2.1) with deliberate limits: Produce starts at v3 and Fetch at v4, the first versions that carry
record batches of magic 2, the only format kcoord stores (Kafka 4.0 also dropped the older ones,
KIP-896). Fetch v13+ names topics by the ids Metadata returns (durable, coordinator/topics).
"""

SERVED_VERSIONS: dict[int, tuple[int, int]] = {
    0: (3, 12),  # Produce (v12: Transactions V2, KIP-890)
    1: (4, 17),  # Fetch
    2: (0, 9),  # ListOffsets
    3: (0, 12),  # Metadata
    8: (0, 9),  # OffsetCommit
    9: (0, 9),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake (v1: tokens in SaslAuthenticate)
    18: (0, 4),  # ApiVersions
    19: (0, 7),  # CreateTopics
    20: (0, 6),  # DeleteTopics
    21: (0, 2),  # DeleteRecords
    22: (0, 5),  # InitProducerId
    24: (0, 5),  # AddPartitionsToTxn
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 5),  # EndTxn
    27: (0, 1),  # WriteTxnMarkers (Kafka 4.0 serves 1 and up)
    28: (0, 5),  # TxnOffsetCommit
    29: (0, 3),  # DescribeAcls
    30: (0, 3),  # CreateAcls
    31: (0, 3),  # DeleteAcls
    32: (0, 4),  # DescribeConfigs
    33: (0, 2),  # AlterConfigs
    35: (0, 4),  # DescribeLogDirs (Kafka 4.0 serves 1-4: v0 removed by KIP-896)
    36: (0, 2),  # SaslAuthenticate (v1: session_lifetime_ms, KIP-368)
    37: (0, 3),  # CreatePartitions
    42: (0, 2),  # DeleteGroups
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 0),  # AlterPartitionReassignments (v1, KIP-860, is Kafka 4.1's)
    46: (0, 0),  # ListPartitionReassignments
    47: (0, 0),  # OffsetDelete
    50: (0, 0),  # DescribeUserScramCredentials (KIP-554)
    51: (0, 0),  # AlterUserScramCredentials (KIP-554)
    60: (0, 1),  # DescribeCluster
    61: (0, 0),  # DescribeProducers
    65: (0, 0),  # DescribeTransactions
    66: (0, 2),  # ListTransactions (v2: Kafka 4.1's transactional_id_pattern)
    68: (0, 1),  # ConsumerGroupHeartbeat (KIP-848)
    69: (0, 1),  # ConsumerGroupDescribe (KIP-848)
    74: (0, 1),  # ListConfigResources (v0 ListClientMetricsResources; v1 KIP-1142, Kafka 4.1)
}
