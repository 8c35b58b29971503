"""Exact character evidence for a pair the sketches cannot settle (issue 11).

A copy with 2-3% character noise keeps a byte 8-gram Jaccard of 0.6-0.75 with its original
while its word 5-shingle Jaccard falls to 0.1-0.4, where templates and shared footers sit too
(earnings tables of two companies, a Treasury balance of two days): the signature aligns those
as well as the noise copy, so ``verify.ld_min_jaccard`` keeps the LD estimate from deciding
alone. What separates them is *where* the texts differ: in numbers and names for templates,
anywhere for noise. Both show in the exact 8-gram sets: the template siblings' Jaccard rises
when every digit is read as ``0`` (their difference is made of digits), the noise copy's
barely moves. A 64-slot sketch's error (+-0.06) is as wide as that gap, so this is exact:
``benchmarks/noise_verification.py`` measured the rule on every proposed pair of both suites.

The grams are the 8 bytes themselves (one uint64, no hash: exact), kept in an open-addressing
table sized for both texts. Reference: ``gram_jaccards_ref`` in ``tests/reference.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import fmix64

GRAM = 8
# table states
_EMPTY = 0
_IN_A = 1
_IN_B = 2
_IN_BOTH = 3


@njit(cache=True, inline="always")
def _gram(text, p, fold):
    """The 8 bytes at ``p`` as one little-endian word, digits read as ``0`` with ``fold``."""
    g = np.uint64(0)
    for k in range(GRAM):
        c = text[p + k]
        if fold and 48 <= c <= 57:
            c = 48
        g |= np.uint64(c) << np.uint64(8 * k)
    return g


@njit(cache=True)
def _jaccard(a, b, fold, keys, states):
    """Exact Jaccard of the distinct 8-gram sets of ``a`` and ``b`` (tables cleared here)."""
    size = keys.shape[0]
    mask = np.uint64(size - 1)
    for k in range(size):
        states[k] = _EMPTY
    n_a = 0
    for p in range(a.shape[0] - GRAM + 1):
        g = _gram(a, p, fold)
        h = fmix64(g) & mask
        while states[h] != _EMPTY and keys[h] != g:
            h = (h + np.uint64(1)) & mask
        if states[h] == _EMPTY:
            keys[h] = g
            states[h] = _IN_A
            n_a += 1
    n_b = 0
    both = 0
    for p in range(b.shape[0] - GRAM + 1):
        g = _gram(b, p, fold)
        h = fmix64(g) & mask
        while states[h] != _EMPTY and keys[h] != g:
            h = (h + np.uint64(1)) & mask
        s = states[h]
        if s == _EMPTY:
            keys[h] = g
            states[h] = _IN_B
            n_b += 1
        elif s == _IN_A:
            states[h] = _IN_BOTH
            n_b += 1
            both += 1
    union = n_a + n_b - both
    return both / union if union > 0 else 0.0


@njit(cache=True)
def gram_jaccards(a, b, keys, states):
    """(plain, digit-folded) exact Jaccard of the byte 8-gram sets of ``a`` and ``b``.

    ``keys`` (uint64) and ``states`` (uint8) are a table of a power-of-two size of at least
    twice ``len(a) + len(b)`` (:func:`table_size`). A text shorter than 8 bytes has no gram:
    the pair scores 1.0 when both texts are equal, else 0.0.
    """
    if a.shape[0] < GRAM or b.shape[0] < GRAM:
        same = a.shape[0] == b.shape[0]
        if same:
            for k in range(a.shape[0]):
                if a[k] != b[k]:
                    same = False
                    break
        v = 1.0 if same else 0.0
        return v, v
    return _jaccard(a, b, np.bool_(False), keys, states), _jaccard(a, b, np.bool_(True), keys, states)


def table_size(len_a: int, len_b: int) -> int:
    """The table :func:`gram_jaccards` needs for texts of these lengths (load <= 1/2)."""
    need = 2 * (len_a + len_b) + 2
    return 1 << max(4, (need - 1).bit_length())
