"""Numba kernels: the only place with per-byte loops.

All kernels take a batch as one concatenated ``uint8`` buffer plus ``int64`` offsets
(document i is ``buf[offsets[i]:offsets[i+1]]``), so no Python object is created per shingle or
per document. They trust their input (the wrappers validate) and write into caller-supplied
output arrays. Each kernel has a slow pure-Python reference in ``tests/reference.py``;
``tests/unit/test_kernels.py`` drives both from one table.

- ``hashing``: fmix64, rotations, the 128-bit digest;
- ``fingerprint``: canonical bytes, shingles, MinHash, band keys, LD signatures, the batch pass;
- ``align``: bounded / semi-global edit distance and edit runs on signatures;
- ``index``: the in-memory candidate index of the engine.
"""

from .align import edit_runs, levenshtein_bounded, semi_global
from .fingerprint import (
    band_keys,
    canonical_byte_map,
    char_shingles,
    classic_minhash,
    combine_words,
    fingerprint_batch,
    oph_minhash,
)
from .hashing import EMPTY_SLOT, FNV_OFFSET, FNV_PRIME, GOLDEN, ROLL_BASE, digest128, fmix64
