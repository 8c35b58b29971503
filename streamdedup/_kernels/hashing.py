"""Hash building blocks shared by the kernels.

64-bit arithmetic wraps modulo 2**64 (Numba uint64 semantics), finalised with the
MurmurHash3 ``fmix64`` mixer so that low and high bits are both usable.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

# Odd 64-bit constants (golden ratio and MurmurHash3 finaliser multipliers).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xFF51AFD7ED558CCD)
M2 = np.uint64(0xC4CEB9FE1A85EC53)
FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
#: base of the polynomial rolling hash for character shingles
ROLL_BASE = np.uint64(0x100000001B3)
EMPTY_SLOT = np.uint32(0xFFFFFFFF)


@njit(uint64(uint64), cache=True, inline="always")
def fmix64(h):
    h ^= h >> uint64(33)
    h *= M1
    h ^= h >> uint64(33)
    h *= M2
    h ^= h >> uint64(33)
    return h


@njit(cache=True, inline="always")
def rotl(x, r):
    r = uint64(r) & uint64(63)
    if r == 0:
        return x
    return (x << r) | (x >> (uint64(64) - r))


@njit(cache=True, inline="always")
def load64(buf, i, hi):
    """Little-endian 64-bit word from ``buf[i:min(i + 8, hi)]``, zero-padded (``i >= 0``).

    Indexed unsigned: a signed index costs a negative-index select per byte, and those kept
    LLVM from merging the eight byte loads into one (digest128: 0.57 -> 0.20 us per Reuters story).
    """
    j = uint64(i)
    if i + 8 <= hi:
        # unrolled: the loop below does not vectorise and cost 0.9 ns/byte
        return (uint64(buf[j]) | (uint64(buf[j + uint64(1)]) << uint64(8)) | (uint64(buf[j + uint64(2)]) << uint64(16))
                | (uint64(buf[j + uint64(3)]) << uint64(24)) | (uint64(buf[j + uint64(4)]) << uint64(32))
                | (uint64(buf[j + uint64(5)]) << uint64(40)) | (uint64(buf[j + uint64(6)]) << uint64(48))
                | (uint64(buf[j + uint64(7)]) << uint64(56)))
    v = uint64(0)
    end = i + 8 if i + 8 <= hi else hi
    for t in range(end - 1, i - 1, -1):
        v = (v << uint64(8)) | uint64(buf[uint64(t)])
    return v


@njit(uint64(uint64, uint64), cache=True)
def _rot(x, r):
    """``rotl`` by a constant 0 < r < 64, compiled once for digest128 (``rotl`` inlined at its
    eight call sites there cost ~0.4 s of every cold start; LLVM still inlines this call)."""
    return (x << r) | (x >> (uint64(64) - r))


@njit(cache=True)
def digest128(buf, lo, hi, out):
    """128-bit digest of ``buf[lo:hi]`` into ``out[0:2]`` (MurmurHash3 x64-128 structure).

    Not cryptographic: it identifies canonical texts that are byte-for-byte equal, where a
    collision needs about 2**64 distinct texts. Computed here because BLAKE2 from Python cost
    2.5 us per document, an eighth of the whole fingerprint.
    """
    h1 = uint64(0x243F6A8885A308D3)
    h2 = uint64(0x13198A2E03707344) ^ uint64(hi - lo)
    c1 = uint64(0x87C37B91114253D5)
    c2 = uint64(0x4CF5AD432745937F)
    i = lo
    while i + 16 <= hi:
        k1 = load64(buf, i, hi)
        k2 = load64(buf, i + 8, hi)
        h1 ^= _rot(k1 * c1, 31) * c2
        h1 = (_rot(h1, 27) + h2) * uint64(5) + uint64(0x52DCE729)
        h2 ^= _rot(k2 * c2, 33) * c1
        h2 = (_rot(h2, 31) + h1) * uint64(5) + uint64(0x38495AB5)
        i += 16
    if i < hi:
        k1 = load64(buf, i, hi)
        k2 = load64(buf, i + 8, hi) if i + 8 < hi else uint64(0)
        h1 ^= _rot(k1 * c1, 31) * c2
        h2 ^= _rot(k2 * c2, 33) * c1
    h1 ^= uint64(hi - lo)
    h1 += h2
    h2 += h1
    h1 = fmix64(h1)
    h2 = fmix64(h2)
    h1 += h2
    h2 += h1
    out[0] = h1
    out[1] = h2


@njit(cache=True, inline="always")
def _sip_round(v0, v1, v2, v3):
    v0 += v1
    v1 = _rot(v1, uint64(13)) ^ v0
    v0 = _rot(v0, uint64(32))
    v2 += v3
    v3 = _rot(v3, uint64(16)) ^ v2
    v0 += v3
    v3 = _rot(v3, uint64(21)) ^ v0
    v2 += v1
    v1 = _rot(v1, uint64(17)) ^ v2
    v2 = _rot(v2, uint64(32))
    return v0, v1, v2, v3


@njit(uint64(uint64, uint64, uint64), cache=True)
def siphash64(k0, k1, m):
    """SipHash-2-4 of the 8-byte little-endian message ``m`` under the key ``(k0, k1)``: a keyed
    hash (a pseudo-random function) for ``fingerprint.secret``. Someone without the key can
    neither compute it for a guessed text nor recover the key from what it outputs, which the
    seeded mixers here do not promise (``fmix64`` is invertible)."""
    v0 = k0 ^ uint64(0x736F6D6570736575)
    v1 = k1 ^ uint64(0x646F72616E646F6D)
    v2 = k0 ^ uint64(0x6C7967656E657261)
    v3 = k1 ^ uint64(0x7465646279746573) ^ m
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0 ^= m
    b = uint64(8) << uint64(56)
    v3 ^= b
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0 ^= b
    v2 ^= uint64(0xFF)
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


@njit(cache=True, inline="always")
def key_all(values, n, k0, k1):
    """``values[:n]`` through :func:`siphash64` under ``(k0, k1)``, in place."""
    for i in range(n):
        values[i] = siphash64(k0, k1, values[i])
