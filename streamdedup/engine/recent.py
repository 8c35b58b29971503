"""What the engine keeps in memory of its recent batches, found by seq (pure core).

A copy's original is usually minutes old: its text (exact evidence, the revision test) and
its id and position (a duplicate's tags) are still held from the batch that decided it, and
need not be read back from the state. A batch's indexed documents have consecutive seqs and
batches are decided in seq order, so the batch that holds a seq is found by bisecting the
batches' first seqs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")


class RecentBatches(Generic[T]):
    """Recent decided batches, each kept as a value of the caller's, the oldest dropped while
    their sizes sum past ``limit`` (the newest is always kept)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._values: deque[T] = deque()
        self._firsts: deque[int] = deque()
        self._ends: deque[int] = deque()
        self._rows: deque[np.ndarray] = deque()
        self._sizes: deque[int] = deque()
        self._total = 0

    def add(self, seqs: np.ndarray, value: T, size: int) -> None:
        """A decided batch (``seqs``: its documents', -1 for those not indexed) and what to keep
        of it; a batch with no indexed document is not kept."""
        rows = np.flatnonzero(seqs >= 0)
        if not rows.shape[0]:
            return
        first = int(seqs[rows[0]])
        if self._ends and first < self._ends[-1]:  # seqs began again (a rebuilt index): none is held
            for q in (self._values, self._firsts, self._ends, self._rows, self._sizes):
                q.clear()
            self._total = 0
        self._values.append(value)
        self._firsts.append(first)
        self._ends.append(first + rows.shape[0])
        self._rows.append(rows)
        self._sizes.append(size)
        self._total += size
        while self._total > self.limit and len(self._values) > 1:
            for q in (self._values, self._firsts, self._ends, self._rows):
                q.popleft()
            self._total -= self._sizes.popleft()

    def find(self, seq: int) -> tuple[T, int] | None:
        """The kept value of the batch that decided ``seq`` and its row there, or None."""
        k = bisect_right(self._firsts, seq) - 1
        if k < 0 or seq >= self._ends[k]:
            return None
        return self._values[k], int(self._rows[k][seq - self._firsts[k]])
