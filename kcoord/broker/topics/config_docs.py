"""One line of documentation per config kcoord describes (DescribeConfigs v3+ with include_documentation):
Kafka answers its ConfigDef text for every config; these are kcoord's own words (docs/compat.md), and
say where kcoord does not act on a setting."""

from __future__ import annotations

__all__ = ["DOCS"]

_INERT = " Stored and described; kcoord does not act on it."

DOCS: dict[str, str] = {
    # -- topic configs (TopicConfig)
    "cleanup.policy": "What happens to old segments: delete removes them by retention; compact keeps the "
    "latest record per key (kcoord keeps every record of a compact-only topic).",
    "compression.type": "The codec batches are stored in: producer keeps the producer's, any other value "
    "recompresses to it.",
    "compression.gzip.level": "The gzip level used when recompressing to gzip (1-9, or -1 for the default).",
    "compression.lz4.level": "The lz4 level used when recompressing to lz4 (1-17).",
    "compression.zstd.level": "The zstd level used when recompressing to zstd.",
    "delete.retention.ms": "How long tombstones are kept on a compacted topic." + _INERT,
    "file.delete.delay.ms": "How long a deleted segment waits before its file is removed." + _INERT,
    "flush.messages": "Force an fsync after this many messages." + _INERT,
    "flush.ms": "Force an fsync after this long." + _INERT,
    "follower.replication.throttled.replicas": "Replicas throttled on the follower side." + _INERT,
    "index.interval.bytes": "How many bytes of records between two offset index entries.",
    "leader.replication.throttled.replicas": "Replicas throttled on the leader side." + _INERT,
    "local.retention.bytes": "Bytes kept locally when tiered storage is on." + _INERT,
    "local.retention.ms": "Time kept locally when tiered storage is on." + _INERT,
    "max.compaction.lag.ms": "The longest a record stays uncompacted." + _INERT,
    "max.message.bytes": "The largest record batch the topic accepts.",
    "message.timestamp.after.max.ms": "How far in the future a record's timestamp may be.",
    "message.timestamp.before.max.ms": "How far in the past a record's timestamp may be.",
    "message.timestamp.type": "CreateTime keeps the producer's timestamps, LogAppendTime stamps the append.",
    "min.cleanable.dirty.ratio": "The share of uncompacted log that triggers compaction." + _INERT,
    "min.compaction.lag.ms": "The shortest a record stays uncompacted." + _INERT,
    "min.insync.replicas": "Replicas that must have a write acknowledged with acks=all (kcoord has one).",
    "preallocate": "Preallocate segment files." + _INERT,
    "remote.log.copy.disable": "Stop copying segments to tiered storage." + _INERT,
    "remote.log.delete.on.disable": "Delete tiered data when tiered storage is turned off." + _INERT,
    "remote.storage.enable": "Tiered storage; kcoord has none and refuses true.",
    "retention.bytes": "The most bytes a partition keeps before old segments are deleted (-1: no limit).",
    "retention.ms": "How long records are kept before their segment is deleted (-1: for ever).",
    "segment.bytes": "The size at which a segment is rolled.",
    "segment.index.bytes": "The size of a segment's offset index." + _INERT,
    "segment.jitter.ms": "A random delay subtracted from segment.ms." + _INERT,
    "segment.ms": "The age at which a segment is rolled even if not full.",
    "unclean.leader.election.enable": "Let an out-of-sync replica become leader." + _INERT,
    # -- broker settings behind the topic configs, and kcoord's own
    "log.retention.hours": "The default retention in hours, used when log.retention.ms and "
    "log.retention.minutes are not set.",
    "log.retention.minutes": "The default retention in minutes, used when log.retention.ms is not set.",
    "log.roll.hours": "The default segment age in hours, used when log.roll.ms is not set.",
    "log.roll.jitter.hours": "The default segment jitter in hours." + _INERT,
    "log.flush.scheduler.interval.ms": "How often the flusher checks for logs to fsync." + _INERT,
    "node.id": "This broker's id.",
    "broker.id": "This broker's id.",
    "listeners": "The addresses the broker listens on.",
    "advertised.listeners": "The addresses clients are told to connect to.",
    "listener.security.protocol.map": "The security protocol of each listener.",
    "sasl.enabled.mechanisms": "The SASL mechanisms the broker accepts.",
    "ssl.client.auth": "Whether TLS clients must present a certificate.",
    "connections.max.reauth.ms": "The longest a SASL session lasts before the client must re-authenticate.",
    "log.dirs": "Where the broker keeps its data.",
    "num.partitions": "The partition count of a topic created without one.",
    "default.replication.factor": "The replication factor of a topic created without one (kcoord: 1).",
    "auto.create.topics.enable": "Whether Metadata for an unknown topic creates it.",
    "group.initial.rebalance.delay.ms": "How long a new classic group waits for more members.",
    "group.min.session.timeout.ms": "The shortest session timeout a classic member may ask for.",
    "group.max.session.timeout.ms": "The longest session timeout a classic member may ask for.",
    "group.max.size": "The most members a classic group may have.",
    "offsets.retention.minutes": "How long an empty group's committed offsets are kept.",
    "offsets.retention.check.interval.ms": "How often expired offsets are removed.",
    "socket.request.max.bytes": "The largest request the broker reads.",
    "group.consumer.session.timeout.ms": "A consumer group's session timeout unless the group sets its own.",
    "group.consumer.min.session.timeout.ms": "The shortest session timeout a consumer group may set.",
    "group.consumer.max.session.timeout.ms": "The longest session timeout a consumer group may set.",
    "group.consumer.heartbeat.interval.ms": "A consumer group's heartbeat interval unless it sets its own.",
    "group.consumer.min.heartbeat.interval.ms": "The shortest heartbeat interval a consumer group may set.",
    "group.consumer.max.heartbeat.interval.ms": "The longest heartbeat interval a consumer group may set.",
}
