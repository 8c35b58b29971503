"""Settings whose product sizes memory are checked together against the machine's memory."""

from __future__ import annotations

import numpy as np
import pytest

from streamdedup.config import load_config
from streamdedup.engine.arena import Arena
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.engine.index import CandidateIndex
from streamdedup.engine.sizing import check_fits, machine_memory, sized_bytes
from streamdedup.errors import ConfigError
from streamdedup.state.base import MemoryStore


def _nbytes(obj) -> int:
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))


@pytest.mark.parametrize("bands,num_perm,bits", [(57, 128, 8), (41, 64, 16), (10, 256, 32)])
def test_the_sizes_are_what_the_tables_allocate(bands: int, num_perm: int, bits: int) -> None:
    """The formula against the arrays a full-sized index and an arena allocate (past their
    fixed minimums: 2^20 documents)."""
    n = 1 << 20
    index = CandidateIndex(bands, n, 3, 16, full=True)
    if index.prefaulting is not None:
        index.prefaulting.join()
    arena = Arena(n, num_perm, bits)
    assert _nbytes(index) + _nbytes(arena) - 16 == sized_bytes(n, bands, num_perm, bits)


def test_a_product_past_the_machine_is_refused_naming_the_settings() -> None:
    cfg = load_config(environ={"STREAMDEDUP_ENGINE__MAX_DOCUMENTS": str(2**31 - 1)})
    with pytest.raises(ConfigError) as e:
        Deduplicator(cfg, MemoryStore())
    msg = str(e.value)
    assert "engine.max_documents = 2,147,483,647" in msg and "fingerprint.minhash.num_perm" in msg
    assert "GiB" in msg and "machine's memory" in msg
    # the default fits, and so does the same product on a machine that has it
    Deduplicator(load_config(environ={}), MemoryStore())
    check_fits(2**31 - 1, 57, 128, 8, sized_bytes(2**31 - 1, 57, 128, 8))
    assert machine_memory() is None or machine_memory() > 2**20
