"""Storage exceptions: I/O failures and corruption. Both mean "not durable"; neither is a client error."""


class StorageError(Exception):
    """An append, fsync or file operation failed; the records involved were not acknowledged."""


class StorageLocked(StorageError):
    """Another process holds the data directory's LOCK."""


class StorageCorruption(StorageError):
    """A bad record inside a sealed segment: never skipped silently."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        super().__init__(
            f"corrupt record in sealed segment {path} at byte offset {offset}: {reason}. "
            f"Inspect with `kcoord storage verify --data-dir DIR`; "
            f"`kcoord storage repair --data-dir DIR` moves the damaged remainder aside"
        )
