"""Python face of the in-memory candidate index (the arrays behind ``_kernels.index``).

Memory per document: ``5 * bands`` (slot_keys, slot_hot: the key and hot count per band) + 32 (seq,
time, root, digest), plus the cell tables, ``2 * 4 * bands + 2 * 4`` bytes per document at
their full size (two cells per document per band keep the chance that a later document
overwrites a live one's cell low). With 41 bands (31 + 10 lead): 573 bytes per document; the anchor table adds
``8 * ANCHOR_CELLS_PER_DOC`` = 64 bytes per document of capacity.

The cell tables grow with the stream: they start small and grow fourfold (rehashed from the
slots) whenever the documents seen so far reach half their cells, up to two cells per document of
``capacity``. A short stream does not pay for a million-document index, and the size at each
document is a function of its seq alone, so growth never changes a decision. ``full`` sizes
them for ``capacity`` at once and faults every page in (from a background thread where the
kernel allows): a long-running processor pays the memory at start-up instead of growth pauses
and page faults mid-stream (the table sizes differ, so which documents share a cell does too:
like max_documents, a setting of the state).
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading

import numpy as np

from streamdedup._kernels import index as K
from streamdedup._kernels.anchor_index import ANCHOR_CELLS_PER_DOC


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


#: madvise(2) advice that faults a range in, writable, without writing to it (Linux >= 5.14;
#: Python's mmap module does not name it)
_MADV_POPULATE_WRITE = 23
_POPULATE_STEP = 2 << 20
_populate_ok: bool | None = None


def _madvise_populate():
    """libc's madvise, or None where MADV_POPULATE_WRITE is unknown (not Linux, kernel < 5.14)."""
    global _populate_ok
    if sys.platform != "linux" or _populate_ok is False:
        return None
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    if _populate_ok is None:
        probe = mmap.mmap(-1, mmap.PAGESIZE)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(probe))
        _populate_ok = madvise(addr, mmap.PAGESIZE, _MADV_POPULATE_WRITE) == 0
        probe.close()
    return madvise if _populate_ok else None


def _prefault(arrays: tuple[np.ndarray, ...]) -> threading.Thread | None:
    """Fault every page of ``arrays`` in so that no lookup later pays the page fault.

    Lookups touch one random cell per band: on a fresh index nearly every one of them is a
    first touch (a fault, and on huge pages the zeroing of 2 MiB), which made the first 50k
    documents of a stream cost ~1 s more and put the latency warm-up in the p99.

    In a background thread (returned) where the kernel can fault pages in without writing them
    (MADV_POPULATE_WRITE): the index is in use meanwhile, and the faults of ~0.5 GB took up to
    1.5 s of a processor's start-up (on a VM right after the kernel compile).
    Elsewhere at once, by writing a zero to every page.
    """
    madvise = _madvise_populate()
    if madvise is None:
        for a in arrays:
            a.reshape(-1).view(np.uint8)[::4096] = 0  # only for zeroed arrays (a self-assignment is skipped)
        return None

    def populate() -> None:
        for a in arrays:  # the thread holds them: no array is freed under its madvise
            lo, hi = a.ctypes.data & ~(mmap.PAGESIZE - 1), a.ctypes.data + a.nbytes
            # in steps: madvise holds the process's memory-map lock, which every mmap() of the
            # other threads waits for (in one call, the engine's next allocations waited 1.5 s)
            for p in range(lo, hi, _POPULATE_STEP):
                madvise(p, min(_POPULATE_STEP, hi - p), _MADV_POPULATE_WRITE)  # a failure only costs later faults

    thread = threading.Thread(target=populate, name="streamdedup-prefault", daemon=True)
    thread.start()
    return thread


#: smallest cell table (per band: 256 KB); a short stream never grows
MIN_CELLS = 65536
#: tables grow fourfold: each growth re-inserts every document, and doubling made the
#: re-inserts cost a third of the decide time on a 19k-document file
GROWTH = 4


