"""Numba kernels: the only place with per-byte loops.

All kernels take a batch as one concatenated ``uint8`` buffer plus ``int64`` offsets
(document i is ``buf[offsets[i]:offsets[i+1]]``), so no Python object is created per shingle or
per document. They trust their input (the wrappers validate) and write into caller-supplied
output arrays. Each kernel has a slow pure-Python reference in ``tests/reference.py``;
``tests/unit/test_kernels.py`` drives both from one table.

- ``hashing``: fmix64, rotations, the 128-bit digest;
- ``fingerprint``: canonical bytes, tokens, shingles, MinHash, band keys, LD signatures, the batch pass;
- ``align``: bounded / semi-global edit distance and edit runs on signatures (bit-parallel where the verification uses them);
- ``verify``: one candidate pair, every estimate and the verdict (the decide loop and ``explain``);
- ``index``: the engine's in-memory candidate index (ring of document slots, per-band cells);
- ``arena``: what verification needs of every indexed document (b-bit MinHash, sizes, signatures);
- ``decide``: the decide loop of a micro-batch (lookup, verification, decision, insertion, in order);
- ``evidence``: exact character evidence of a pair (byte 8-gram Jaccards, words one edit apart);
- ``records``: the engine's stored records, encoded and restored in bulk;
- ``fprecords``: fingerprint records (a staged topology's worker -> decider), encoded and checked/decoded in bulk;
- ``jsonscan``: JSON records checked and split, the decoding fast path of file mode and Kafka;
- ``revision`` (with ``revtext``, ``revalign``, ``revblocks``, ``revtypos``, ``revitems``): the revision test of a
  linked pair (tokens, alignment, the reading of each changed block), bounded per pair;
- ``cache`` (no kernel): which kernels Numba would compile on their next call.

Compile time (the first run after an install compiles every kernel it calls, ~20 s of CPU):
Numba compiles a kernel once per distinct tuple of argument *types*, so the kernels avoid what
multiplies or inflates that work without changing the machine code's speed:

- no literal argument to a compiled (not inlined) helper: a call such as ``f(buf, 0, n)`` or a
  variable that starts as ``False`` compiles ``f`` once for ``Literal[int](0)`` /
  ``Literal[bool](False)`` and again for ``int64`` / ``bool``; ``np.int64(0)`` and
  ``np.bool_(False)`` are plain typed values (LLVM still propagates the constant once it
  inlines ``f``);
- byte loops instead of slice assignment (``out[a:b] = buf[c:d]``): each slice assignment
  compiles Numba's shape-mismatch error message (string formatting of the shapes) and an
  overlap-safe copy, ~3 s of the cold start; the sources and targets here never overlap;
- input arrays reach a kernel read-only whichever way they were made (``np.frombuffer`` of
  ``bytes`` is read-only, a new array is not, and Numba types the two differently): the Python
  faces pass :func:`readonly` views, so file mode, Kafka and the library share one compiled
  kernel instead of one per mix;
- ``inline="always"`` only for a helper called at one or two sites in hot per-byte loops:
  Numba inlines at the IR level and types each copy again, so a helper at three or more sites
  (``_oph``, ``_band_keys``, the record field writers) is compiled once and called; LLVM inlines
  the call anyway (fingerprint throughput unchanged, ~1.5 s less compile over the kernels);
- a helper called with several integer types has one explicit signature (the record writers,
  ``_put_uint``/``_put_varint``: three compiles each before); ``np.zeros`` and ``np.full``
  compile implementations of their own per dtype and shape, so the engine's unit (alignment,
  records) allocates with ``np.empty`` and fills by loops (~0.3 s; other kernels still use
  them where their implementation is compiled anyway).
"""

import numpy as np

from streamdedup._kernels.align import edit_runs, levenshtein_bounded, semi_global, semi_global_distance
from streamdedup._kernels.fingerprint import (
    band_keys,
    canonical_byte_map,
    char_shingles,
    classic_minhash,
    combine_words,
    fingerprint_batch,
    oph_minhash,
)
from streamdedup._kernels.hashing import EMPTY_SLOT, FNV_OFFSET, FNV_PRIME, GOLDEN, ROLL_BASE, digest128, fmix64


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as Numba should type a kernel input: a read-only view (no copy) of a writable array.

    >>> readonly(np.zeros(2)).flags.writeable
    False
    """
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view
