"""Persistence of the coordinator's state in `storage.Log`, in three parts:

* `codec`: domain records <-> storage records (the `__consumer_offsets` schemas, topic and producer-id
  records) and their rendering for `kcoord storage dump`;
* `record_log`: the storage adapter (`StorageRecordLog`, the group logic's `RecordLog` port);
* `replay`: recovery feeding every record to its owner (`Replayer`).
"""

from kcoord.coordinator.persistence.codec import (
    GROUP_METADATA_TYPE,
    OFFSET_COMMIT_TYPE,
    from_storage,
    render,
    to_storage,
)
from kcoord.coordinator.persistence.record_log import StorageRecordLog
from kcoord.coordinator.persistence.replay import Replayer

__all__ = [
    "GROUP_METADATA_TYPE",
    "OFFSET_COMMIT_TYPE",
    "Replayer",
    "StorageRecordLog",
    "from_storage",
    "render",
    "to_storage",
]
