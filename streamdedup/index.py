"""Python face of the in-memory candidate index (the arrays behind ``_kernels.index``).

Memory per document slot (cells = 2 x capacity, rounded up to a power of two):
``4 * bands * 2`` (cells) ``+ bands * 2`` (hot counts) ``+ 4 * bands`` (own keys)
``+ 8 * 2`` (digest cells) ``+ 32`` (seq, time, root, digest); 41 bands (31 + 10 lead):
~620 bytes per slot. The cell tables are touched at random, so they are paid for in full
once warm; with ``prefault`` (engine.prefault_index) they are paid for at start-up instead.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

from ._kernels import index as K


def _zeros(n: int, dtype) -> np.ndarray:
    """Zeroed array; large ones on transparent huge pages.

    Every lookup touches one random cell per band in tables of hundreds of MB: with 4 KiB pages
    nearly each of those is also a TLB miss. Anonymous mmap memory is zero and is only paid for
    when touched, like np.zeros.
    """
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes < (8 << 20) or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.zeros(n, dtype=dtype)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(buf, dtype=dtype)


def _prefault(a: np.ndarray) -> None:
    """Write every page of ``a`` once so that no lookup later pays the page fault.

    Lookups touch one random cell per band: on a fresh index nearly every one of them is a
    first touch (a fault, and on huge pages the zeroing of 2 MiB), which made the first 50k
    documents of a stream cost ~1 s more and put the latency warm-up in the p99.
    """
    flat = a.reshape(-1).view(np.uint8)
    flat[::4096] = 0  # only for zeroed arrays (a self-assignment would be skipped by numpy)


def _pow2_at_least(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


@dataclass
class Candidates:
    exact_slot: int
    slots: np.ndarray
    shared_bands: np.ndarray
    hot_bands: np.ndarray

    def __len__(self) -> int:
        return self.slots.shape[0]


class CandidateIndex:
    """Ring of document slots plus per-band direct-mapped cells (see ``_kernels/index.py``)."""

    def __init__(self, bands: int, capacity: int, hot_threshold: int, max_candidates: int, prefault: bool = False):
        self.bands = bands
        self.capacity = capacity
        self.hot_threshold = hot_threshold
        self.log2n = _pow2_at_least(2 * capacity).bit_length() - 1
        n_cells = 1 << self.log2n
        self.cells = _zeros(bands * n_cells, np.uint32)
        self.hot = _zeros(bands * n_cells, np.uint8)
        self.digest_cells = _zeros(n_cells, np.uint32)
        self.slot_seq = np.full(capacity, -1, dtype=np.int64)
        self.slot_time = np.zeros(capacity, dtype=np.int64)
        self.slot_root = np.zeros(capacity, dtype=np.int64)
        self.slot_keys = _zeros(capacity * bands, np.uint32).reshape(capacity, bands)
        self.slot_digest = np.zeros(capacity, dtype=np.uint64)
        self._cand = np.empty(max_candidates, dtype=np.int64)
        self._shared = np.empty(max_candidates, dtype=np.int64)
        self._hot_bands = np.empty(bands, dtype=np.bool_)
        self._hot_out = np.empty(bands, dtype=np.uint8)
        if prefault:
            for a in (self.cells, self.hot, self.digest_cells, self.slot_time, self.slot_root, self.slot_keys, self.slot_digest):
                _prefault(a)

    @property
    def bytes_used(self) -> int:
        arrays = (self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys, self.slot_digest)
        return sum(a.nbytes for a in arrays)

    def lookup(self, digest_lo: int, keys32: np.ndarray, seq_lo: int, min_time: int) -> Candidates:
        n, exact = K.lookup(
            np.uint64(digest_lo), keys32, self.bands, self.log2n, self.hot_threshold, seq_lo, min_time,
            self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_keys, self.slot_digest,
            self._cand, self._shared, self._hot_bands,
        )
        return Candidates(int(exact), self._cand[:n].copy(), self._shared[:n].copy(), self._hot_bands.copy())

    def insert(self, seq: int, root: int, event_time: int, digest_lo: int, keys32: np.ndarray, seq_lo: int, min_time: int) -> np.ndarray:
        """Insert a decided document; returns the hot count of each of its band cells."""
        K.insert(
            seq, root, event_time, np.uint64(digest_lo), keys32, self.bands, self.log2n, self.capacity, seq_lo, min_time,
            self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys,
            self.slot_digest, self._hot_out,
        )
        return self._hot_out.copy()

    def run_until_candidate(self, start: int, digests_lo: np.ndarray, keys32: np.ndarray, times: np.ndarray, empty: np.ndarray,
                            window_ms: int, state: np.ndarray, seq_out: np.ndarray, root_out: np.ndarray, hot_out: np.ndarray
                            ) -> tuple[int, Candidates | None]:
        """Insert candidate-free documents from ``start``; stop at the first with candidates."""
        i, n, exact = K.run_until_candidate(
            start, digests_lo, keys32, times, empty, self.bands, self.log2n, self.capacity, self.hot_threshold, window_ms, state,
            self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys, self.slot_digest,
            seq_out, root_out, hot_out, self._cand, self._shared, self._hot_bands,
        )
        if i >= keys32.shape[0]:
            return int(i), None
        return int(i), Candidates(int(exact), self._cand[:n].copy(), self._shared[:n].copy(), self._hot_bands.copy())

    def insert_into(self, seq: int, root: int, event_time: int, digest_lo: int, keys32: np.ndarray, seq_lo: int, min_time: int,
                    hot_out: np.ndarray) -> None:
        """Insert a decided document, writing its cells' hot counts into ``hot_out``."""
        K.insert(
            seq, root, event_time, np.uint64(digest_lo), keys32, self.bands, self.log2n, self.capacity, seq_lo, min_time,
            self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys,
            self.slot_digest, hot_out,
        )

    def restore(self, seq: int, root: int, event_time: int, digest_lo: int, keys32: np.ndarray, hot_counts: np.ndarray) -> None:
        K.restore(
            seq, root, event_time, np.uint64(digest_lo), keys32, hot_counts, self.bands, self.log2n, self.capacity,
            self.cells, self.hot, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys,
            self.slot_digest,
        )

    def forget(self, seq: int) -> None:
        """Make a document unreachable (deletion by id)."""
        slot = seq % self.capacity
        if self.slot_seq[slot] == seq:
            self.slot_seq[slot] = -1

    def seq_of_slot(self, slot: int) -> int:
        return int(self.slot_seq[slot])

    def root_of_slot(self, slot: int) -> int:
        return int(self.slot_root[slot])
