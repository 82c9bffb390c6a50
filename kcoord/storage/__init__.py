"""A compacted, checksummed, append-only log of typed key/value records.

Generic: it knows nothing of groups, sockets or the wire protocol (docs/storage-format.md).
"""

# The repository's top-level `storage` is a link to this folder, kept so the top level shows the layout the
# project was specified with. It is for reading only: importing through it would load every module a second
# time under another name (`ErrorCode.X is ErrorCode.X` failing between the two), so it refuses.
if __name__ != "kcoord.storage":
    raise ImportError(f"{__name__!r} is the repository's link to kcoord/storage: import kcoord.storage")


from kcoord.storage.errors import StorageCorruption, StorageError, StorageLocked
from kcoord.storage.files import FileOps
from kcoord.storage.log import Log
from kcoord.storage.records import LogConfig, Record

__all__ = ["FileOps", "Log", "LogConfig", "Record", "StorageCorruption", "StorageError", "StorageLocked"]
