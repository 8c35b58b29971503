"""Numba kernels: the only place with per-byte loops.

All kernels take a batch as one concatenated ``uint8`` buffer plus ``int64`` offsets
(document i is ``buf[offsets[i]:offsets[i+1]]``), so no Python object is created per shingle or
per document. They trust their input (the wrappers in ``fingerprint.py`` and ``signature.py``
validate) and write into caller-supplied output arrays. Each kernel has a slow pure-Python
reference in ``tests/reference.py``; ``tests/unit/test_kernels.py`` drives both from one table.

Hashing: 64-bit arithmetic wraps modulo 2**64 (Numba uint64 semantics), finalised with the
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
#: base of the polynomial rolling hash for character shingles and LD-signature windows
ROLL_BASE = np.uint64(0x100000001B3)
EMPTY_SLOT = np.uint32(0xFFFFFFFF)

SPACE = np.uint8(32)


@njit(uint64(uint64), cache=True, inline="always")
def fmix64(h):
    h ^= h >> uint64(33)
    h *= M1
    h ^= h >> uint64(33)
    h *= M2
    h ^= h >> uint64(33)
    return h


@njit(cache=True, inline="always")
def _rotl(x, r):
    r = uint64(r) & uint64(63)
    if r == 0:
        return x
    return (x << r) | (x >> (uint64(64) - r))


@njit(cache=True, inline="always")
def _load64(buf, i, hi):
    """Little-endian 64-bit word from ``buf[i:min(i + 8, hi)]``, zero-padded."""
    v = uint64(0)
    end = i + 8 if i + 8 <= hi else hi
    for t in range(end - 1, i - 1, -1):
        v = (v << uint64(8)) | uint64(buf[t])
    return v


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
        k1 = _load64(buf, i, hi)
        k2 = _load64(buf, i + 8, hi)
        h1 ^= _rotl(k1 * c1, 31) * c2
        h1 = (_rotl(h1, 27) + h2) * uint64(5) + uint64(0x52DCE729)
        h2 ^= _rotl(k2 * c2, 33) * c1
        h2 = (_rotl(h2, 31) + h1) * uint64(5) + uint64(0x38495AB5)
        i += 16
    if i < hi:
        k1 = _load64(buf, i, hi)
        k2 = _load64(buf, i + 8, hi) if i + 8 < hi else uint64(0)
        h1 ^= _rotl(k1 * c1, 31) * c2
        h2 ^= _rotl(k2 * c2, 33) * c1
    h1 ^= uint64(hi - lo)
    h1 += h2
    h2 += h1
    h1 = fmix64(h1)
    h2 = fmix64(h2)
    h1 += h2
    h2 += h1
    out[0] = h1
    out[1] = h2


# --------------------------------------------------------------------------- canonical form


@njit(cache=True)
def canonical_ascii(buf, offsets, lower, punct, out, out_offsets):
    """Lower-case ASCII letters, turn punctuation into spaces, collapse whitespace, trim.

    Bytes >= 0x80 are copied unchanged (the wrapper only sends ASCII documents here; non-ASCII
    ones take the Unicode path in Python). ``out`` must be at least ``len(buf)`` long.
    """
    n_docs = offsets.shape[0] - 1
    pos = 0
    out_offsets[0] = 0
    for d in range(n_docs):
        pending_space = False
        start = pos
        for i in range(offsets[d], offsets[d + 1]):
            c = buf[i]
            # the ASCII characters Python's str.isspace() accepts
            is_space = c == 32 or (9 <= c <= 13) or (28 <= c <= 31)
            if punct and not is_space and c < 128:
                is_alnum = (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)
                if not is_alnum:
                    is_space = True
            if is_space:
                pending_space = pos > start
                continue
            if pending_space:
                out[pos] = SPACE
                pos += 1
                pending_space = False
            if lower and 65 <= c <= 90:
                c = c + 32
            out[pos] = c
            pos += 1
        out_offsets[d + 1] = pos


# --------------------------------------------------------------------------- shingles


@njit(cache=True)
def _word_hashes(buf, lo, hi, out):
    """Hash of each space-separated word of canonical text; returns the word count.

    Bytes are packed eight at a time into a 64-bit word (shift-or, one cycle) and only whole
    words go through a multiply, which halves the per-byte cost of byte-wise FNV-1a.
    """
    n = 0
    acc = uint64(0)
    h = FNV_OFFSET
    fill = 0
    in_word = False
    for i in range(lo, hi):
        c = buf[i]
        if c == 32:
            if in_word:
                out[n] = fmix64((h ^ acc) * FNV_PRIME + uint64(fill))
                n += 1
                in_word = False
            continue
        if not in_word:
            h = FNV_OFFSET
            acc = uint64(0)
            fill = 0
            in_word = True
        acc = (acc << uint64(8)) | uint64(c)
        fill += 1
        if fill == 8:
            h = (h ^ acc) * FNV_PRIME
            acc = uint64(0)
            fill = 0
    if in_word:
        out[n] = fmix64((h ^ acc) * FNV_PRIME + uint64(fill))
        n += 1
    return n


@njit(cache=True)
def shingle_hashes(buf, lo, hi, kind_word, size, scratch, out):
    """Hashes of the w-word (``kind_word``) or k-byte shingles of ``buf[lo:hi]``.

    A text shorter than one shingle yields a single shingle of the whole text, so short
    documents still have a fingerprint; an empty text yields none. Returns the shingle count.
    ``scratch`` and ``out`` need ``hi - lo + 1`` slots.
    """
    if hi <= lo:
        return 0
    if kind_word:
        nw = _word_hashes(buf, lo, hi, scratch)
        if nw == 0:
            return 0
        w = size if size < nw else nw
        # Rolling combination: H = XOR_j rotl(word_j, w-1-j). Sliding by one word is two
        # rotations and two XORs instead of w multiply-adds; fmix64 then breaks the linearity.
        h = uint64(0)
        for j in range(w):
            h = _rotl(h, 1) ^ scratch[j]
        out[0] = fmix64(h ^ uint64(w))
        n_sh = nw - w + 1
        for s in range(1, n_sh):
            h = _rotl(h, 1) ^ _rotl(scratch[s - 1], w) ^ scratch[s + w - 1]
            out[s] = fmix64(h ^ uint64(w))
        return n_sh
    # character (byte) k-shingles with a polynomial rolling hash
    length = hi - lo
    k = size if size < length else length
    top = uint64(1)
    for _ in range(k - 1):
        top *= ROLL_BASE
    h = uint64(0)
    for i in range(k):
        h = h * ROLL_BASE + uint64(buf[lo + i])
    out[0] = fmix64(h)
    n_sh = length - k + 1
    for s in range(1, n_sh):
        h = (h - uint64(buf[lo + s - 1]) * top) * ROLL_BASE + uint64(buf[lo + s + k - 1])
        out[s] = fmix64(h)
    return n_sh


# --------------------------------------------------------------------------- MinHash


@njit(cache=True)
def oph_minhash(hashes, n, num_perm, log2k, seed, out):
    """One-permutation hashing (Li, Owen, Zhang 2012) with optimal densification.

    A single hash per shingle picks its bin (top ``log2k`` bits) and its value (low 32 bits).
    Empty bins borrow the value of the first non-empty bin on a fixed pseudo-random probe
    sequence that depends only on the bin index (Shrivastava 2017), so two documents fill a
    given empty bin the same way and slot-wise equality still estimates Jaccard.
    """
    for j in range(num_perm):
        out[j] = EMPTY_SLOT
    if n == 0:
        return
    shift = uint64(64 - log2k)
    for i in range(n):
        h = fmix64(hashes[i] ^ seed)
        b = h >> shift
        v = np.uint32(h & uint64(0xFFFFFFFF))
        # EMPTY_SLOT is reserved as the "no value" marker.
        if v == EMPTY_SLOT:
            v = np.uint32(0xFFFFFFFE)
        if v < out[b]:
            out[b] = v
    mask = uint64(num_perm - 1)
    filled = out.copy()
    for j in range(num_perm):
        if filled[j] != EMPTY_SLOT:
            continue
        attempt = uint64(1)
        while True:
            probe = fmix64((uint64(j) << uint64(32)) ^ attempt ^ seed) & mask
            if filled[probe] != EMPTY_SLOT:
                out[j] = filled[probe]
                break
            attempt += uint64(1)


@njit(cache=True)
def classic_minhash(hashes, n, num_perm, seed, out):
    """K independent hash functions, the textbook MinHash; kept as a reference mode."""
    for j in range(num_perm):
        out[j] = EMPTY_SLOT
    for j in range(num_perm):
        salt = fmix64(seed + uint64(j + 1) * GOLDEN)
        best = EMPTY_SLOT
        for i in range(n):
            v = np.uint32(fmix64(hashes[i] ^ salt) & uint64(0xFFFFFFFF))
            if v == EMPTY_SLOT:
                v = np.uint32(0xFFFFFFFE)
            if v < best:
                best = v
        out[j] = best


@njit(cache=True)
def band_keys(slots, bands, rows, seed, out):
    """One 64-bit key per band; the band index is mixed in so bands never share keys."""
    for b in range(bands):
        h = fmix64(seed ^ (uint64(b + 1) * GOLDEN))
        for r in range(rows):
            h = fmix64(h ^ uint64(slots[b * rows + r]))
        out[b] = h


# --------------------------------------------------------------------------- LD signatures


@njit(cache=True)
def ld_signature(buf, lo, hi, n_hood, compression, coarse_c, residue, seed, alphabet, fine, coarse, counts):
    """Coates LD signature at two resolutions in one pass.

    Each N-byte window is hashed (polynomial rolling hash). Coates emits where
    ``h mod C == k``; we emit where the top 32 bits of ``(h ^ seed) * GOLDEN`` fall in the k-th
    of C equal sub-ranges. It is the same rule (a fixed 1/C of window hashes, chosen by k) without a
    64-bit division per byte, which cost about half the fingerprinting time. The coarse range
    (width 1/(C*F)) starts where the fine one does, so coarse positions are a subset of fine
    ones. The symbol is ``alphabet[fmix64(h ^ seed) mod 2**32 mod len(alphabet)]``, a function of
    the window (the coarse symbol uses the high 32 bits, so it differs from the fine one).
    Writes symbol counts to ``counts[0]`` (fine) and ``counts[1]`` (coarse).
    """
    nf = 0
    nc = 0
    length = hi - lo
    n_alpha = uint64(alphabet.shape[0])
    span = uint64(1) << uint64(32)
    fine_lo = uint64(residue) * span // uint64(compression)
    fine_w = span // uint64(compression)
    coarse_w = span // uint64(coarse_c)
    if length >= n_hood:
        top = uint64(1)
        for _ in range(n_hood - 1):
            top *= ROLL_BASE
        h = uint64(0)
        for i in range(n_hood):
            h = h * ROLL_BASE + uint64(buf[lo + i])
        for p in range(length - n_hood + 1):
            if p > 0:
                h = (h - uint64(buf[lo + p - 1]) * top) * ROLL_BASE + uint64(buf[lo + p + n_hood - 1])
            # Selection uses a multiplicative hash (top bits depend on every bit of h); the
            # full fmix64 runs only for the 1/C windows that emit, for their symbol.
            # Unsigned wrap-around makes the range test one comparison.
            u = (((h ^ seed) * GOLDEN) >> uint64(32)) - fine_lo
            if u < fine_w:
                m = fmix64(h ^ seed)
                fine[nf] = alphabet[(m & uint64(0xFFFFFFFF)) % n_alpha]
                nf += 1
                if u < coarse_w:
                    coarse[nc] = alphabet[(m >> uint64(32)) % n_alpha]
                    nc += 1
    counts[0] = nf
    counts[1] = nc


# --------------------------------------------------------------------------- the batch kernel


@njit(cache=True)
def fingerprint_batch(
    buf,
    offsets,
    kind_word,
    shingle_size,
    num_perm,
    log2k,
    classic,
    mh_seed,
    bands,
    rows,
    n_hood,
    compression,
    coarse_c,
    residue,
    sig_seed,
    alphabet,
    minhash_out,
    band_out,
    n_shingles_out,
    fine_buf,
    fine_offsets,
    coarse_buf,
    coarse_offsets,
    digest_out,
):
    """Shingles, MinHash, band keys and both LD signatures for every document of a batch.

    ``fine_buf`` and ``coarse_buf`` are sized ``len(buf)`` by the wrapper: a text of L bytes
    emits at most L - N + 1 symbols, so they can never overflow.
    """
    n_docs = offsets.shape[0] - 1
    max_len = 1
    for d in range(n_docs):
        ln = offsets[d + 1] - offsets[d]
        if ln > max_len:
            max_len = ln
    scratch = np.empty(max_len + 1, dtype=np.uint64)
    hashes = np.empty(max_len + 1, dtype=np.uint64)
    counts = np.zeros(2, dtype=np.int64)
    fine_offsets[0] = 0
    coarse_offsets[0] = 0
    for d in range(n_docs):
        lo = offsets[d]
        hi = offsets[d + 1]
        digest128(buf, lo, hi, digest_out[d])
        n = shingle_hashes(buf, lo, hi, kind_word, shingle_size, scratch, hashes)
        n_shingles_out[d] = n
        if classic:
            classic_minhash(hashes, n, num_perm, mh_seed, minhash_out[d])
        else:
            oph_minhash(hashes, n, num_perm, log2k, mh_seed, minhash_out[d])
        band_keys(minhash_out[d], bands, rows, mh_seed, band_out[d])
        fo = fine_offsets[d]
        co = coarse_offsets[d]
        ld_signature(
            buf, lo, hi, n_hood, compression, coarse_c, residue, sig_seed, alphabet,
            fine_buf[fo:], coarse_buf[co:], counts,
        )
        fine_offsets[d + 1] = fo + counts[0]
        coarse_offsets[d + 1] = co + counts[1]


# --------------------------------------------------------------------------- edit distance


@njit(cache=True)
def levenshtein_bounded(a, b, bound):
    """Levenshtein distance of two byte arrays, or ``bound + 1`` once it must exceed ``bound``.

    Ukkonen's cut-off: only cells within ``bound`` of the diagonal can hold values <= bound,
    and the scan stops as soon as a whole row of the band exceeds it. O(bound * len).
    """
    n = a.shape[0]
    m = b.shape[0]
    if n > m:
        a, b = b, a
        n, m = m, n
    if m - n > bound:
        return bound + 1
    if n == 0:
        return m
    big = bound + 1
    prev = np.empty(m + 1, dtype=np.int64)
    cur = np.empty(m + 1, dtype=np.int64)
    for j in range(m + 1):
        prev[j] = j if j <= bound else big
    for i in range(1, n + 1):
        j_lo = i - bound
        if j_lo < 1:
            j_lo = 1
        j_hi = i + bound
        if j_hi > m:
            j_hi = m
        cur[j_lo - 1] = i if (j_lo - 1 == 0 and i <= bound) else big
        row_min = cur[j_lo - 1]
        ai = a[i - 1]
        for j in range(j_lo, j_hi + 1):
            cost = 0 if ai == b[j - 1] else 1
            v = prev[j - 1] + cost
            d = prev[j] + 1
            if d < v:
                v = d
            ins = cur[j - 1] + 1
            if ins < v:
                v = ins
            if v > big:
                v = big
            cur[j] = v
            if v < row_min:
                row_min = v
        if j_hi < m:
            cur[j_hi + 1] = big
        if row_min > bound:
            return big
        prev, cur = cur, prev
    res = prev[m]
    return res if res <= bound else big


@njit(cache=True)
def semi_global(a, b):
    """Best edit distance of ``a`` against any substring of ``b`` (free end gaps in ``b``).

    Returns ``(distance, start, end)`` with ``b[start:end]`` the best-matching region: the
    embedding test of seed 001 (a text contained in another keeps its signature except at the
    ends). O(len(a) * len(b)); signatures are short.
    """
    n = a.shape[0]
    m = b.shape[0]
    prev = np.zeros(m + 1, dtype=np.int64)
    cur = np.zeros(m + 1, dtype=np.int64)
    start_prev = np.arange(m + 1).astype(np.int64)
    start_cur = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        cur[0] = i
        start_cur[0] = 0
        ai = a[i - 1]
        for j in range(1, m + 1):
            cost = 0 if ai == b[j - 1] else 1
            v = prev[j - 1] + cost
            s = start_prev[j - 1]
            d = prev[j] + 1
            if d < v:
                v = d
                s = start_prev[j]
            ins = cur[j - 1] + 1
            if ins < v:
                v = ins
                s = start_cur[j - 1]
            cur[j] = v
            start_cur[j] = s
        prev, cur = cur, prev
        start_prev, start_cur = start_cur, start_prev
    best = prev[0]
    end = 0
    for j in range(1, m + 1):
        if prev[j] < best:
            best = prev[j]
            end = j
    return best, start_prev[end], end


@njit(cache=True)
def edit_runs(a, b, merge_gap, runs_out):
    """Levenshtein alignment of two signatures, summarised as runs of consecutive edits.

    Fills ``runs_out`` with the edit count of each run (runs separated by at most
    ``merge_gap`` matching symbols are merged, since a replaced block still matches a few
    symbols by chance) and returns ``(distance, n_runs)``. Full O(len(a) * len(b)) DP with
    traceback; ``runs_out`` needs ``len(a) + len(b)`` slots.
    """
    n = a.shape[0]
    m = b.shape[0]
    dp = np.empty((n + 1, m + 1), dtype=np.int32)
    for j in range(m + 1):
        dp[0, j] = j
    for i in range(1, n + 1):
        dp[i, 0] = i
        ai = a[i - 1]
        for j in range(1, m + 1):
            v = dp[i - 1, j - 1] + (0 if ai == b[j - 1] else 1)
            d = dp[i - 1, j] + 1
            if d < v:
                v = d
            ins = dp[i, j - 1] + 1
            if ins < v:
                v = ins
            dp[i, j] = v
    # Walk back from the end; an edit starts or extends the current run, a match ends it
    # unless the next edit comes within merge_gap matches.
    i = n
    j = m
    n_runs = 0
    cur = 0
    gap = 0
    while i > 0 or j > 0:
        if i > 0 and j > 0 and a[i - 1] == b[j - 1] and dp[i, j] == dp[i - 1, j - 1]:
            i -= 1
            j -= 1
            if cur > 0:
                gap += 1
                if gap > merge_gap:
                    runs_out[n_runs] = cur
                    n_runs += 1
                    cur = 0
                    gap = 0
            continue
        if i > 0 and j > 0 and dp[i, j] == dp[i - 1, j - 1] + 1:
            i -= 1
            j -= 1
        elif i > 0 and dp[i, j] == dp[i - 1, j] + 1:
            i -= 1
        else:
            j -= 1
        cur += 1
        gap = 0
    if cur > 0:
        runs_out[n_runs] = cur
        n_runs += 1
    return dp[n, m], n_runs
