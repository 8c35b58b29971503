"""State stores behind one protocol: RocksDB for real use, an in-memory twin for tests.

``streamdedup.state.base`` is pure (no rocksdict import); ``streamdedup.state.rocks`` imports
rocksdict and is only loaded by the I/O layers (file mode, Kafka runtime).
"""

from streamdedup.state.base import MemoryStore, StateBatch, Store

__all__ = ["MemoryStore", "StateBatch", "Store", "open_store"]


def open_store(path: str | None, sync: bool = False) -> Store:
    """RocksDB store at ``path``, or an in-memory store when ``path`` is None."""
    if path is None:
        return MemoryStore()
    from streamdedup.state.rocks import RocksStore

    return RocksStore(path, sync=sync)
