"""The topic registry: durable topics and their partition counts (storage record type 4)."""

from coordinator.topics.records import TopicRecord, TopicTombstone
from coordinator.topics.registry import TopicLog, TopicRegistry, validate_topic_name

__all__ = ["TopicLog", "TopicRecord", "TopicRegistry", "TopicTombstone", "validate_topic_name"]
