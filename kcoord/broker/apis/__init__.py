"""One thin module per API; `HANDLERS` maps api keys to their `handle` functions.

ApiVersions (18) is not in the table: the connection answers it from cached frames before decoding
(see `api_versions.py`). A client that sends an API not in the table is disconnected, as Kafka does
for any API it does not serve (docs/compat.md).
"""

from __future__ import annotations

from kcoord.broker.apis import (
    acls,
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_replica_log_dirs,
    alter_share_group_offsets,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_share_group_offsets,
    describe_topic_partitions,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    partition_reassignments,
    produce,
    sasl,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    sync_group,
    txn_offset_commit,
    update_features,
    user_scram_credentials,
    write_txn_markers,
)
from kcoord.broker.context import Handler

__all__ = ["HANDLERS", "api_versions", "produce", "served_versions"]

HANDLERS: dict[int, Handler] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offset_commit.handle,
    9: offset_fetch.handle,
    10: find_coordinator.handle,
    11: join_group.handle,
    12: heartbeat.handle,
    13: leave_group.handle,
    14: sync_group.handle,
    15: describe_groups.handle,
    16: list_groups.handle,
    17: sasl.handle_handshake,
    19: create_topics.handle,
    20: delete_topics.handle,
    21: delete_records.handle,
    22: init_producer_id.handle,
    23: offset_for_leader_epoch.handle,
    24: add_partitions_to_txn.handle,
    25: add_offsets_to_txn.handle,
    26: end_txn.handle,
    27: write_txn_markers.handle,
    28: txn_offset_commit.handle,
    32: describe_configs.handle,
    33: alter_configs.handle_alter,
    34: alter_replica_log_dirs.handle,
    35: describe_log_dirs.handle,
    36: sasl.handle_authenticate,
    37: create_partitions.handle,
    42: delete_groups.handle,
    43: elect_leaders.handle,
    44: alter_configs.handle_incremental,
    45: partition_reassignments.handle_alter,
    46: partition_reassignments.handle_list,
    47: offset_delete.handle,
    50: user_scram_credentials.handle_describe,
    51: user_scram_credentials.handle_alter,
    55: describe_quorum.handle,
    57: update_features.handle,
    60: describe_cluster.handle,
    61: describe_producers.handle,
    65: describe_transactions.handle,
    66: list_transactions.handle,
    68: consumer_group_heartbeat.handle,
    69: consumer_group_describe.handle,
    74: list_config_resources.handle,
    75: describe_topic_partitions.handle,
    76: share_group_heartbeat.handle,
    77: share_group_describe.handle,
    78: share_fetch.handle,
    79: share_acknowledge.handle,
    90: describe_share_group_offsets.handle,
    91: alter_share_group_offsets.handle,
    92: delete_share_group_offsets.handle,
    29: acls.handle_describe,
    30: acls.handle_create,
    31: acls.handle_delete,
}


# The share groups' APIs (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge and
# the share-group offset APIs. A node without share partitions (cluster mode, for now) does not advertise
# them, as a Kafka broker without the share.version feature does not: a share consumer is told at once.
SHARE_GROUP_APIS = frozenset({76, 77, 78, 79, 90, 91, 92})


def served_versions(
    table: dict[int, tuple[int, int]], share_groups: bool = True
) -> dict[int, tuple[int, int]]:
    """What ApiVersions advertises: protocol's SERVED_VERSIONS restricted to APIs we can answer."""
    return {
        key: rng
        for key, rng in table.items()
        if (key in HANDLERS or key == api_versions.API_KEY) and (share_groups or key not in SHARE_GROUP_APIS)
    }
