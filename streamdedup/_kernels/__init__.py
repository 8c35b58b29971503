"""Numba kernels: the only place with per-byte loops.

All kernels take a batch as one concatenated ``uint8`` buffer plus ``int64`` offsets
(document i is ``buf[offsets[i]:offsets[i+1]]``), so no Python object is created per shingle or
per document. They trust their input (the wrappers validate) and write into caller-supplied
output arrays. Each kernel has a slow pure-Python reference in ``tests/reference.py``;
``tests/unit/test_kernels.py`` drives both from one table.

- ``hashing``: fmix64, rotations, the 128-bit digest;
- ``fingerprint``: canonical bytes, shingles, MinHash, band keys, LD signatures, the batch pass;
- ``align``: bounded / semi-global edit distance and edit runs on signatures (bit-parallel where the verification uses them);
- ``verify``: one candidate pair, every estimate and the verdict (the decide loop and ``explain``);
- ``index``: the engine's in-memory candidate index (ring of document slots, per-band cells);
- ``arena``: what verification needs of every indexed document (b-bit MinHash, sizes, signatures);
- ``decide``: the decide loop of a micro-batch (lookup, verification, decision, insertion, in order);
- ``records``: the engine's stored records, encoded and restored in bulk;
- ``fprecords``: fingerprint records (a staged topology's worker -> decider), encoded and checked/decoded in bulk;
- ``jsonscan``: JSON records checked and split, the decoding fast path of file mode and Kafka;
- ``cache`` (no kernel): which kernels Numba would compile on their next call.
"""

from .align import edit_runs, levenshtein_bounded, semi_global, semi_global_distance
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
