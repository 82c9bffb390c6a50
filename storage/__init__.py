"""A compacted, checksummed, append-only log of typed key/value records.

Generic: it knows nothing of groups, sockets or the wire protocol (docs/storage-format.md).
"""

from kcoord.storage.errors import StorageCorruption, StorageError, StorageLocked
from kcoord.storage.files import FileOps
from kcoord.storage.log import Log
from kcoord.storage.records import LogConfig, Record

__all__ = ["FileOps", "Log", "LogConfig", "Record", "StorageCorruption", "StorageError", "StorageLocked"]
