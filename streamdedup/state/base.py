"""The state-store protocol and its in-memory twin.

Keys are document sequence numbers (the engine assigns them in arrival order); values are
opaque engine records. One :class:`StateBatch` is applied atomically: the records of a
micro-batch, the deletions that eviction decided, and the metadata (next seq, window bounds,
input positions) all land together or not at all, so replaying input after a crash is
idempotent (the input positions say where to resume).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol


@dataclass
class StateBatch:
    puts: list[tuple[int, bytes]] = field(default_factory=list)
    #: delete every record with seq in [lo, hi)
    delete_range: tuple[int, int] | None = None
    deletes: list[int] = field(default_factory=list)
    meta: bytes | None = None
    #: run by the store right before it applies the batch (possibly on its commit thread):
    #: file mode writes and syncs the batch's outputs there, so they are durable first
    before: Callable[[], None] | None = None


class Store(Protocol):
    def get_meta(self) -> bytes | None: ...

    def get_many(self, seqs: list[int]) -> list[bytes | None]: ...

    def iter_from(self, seq: int) -> Iterator[tuple[int, bytes]]:
        """Records with seq >= ``seq`` in increasing seq order."""
        ...

    def commit(self, batch: StateBatch) -> Future | None:
        """Apply ``batch`` atomically: at once (returns None), or in the background (returns
        the future that completes when it landed; see ``state.pipelined``)."""
        ...

    def disk_bytes(self) -> int: ...

    def close(self) -> None: ...


class MemoryStore:
    """Dict-backed twin of the RocksDB store (same contract, no durability)."""

    def __init__(self) -> None:
        self._records: dict[int, bytes] = {}
        self._meta: bytes | None = None
        self.closed = False

    def get_meta(self) -> bytes | None:
        return self._meta

    def get_many(self, seqs: list[int]) -> list[bytes | None]:
        return [self._records.get(s) for s in seqs]

    def iter_from(self, seq: int) -> Iterator[tuple[int, bytes]]:
        for s in sorted(k for k in self._records if k >= seq):
            yield s, self._records[s]

    def commit(self, batch: StateBatch) -> None:
        if self.closed:
            raise RuntimeError("store is closed")
        if batch.before is not None:
            batch.before()
        if batch.delete_range is not None:
            lo, hi = batch.delete_range
            for s in [k for k in self._records if lo <= k < hi]:
                del self._records[s]
        for s in batch.deletes:
            self._records.pop(s, None)
        for s, value in batch.puts:
            self._records[s] = value
        if batch.meta is not None:
            self._meta = batch.meta

    def disk_bytes(self) -> int:
        return sum(len(v) + 9 for v in self._records.values())

    def close(self) -> None:
        self.closed = True