class CandidateIndex:
    """Ring of document slots plus per-band direct-mapped cells (see ``_kernels/index.py``).

    The kernels (``_kernels.decide``, ``_kernels.records``) take the arrays as one
    :class:`~streamdedup._kernels.index.IndexArrays` (:meth:`arrays`); this class owns them,
    sizes them and holds the per-document scratch the lookups write into (``probe``).
    """

    def __init__(self, bands: int, capacity: int, hot_threshold: int, max_candidates: int, full: bool = False,
                 next_seq: int = 0):
        self.bands = bands
        self.capacity = capacity
        self.hot_threshold = hot_threshold
        self.max_cells = 2 * capacity
        self.full = full
        # all on huge pages when large: every lookup dereferences slots at random
        self.slot_seq = _zeros(capacity, np.int64)
        self.slot_seq[:] = -1
        self.slot_time = _zeros(capacity, np.int64)
        self.slot_root = _zeros(capacity, np.int64)
        self.slot_keys = _zeros(capacity * bands, np.uint32).reshape(capacity, bands)
        self.slot_hot = _zeros(capacity * bands, np.uint8).reshape(capacity, bands)
        self.slot_digest = _zeros(capacity, np.uint64)
        # fixed, not grown with the cells: see _kernels/anchor_index
        self.anchor_table = _zeros(ANCHOR_CELLS_PER_DOC * capacity, np.uint64)
        self.probe = K.Probe(cand_slots=np.empty(max_candidates, dtype=np.int64),
                             cand_shared=np.empty(max_candidates, dtype=np.int64), hot_bands=np.empty(bands, dtype=np.bool_),
                             cell=np.empty(bands, dtype=np.uint32), key=np.empty(bands, dtype=np.uint32),
                             live=np.empty(bands, dtype=np.bool_))
        self._allocate(self.cells_for(next_seq))
        #: the thread faulting the tables in (``full``), if it runs in the background
        self.prefaulting = _prefault((self.cells, self.digest_cells, self.slot_time, self.slot_root, self.slot_keys,
                                      self.slot_hot, self.slot_digest, self.anchor_table)) if full else None

    def _allocate(self, n_cells: int) -> None:
        """Empty tables of ``n_cells`` per band."""
        self.n_cells = n_cells
        self.cells = _zeros(self.bands * n_cells, np.uint32)
        self.digest_cells = _zeros(n_cells, np.uint32)
        #: the seq whose insertion needs bigger tables
        self.grow_at = n_cells // 2 if n_cells < self.max_cells else 2**62

    def cells_for(self, seq: int) -> int:
        """Cells per band while document ``seq`` is decided: the full size divided by a power of
        GROWTH, at least two per document seen (and MIN_CELLS)."""
        if self.full:
            return self.max_cells
        target = max(2 * min(seq + 1, self.capacity), MIN_CELLS)
        n = self.max_cells
        while n // GROWTH >= target:
            n //= GROWTH
        return n

    def grow(self, next_seq: int, seq_lo: int) -> None:
        """Bigger tables for document ``next_seq``, refilled from the slots of the valid documents."""
        self._allocate(self.cells_for(next_seq))
        K.rehash(max(seq_lo, next_seq - self.capacity), next_seq, self.arrays())

    def arrays(self) -> K.IndexArrays:
        """The tables as the kernels take them (made per call: growth replaces the cell tables)."""
        return K.IndexArrays(self.cells, self.digest_cells, self.slot_seq, self.slot_time, self.slot_root, self.slot_keys,
                             self.slot_hot, self.slot_digest, self.anchor_table)

    @property
    def bytes_used(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    def forget(self, seq: int) -> None:
        """Make a document unreachable (deletion by id)."""
        slot = seq % self.capacity
        if self.slot_seq[slot] == seq:
            self.slot_seq[slot] = -1
