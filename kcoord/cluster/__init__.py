"""Cluster mode (`--cluster postgresql://...`, issue 27): the nodes keep their durable state in
PostgreSQL and fence each other through it (docs/cluster.md; ../shared/docs/cluster-notes.md).

* `schema`: the versioned migrations, including the fenced `kcoord_append` function;
* `leases`: shard ownership (`ShardLeases`) and the owner's self-fence (`LeaseClock`);
* `shard_log`: a shard's records in PostgreSQL (`ShardRecordLog`, the `RecordLog` port; `load_shard`);
* `node_writer`: every shard's and partition's writes of a node in one fenced `kcoord_flush` call per
  flush (`NodeWriter`, migration 4 in `migration_flush`);
* `offsets_feed`: `__consumer_offsets` for the owned shards, built when first read (`OffsetsFeed`);
* `cli`: `kcoord cluster init`.

Only this package imports asyncpg (the optional extra `kcoord[cluster]`), and nothing that runs
without `--cluster` imports this package's asyncpg users: an import-linter contract holds both.
The shard function itself is the coordinators' (`kcoord.coordinator.runtime.shards`, pure).
"""
