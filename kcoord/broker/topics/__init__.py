"""The topic registry: durable topics and their partition counts (storage record type 4)."""

from kcoord.broker.topics.records import TopicRecord, TopicTombstone
from kcoord.broker.topics.registry import TopicExists, TopicLog, TopicRegistry, validate_topic_name

__all__ = ["TopicExists", "TopicLog", "TopicRecord", "TopicRegistry", "TopicTombstone", "validate_topic_name"]
