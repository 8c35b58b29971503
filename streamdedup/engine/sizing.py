"""The memory a configuration sizes before its first document, checked against the machine's.

The index's and the verification arena's per-document tables are sized for
``engine.max_documents`` (the index's cell tables grow towards their full size, or take it at
start with ``engine.index_sizing: full``): ``13 * bands + 104`` bytes a document of capacity in
the index (see :mod:`.index`), and the MinHash slots plus 48 bytes in the arena (see
:mod:`.arena`; the signatures' ring grows with what is indexed). A product of settings that
no machine here can hold (``max_documents`` x the bands, x the slots) is refused when the
engine starts, naming the settings, instead of failing in an allocation or the kernel's
out-of-memory killer mid-stream.
"""

from __future__ import annotations

import os

import numpy as np

from streamdedup.engine.arena import INITIAL_SIGNATURE_BYTES, slot_dtype
from streamdedup.errors import ConfigError

#: index bytes a document of capacity takes per band (key and hot count; two 4-byte cells) and
#: besides the bands (seq, time, root, digest; two digest cells; the anchor table)
INDEX_BAND_BYTES = 13
INDEX_DOC_BYTES = 104
#: arena bytes a document of capacity takes besides its MinHash slots
ARENA_DOC_BYTES = 32 + INITIAL_SIGNATURE_BYTES


def sized_bytes(max_documents: int, index_bands: int, num_perm: int, bits: int) -> int:
    """Bytes of the tables sized for ``max_documents`` with these bands and MinHash slots."""
    per_doc = INDEX_BAND_BYTES * index_bands + INDEX_DOC_BYTES + num_perm * np.dtype(slot_dtype(bits)).itemsize + \
        ARENA_DOC_BYTES
    return max_documents * per_doc


def machine_memory() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(max_documents: int, index_bands: int, num_perm: int, bits: int, memory: int | None) -> None:
    """Refuse settings whose tables alone exceed ``memory`` bytes, naming them."""
    need = sized_bytes(max_documents, index_bands, num_perm, bits)
    if memory is not None and need > memory:
        raise ConfigError(
            f"engine.max_documents = {max_documents:,} with {index_bands} index bands (fingerprint.lsh, .lead and "
            f".chars) and {num_perm} MinHash slots (fingerprint.minhash.num_perm) sizes the index and the arena at "
            f"{need / 2**30:,.1f} GiB, more than this machine's memory ({memory / 2**30:,.1f} GiB): lower "
            f"engine.max_documents (each document of capacity takes {need // max_documents:,} bytes)")
