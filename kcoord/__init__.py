"""kcoord: a standalone Kafka consumer-group coordinator that speaks the Kafka wire protocol.

The wheel installs this one top-level package. The repository keeps the design's folders at its top
(`protocol/`, `storage/`, `partition_log/`, `coordinator/`, `pipeline/`); `setup.py` maps each of them
under `kcoord.` so nothing of kcoord lands beside a user's own `storage` or `protocol` module.
"""
