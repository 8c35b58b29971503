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
    if i + 8 <= hi:
        # unrolled: the loop below does not vectorise and cost 0.9 ns/byte
        return (uint64(buf[i]) | (uint64(buf[i + 1]) << uint64(8)) | (uint64(buf[i + 2]) << uint64(16))
                | (uint64(buf[i + 3]) << uint64(24)) | (uint64(buf[i + 4]) << uint64(32))
                | (uint64(buf[i + 5]) << uint64(40)) | (uint64(buf[i + 6]) << uint64(48))
                | (uint64(buf[i + 7]) << uint64(56)))
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


# --------------------------------------------------------------------------- shingles


@njit(cache=True)
def combine_words(words, nw, size, out):
    """Hashes of the w-word shingles from the word hashes; returns the shingle count.

    A text with fewer than w words is one shingle of all its words, so short documents still
    have a fingerprint. Rolling combination: H = XOR_j rotl(word_j, w-1-j); sliding by one word
    is two rotations and two XORs instead of w multiply-adds, and fmix64 breaks the linearity.
    """
    if nw == 0:
        return 0
    w = size if size < nw else nw
    h = uint64(0)
    for j in range(w):
        h = _rotl(h, 1) ^ words[j]
    out[0] = fmix64(h ^ uint64(w))
    n_sh = nw - w + 1
    for s in range(1, n_sh):
        h = _rotl(h, 1) ^ _rotl(words[s - 1], w) ^ words[s + w - 1]
        out[s] = fmix64(h ^ uint64(w))
    return n_sh


@njit(cache=True)
def char_shingles(buf, lo, hi, size, out):
    """Hashes of the k-byte shingles of ``buf[lo:hi]`` (polynomial rolling hash, fmix64)."""
    length = hi - lo
    if length <= 0:
        return 0
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


# --------------------------------------------------------------------------- the batch kernel


def canonical_byte_map(lower: bool, punct: bool) -> np.ndarray:
    """What each byte becomes in canonical text: itself, lower-cased, or a space.

    Spaces are the ASCII characters ``str.isspace()`` accepts; with ``punct`` every other
    ASCII non-alphanumeric is one too. Bytes >= 0x80 pass through. A table lookup replaces a
    chain of data-dependent comparisons per byte.
    """
    table = np.arange(256, dtype=np.uint8)
    for c in range(128):
        ch = chr(c)
        if ch.isspace() or (punct and not ch.isalnum()):
            table[c] = 32
        elif lower and "A" <= ch <= "Z":
            table[c] = c + 32
    return table


@njit(cache=True, inline="always")
def _canonicalise(raw, lo, hi, cmap, canon, pos):
    """Map ``raw[lo:hi]`` through ``cmap`` into ``canon[pos:]``, collapsing and trimming spaces.

    Branch-free: every byte is written and the write position advances unless the byte is a
    space following a space (or the start). Word boundaries are unpredictable, and the
    branchy version of this loop spent half its time in mispredictions (2.7 vs 1.3 ns/byte).
    Returns the new end position.
    """
    start = pos
    prev_space = True
    for i in range(lo, hi):
        c = cmap[raw[i]]
        is_space = c == 32
        canon[pos] = c
        keep = not (is_space and prev_space)
        pos += 1 if keep else 0
        prev_space = is_space or (prev_space and not keep)
    if pos > start and canon[pos - 1] == 32:
        pos -= 1
    return pos


