"""The metadata tenant: what Kafka's controller keeps in its metadata log, here in the coordinator log
(or, in cluster mode, the shared metadata table), each store written through the one write path
(`coordinator.runtime.CoordinatorRuntime`: records -> durable -> apply through replay -> answer):

* the topic registry (`topic_registry`, `topic_records`; Kafka's ReplicationControlManager);
* producer id blocks (`producer_ids`; ProducerIdControlManager);
* ACL bindings (`acl_model`, `acl_store`; AclControlManager);
* SCRAM credentials (`scram_credentials`, `scram_formatter`; ScramControlManager).

Pure like the other tenants: no sockets, files or wall clock; the edge (authorizer, SASL) plugs in
through ports.
"""

from kcoord.coordinator.metadata.acl_store import AclIndex, AclStore
from kcoord.coordinator.metadata.producer_ids import ProducerIdBlock, ProducerIds
from kcoord.coordinator.metadata.scram_credentials import ScramCredentials
from kcoord.coordinator.metadata.topic_records import TopicRecord, TopicTombstone
from kcoord.coordinator.metadata.topic_registry import (
    TopicExists,
    TopicLog,
    TopicRegistry,
    validate_topic_name,
)

__all__ = [
    "AclIndex",
    "AclStore",
    "ProducerIdBlock",
    "ProducerIds",
    "ScramCredentials",
    "TopicExists",
    "TopicLog",
    "TopicRecord",
    "TopicRegistry",
    "TopicTombstone",
    "validate_topic_name",
]
