"""The data side of share groups at the edge (KIP-932): share sessions, the fetch plan, long polling and
read_committed filtering of ShareFetch (78) and ShareAcknowledge (79). The share-partition state itself
is the pure tenant `kcoord.coordinator.share_partitions`; this package reads the partition logs, asks
the tenant what to acquire and answers (Kafka's SharePartitionManager, DelayedShareFetch, ShareFetchUtils).
"""

from kcoord.broker.share.edge import ShareEdge

__all__ = ["ShareEdge"]