@njit(cache=True, inline="always")
def _words_and_signature(canon, lo, hi, n_hood, fine_lo, fine_w, coarse_w, sig_seed, alphabet,
                         words, fine, nf, coarse, nc, counts):
    """Word hashes and LD-signature symbols of canonical text in one pass.

    Two independent dependency chains per byte (word hash, window) overlap in the CPU.
    Word hash: bytes are packed eight at a time (shift-or) and only whole 8-byte chunks go
    through an FNV multiply. Window: the last N <= 8 bytes as one big-endian integer (exact:
    no window-hash collisions). Coates emits where ``h mod C == k``; we emit where the top 32
    bits of ``(window ^ seed) * GOLDEN`` fall in the k-th of C equal sub-ranges: the same rule
    (a fixed 1/C of windows, chosen by k) without a division per byte. The coarse range
    (width 1/(C*F)) starts where the fine one does, so coarse positions are a subset of fine
    ones. Symbols come from ``fmix64(window ^ seed)``: low half fine, high half coarse, each
    mapped onto the alphabet by ``(x * len(alphabet)) >> 32``.
    Writes the word count, fine end and coarse end to ``counts``.
    """
    n_alpha = uint64(alphabet.shape[0])
    win_mask = (uint64(1) << uint64(8 * n_hood)) - uint64(1) if n_hood < 8 else ~uint64(0)
    nw = 0
    acc = uint64(0)
    wh = FNV_OFFSET
    fill = 0
    win = uint64(0)
    for p in range(lo, hi):
        c = uint64(canon[p])
        if c == uint64(32):
            words[nw] = fmix64((wh ^ acc) * FNV_PRIME + uint64(fill))
            nw += 1
            wh = FNV_OFFSET
            acc = uint64(0)
            fill = 0
        else:
            acc = (acc << uint64(8)) | c
            fill += 1
            if fill == 8:
                wh = (wh ^ acc) * FNV_PRIME
                acc = uint64(0)
                fill = 0
        win = ((win << uint64(8)) | c) & win_mask
        if p - lo >= n_hood - 1:
            u = (((win ^ sig_seed) * GOLDEN) >> uint64(32)) - fine_lo
            if u < fine_w:
                m = fmix64(win ^ sig_seed)
                # multiply-shift maps 32 bits onto the alphabet without a division
                fine[nf] = alphabet[((m & uint64(0xFFFFFFFF)) * n_alpha) >> uint64(32)]
                nf += 1
                if u < coarse_w:
                    coarse[nc] = alphabet[((m >> uint64(32)) * n_alpha) >> uint64(32)]
                    nc += 1
    if hi > lo:
        words[nw] = fmix64((wh ^ acc) * FNV_PRIME + uint64(fill))
        nw += 1
    counts[0] = nw
    counts[1] = nf
    counts[2] = nc


@njit(cache=True)
def fingerprint_batch(
    raw, offsets, cmap,
    kind_word, shingle_size,
    num_perm, log2k, classic, mh_seed, bands, rows,
    n_hood, compression, coarse_c, residue, sig_seed, alphabet,
    canon, canon_offsets, minhash_out, band_out, n_shingles_out,
    fine_buf, fine_offsets, coarse_buf, coarse_offsets, digest_out,
):
    """Canonical form, digest, shingles, MinHash, band keys and LD signatures of a batch.

    Per document: canonicalise the raw bytes through ``cmap`` (:func:`canonical_byte_map`;
    bytes >= 0x80 pass through, as the wrapper canonicalises non-ASCII texts in Python
    first), then one pass over the canonical bytes for word hashes and signature symbols
    while they are in L1 cache, then digest, shingles, MinHash and band keys.

    Output buffers are sized ``len(raw)`` (+1) by the wrapper: canonical text is never longer
    than the raw text, and a text of L bytes emits at most L symbols.
    """
    n_docs = offsets.shape[0] - 1
    max_len = 1
    for d in range(n_docs):
        ln = offsets[d + 1] - offsets[d]
        if ln > max_len:
            max_len = ln
    words = np.empty(max_len + 1, dtype=np.uint64)
    hashes = np.empty(max_len + 1, dtype=np.uint64)
    counts = np.zeros(3, dtype=np.int64)
    span = uint64(1) << uint64(32)
    fine_lo = uint64(residue) * span // uint64(compression)
    fine_w = span // uint64(compression)
    coarse_w = span // uint64(coarse_c)
    pos = 0
    canon_offsets[0] = 0
    fine_offsets[0] = 0
    coarse_offsets[0] = 0
    for d in range(n_docs):
        start = pos
        pos = _canonicalise(raw, offsets[d], offsets[d + 1], cmap, canon, pos)
        canon_offsets[d + 1] = pos
        _words_and_signature(canon, start, pos, n_hood, fine_lo, fine_w, coarse_w, sig_seed, alphabet,
                             words, fine_buf, fine_offsets[d], coarse_buf, coarse_offsets[d], counts)
        fine_offsets[d + 1] = counts[1]
        coarse_offsets[d + 1] = counts[2]
        digest128(canon, start, pos, digest_out[d])
        if kind_word:
            n = combine_words(words, counts[0], shingle_size, hashes)
        else:
            n = char_shingles(canon, start, pos, shingle_size, hashes)
        n_shingles_out[d] = n
        if classic:
            classic_minhash(hashes, n, num_perm, mh_seed, minhash_out[d])
        else:
            oph_minhash(hashes, n, num_perm, log2k, mh_seed, minhash_out[d])
        band_keys(minhash_out[d], bands, rows, mh_seed, band_out[d])


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
