"""Similarity estimates from MinHash slots: Jaccard, containment, b-bit storage form.

Pure numpy: these run on a handful of candidate pairs per document, not per byte.
"""

from __future__ import annotations

import numpy as np

from streamdedup._kernels import EMPTY_SLOT


def _check_pair(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape:
        raise ValueError(f"MinHash shapes differ: {a.shape} vs {b.shape} (different num_perm?)")


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Estimated Jaccard similarity: the fraction of slots that agree.

    Two empty documents (all slots ``EMPTY_SLOT``) are defined to have similarity 0: an empty
    text says nothing about a story.

    >>> jaccard(np.array([1, 2, 3, 4], np.uint32), np.array([1, 2, 0, 4], np.uint32))
    0.75
    """
    _check_pair(a, b)
    if a.shape[-1] == 0 or a[0] == EMPTY_SLOT or b[0] == EMPTY_SLOT:
        return 0.0
    return float(np.count_nonzero(a == b)) / a.shape[-1]


def containment(j: float, n_a: int, n_b: int) -> float:
    """Estimated containment of A in B, ``|A & B| / |A|``, from Jaccard and set sizes.

    ``|A & B| = J (|A| + |B|) / (1 + J)`` follows from ``|A | B| = |A| + |B| - |A & B|``
    (Broder's resemblance and containment from one sketch plus the sizes).

    >>> round(containment(0.5, 50, 100), 3)
    1.0
    """
    if n_a <= 0 or j <= 0.0:
        return 0.0
    inter = j * (n_a + n_b) / (1.0 + j)
    return min(1.0, inter / n_a)


# --------------------------------------------------------------------------- b-bit storage


def pack_bbit(slots: np.ndarray, bits: int) -> bytes:
    """Keep the low ``bits`` of each 32-bit slot (b-bit minwise hashing, Manasse), packed.

    Slot values are low bits of a mixed 64-bit hash, so any ``bits`` of them are uniform.
    """
    slots = np.asarray(slots, dtype=np.uint32)
    if bits == 32:
        return slots.astype("<u4").tobytes()
    if bits in (8, 16):
        return (slots & ((1 << bits) - 1)).astype(f"<u{bits // 8}").tobytes()
    if bits not in (1, 2, 4):
        raise ValueError(f"bits must be one of 1, 2, 4, 8, 16, 32, got {bits}")
    per_byte = 8 // bits
    if slots.shape[0] % per_byte:
        raise ValueError(f"{slots.shape[0]} slots cannot be packed {per_byte} to a byte")
    low = (slots & ((1 << bits) - 1)).astype(np.uint8).reshape(-1, per_byte)
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(low << shifts, axis=1).astype(np.uint8).tobytes()


def unpack_bbit(data: bytes, bits: int, num_perm: int) -> np.ndarray:
    """Inverse of :func:`pack_bbit` (the low ``bits`` of each slot)."""
    if bits not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"bits must be one of 1, 2, 4, 8, 16, 32, got {bits}")
    if bits == 32:
        return np.frombuffer(data, dtype="<u4", count=num_perm).astype(np.uint32)
    if bits in (8, 16):
        return np.frombuffer(data, dtype=f"<u{bits // 8}", count=num_perm).astype(np.uint32)
    per_byte = 8 // bits
    raw = np.frombuffer(data, dtype=np.uint8, count=num_perm // per_byte)
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    return ((raw[:, None] >> shifts) & ((1 << bits) - 1)).reshape(-1).astype(np.uint32)


def jaccard_bbit(a: np.ndarray, b: np.ndarray, bits: int) -> float:
    """Unbiased Jaccard estimate from b-bit slots (Li and Koenig; Manasse's ``(m-32)/96``).

    Unrelated slots still agree by chance with probability ``2**-bits``, so the raw match
    rate ``m/K`` is corrected as ``(m/K - 2**-b) / (1 - 2**-b)``, clipped at 0.

    >>> jaccard_bbit(np.zeros(128, np.uint32), np.zeros(128, np.uint32), 2)
    1.0
    """
    _check_pair(a, b)
    rate = float(np.count_nonzero(a == b)) / a.shape[-1]
    chance = 2.0**-bits
    return max(0.0, (rate - chance) / (1.0 - chance))
