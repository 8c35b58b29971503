"""A full-size index faults its tables in (in the background where the kernel can do it
without writing, so start-up does not wait for ~0.5 GB of page faults): every page ends up
resident, and what the index wrote meanwhile stays."""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

from streamdedup.engine import index as index_mod
from streamdedup.engine.index import CandidateIndex


def _resident_share(a: np.ndarray) -> float:
    """Share of ``a``'s pages in memory (mincore(2))."""
    libc = ctypes.CDLL(None, use_errno=True)
    lo = a.ctypes.data & ~(mmap.PAGESIZE - 1)
    length = a.ctypes.data + a.nbytes - lo
    vec = (ctypes.c_ubyte * ((length + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
    assert libc.mincore(ctypes.c_void_p(lo), ctypes.c_size_t(length), vec) == 0, ctypes.get_errno()
    return sum(v & 1 for v in vec) / len(vec)


def _tables(ix: CandidateIndex) -> tuple[np.ndarray, ...]:
    return ix.cells, ix.digest_cells, ix.slot_time, ix.slot_root, ix.slot_keys, ix.slot_hot, ix.slot_digest


@pytest.mark.skipif(sys.platform != "linux", reason="mincore and MADV_POPULATE_WRITE are Linux's")
@pytest.mark.parametrize("background", [True, False])
def test_a_full_index_faults_every_page_in_and_keeps_what_was_written_meanwhile(background: bool, monkeypatch) -> None:
    if not background:  # a kernel without MADV_POPULATE_WRITE: the pages are written at once
        monkeypatch.setattr(index_mod, "_populate_ok", False)
    ix = CandidateIndex(8, 400_000, 3, 64, full=True)  # cells: 8 * 800k * 4 B = 25.6 MB, on their own mapping
    assert (ix.prefaulting is not None) == (background and index_mod._madvise_populate() is not None)
    rng = np.random.default_rng(7)
    where = rng.integers(0, 100_000, 10_000)  # the first 400 KB: the rest is the prefault's to fault in
    ix.cells[where] = 12345  # the index in use while the thread faults its pages in
    ix.slot_root[: 1000] = 99
    if ix.prefaulting is not None:
        ix.prefaulting.join(30)
        assert not ix.prefaulting.is_alive()
    assert (ix.cells[where] == 12345).all() and (ix.slot_root[:1000] == 99).all()
    assert np.count_nonzero(ix.cells) == np.unique(where).shape[0]  # nothing else written
    for a in _tables(ix):
        assert _resident_share(a) == 1.0


@pytest.mark.skipif(sys.platform != "linux", reason="mincore is Linux's")
def test_a_growing_index_leaves_its_pages_to_the_first_touch() -> None:
    ix = CandidateIndex(8, 400_000, 3, 64)
    assert ix.prefaulting is None
    assert _resident_share(ix.slot_keys) < 0.5  # 12.8 MB on a mapping of its own, untouched
