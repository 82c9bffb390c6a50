"""Which shard a group (or transactional id) belongs to: Kafka's mapping of group ids to
`__consumer_offsets` partitions, so shard N of a kcoord cluster holds the groups partition N holds
in Kafka (tooling and migration see the same numbers; clients never compute it).

Kafka: `GroupCoordinatorService.partitionFor` is `Utils.abs(groupId.hashCode()) % numPartitions`
(group-coordinator/.../GroupCoordinatorService.java) and `TransactionStateManager.partitionFor` the
same over the transactional id (core/.../transaction/TransactionStateManager.scala); `Utils.abs`
(clients/.../common/utils/Utils.java) maps Integer.MIN_VALUE to 0 where Math.abs would keep it
negative. `offsets.topic.num.partitions` defaults to 50 and "should not change after deployment"
(GroupCoordinatorConfig.java): `kcoord cluster init` stores it once. A single node has one shard
covering every key and never hashes (`runtime.phases`).
"""

from __future__ import annotations

from array import array

__all__ = ["DEFAULT_NUM_SHARDS", "java_string_hash", "shard_of"]

DEFAULT_NUM_SHARDS = 50
_INT32_MIN = -(1 << 31)
_UINT32 = (1 << 32) - 1


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode()`: `h = 31 * h + c` over the UTF-16 code units, as a signed int32.

    A character outside the BMP is two code units (a surrogate pair) in Java, so the string is
    hashed as its UTF-16 encoding; a lone surrogate (Python allows them) is its own code unit, as
    in a Java String holding one.
    """
    units = array("H", s.encode("utf-16-le", "surrogatepass"))
    h = 0
    for unit in units:
        h = (31 * h + unit) & _UINT32
    return h - (1 << 32) if h & 0x80000000 else h


def shard_of(key: str, num_shards: int = DEFAULT_NUM_SHARDS) -> int:
    """`Utils.abs(key.hashCode()) % num_shards`: the shard owning a group or transactional id."""
    if num_shards <= 0:
        raise ValueError(f"num_shards must be positive, not {num_shards}")
    h = java_string_hash(key)
    return (0 if h == _INT32_MIN else abs(h)) % num_shards
