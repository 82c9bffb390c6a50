"""A compacted, checksummed, append-only log of typed key/value records.

Generic: it knows nothing of groups, sockets or the wire protocol (docs/storage-format.md).
"""

from storage.errors import StorageCorruption, StorageError, StorageLocked
from storage.files import FileOps
from storage.log import Log
from storage.records import LogConfig, Record

__all__ = ["FileOps", "Log", "LogConfig", "Record", "StorageCorruption", "StorageError", "StorageLocked"]
