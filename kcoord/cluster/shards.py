"""Which shard a group (or transactional id) belongs to: `coordinator.runtime.shards`, where the
coordinators ask their shard's phase; cluster mode routes, places and fences by the same function.
"""

from __future__ import annotations

from kcoord.coordinator.runtime.shards import DEFAULT_NUM_SHARDS, java_string_hash, shard_of

__all__ = ["DEFAULT_NUM_SHARDS", "java_string_hash", "shard_of"]
