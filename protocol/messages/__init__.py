"""One module per API; this registry maps api key -> Schema (docs/architecture.md)."""

from protocol.messages.api_versions import API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE
from protocol.messages.configs import (
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
)
from protocol.messages.consumer_group_describe import (
    CONSUMER_GROUP_DESCRIBE_REQUEST,
    CONSUMER_GROUP_DESCRIBE_RESPONSE,
)
from protocol.messages.consumer_group_heartbeat import (
    CONSUMER_GROUP_HEARTBEAT_REQUEST,
    CONSUMER_GROUP_HEARTBEAT_RESPONSE,
)
from protocol.messages.create_partitions import CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE
from protocol.messages.create_topics import CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE
from protocol.messages.delete_groups import DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE
from protocol.messages.delete_records import DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE
from protocol.messages.delete_topics import DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE
from protocol.messages.describe_cluster import DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE
from protocol.messages.describe_groups import DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE
from protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE
from protocol.messages.find_coordinator import FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE
from protocol.messages.heartbeat import HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE
from protocol.messages.init_producer_id import INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE
from protocol.messages.join_group import JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE
from protocol.messages.leave_group import LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE
from protocol.messages.list_groups import LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE
from protocol.messages.list_offsets import LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE
from protocol.messages.metadata import METADATA_REQUEST, METADATA_RESPONSE
from protocol.messages.offset_commit import OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE
from protocol.messages.offset_delete import OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE
from protocol.messages.offset_fetch import OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE
from protocol.messages.produce import PRODUCE_REQUEST, PRODUCE_RESPONSE
from protocol.messages.sync_group import SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE
from protocol.schema import Schema

_PAIRS: tuple[tuple[Schema, Schema], ...] = (
    (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    (METADATA_REQUEST, METADATA_RESPONSE),
    (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    (JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
    (SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
    (HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
    (LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
    (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
    (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
    (DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
    (LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
    (DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
    (OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE),
    (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
    (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
    (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    (FETCH_REQUEST, FETCH_RESPONSE),
    (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
    (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
    (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
    (INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE),
    (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE),
    (CONSUMER_GROUP_HEARTBEAT_REQUEST, CONSUMER_GROUP_HEARTBEAT_RESPONSE),
    (CONSUMER_GROUP_DESCRIBE_REQUEST, CONSUMER_GROUP_DESCRIBE_RESPONSE),
)


def _by_api_key(schemas: list[Schema]) -> dict[int, Schema]:
    table: dict[int, Schema] = {}
    for schema in schemas:
        if schema.api_key is None or schema.api_key in table:
            raise ValueError(f"{schema.name}: missing or duplicate api_key {schema.api_key}")
        table[schema.api_key] = schema
    return table


REQUEST_SCHEMAS: dict[int, Schema] = _by_api_key([request for request, _ in _PAIRS])
RESPONSE_SCHEMAS: dict[int, Schema] = _by_api_key([response for _, response in _PAIRS])

__all__ = ["REQUEST_SCHEMAS", "RESPONSE_SCHEMAS"]
