"""Evidence sketches: the exact-evidence question answered without the texts.

When a pair is decided on exact evidence (``_kernels.evidence``), the engine compares the two
canonical texts' byte 8-grams: their Jaccard, the same with every digit read as 0 (a template
with other figures gains from that), and their near words. A deployment that keeps no text
(``state.keep_text: false``, ``streamdedup fingerprint``) cannot; it keeps, per text, two
MinHashes of those 8-grams instead, one plain and one with digits read as 0, and estimates the
two Jaccards from them (the near-word share has no sketch: it is not asked).

One-permutation hashing (``fingerprint._oph``) of every 8-gram (``fingerprint.byte_grams``, none
left out by sampling), :data:`SLOTS` bins, each slot
kept to its low :data:`BITS` bits (b-bit minwise hashing, Li and Koenig: slots of two texts
then agree by chance with probability ``2**-BITS``, which :func:`streamdedup.engine.sketch_evidence.jaccard`
takes out). 128 one-byte slots, not 64 of the character bands' sampled grams: measured on the
hard suite's 3% character noise, 64 sampled slots found 0.825 of the copies and 128 unsampled
ones 0.935 (0.98 with the texts), for 256 bytes a text with both sketches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.fingerprint import _oph, byte_grams
from streamdedup._kernels.hashing import key_all

#: bins of each sketch (a power of two) and the bits kept of each
SLOTS = 128
LOG2_SLOTS = 7
BITS = 8
#: the sketches' own hash seed: none of the fingerprint's MinHashes shares it
SEED = np.uint64(0x5EC0_E71D_E7CE_5EED)
GRAM = 8
#: both sketches of a text, as records keep them: the plain one's slots, then the folded one's
SKETCH_BYTES = 2 * SLOTS * BITS // 8


@njit(cache=True)
def _folded(buf, lo, hi, out):
    """``buf[lo:hi]`` into ``out`` with every ASCII digit read as ``0``."""
    for p in range(lo, hi):
        c = buf[p]
        out[p - lo] = 48 if 48 <= c <= 57 else c


@njit(cache=True, nogil=True)
def sketch_batch(canon, start, length, key0, key1, keyed, plain_out, folded_out):
    """Both sketches of each text ``canon[start[d]:][:length[d]]`` into row ``d`` of
    ``plain_out`` and ``folded_out`` (uint8, ``(n, SLOTS)``). ``keyed``: every gram goes through
    SipHash under ``(key0, key1)`` first (``fingerprint.secret``), so a sketch says nothing to
    whoever lacks the key."""
    n_docs = start.shape[0]
    longest = 1
    for d in range(n_docs):
        longest = max(longest, length[d])
    buf = np.empty(longest, dtype=np.uint64)
    digits_as_0 = np.empty(longest, dtype=np.uint8)
    slots = np.empty(SLOTS, dtype=np.uint32)
    filled = np.empty(SLOTS, dtype=np.uint32)
    for d in range(n_docs):
        for fold in range(2):
            if fold == 1:
                _folded(canon, start[d], start[d] + length[d], digits_as_0)
                n = byte_grams(digits_as_0, 0, length[d], GRAM, 0, buf)
            else:
                n = byte_grams(canon, start[d], start[d] + length[d], GRAM, 0, buf)
            if keyed:
                key_all(buf, n, key0, key1)
            _oph(buf, n, SLOTS, LOG2_SLOTS, SEED, slots, filled)
            out = folded_out if fold == 1 else plain_out
            for j in range(SLOTS):
                out[d, j] = np.uint8(slots[j] & np.uint32(0xFF))
