"""Edit distances on LD signatures (short byte strings)."""

from __future__ import annotations

import numpy as np
from numba import njit

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
    embedding test of Coates' Levenshtein estimates (a text contained in another keeps its signature except at the
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


# ------------------------------------------------- bit-parallel alignment (Myers, Hyyro)
#
# The verification aligns signatures of up to MAX_SIGNATURE_SYMBOLS (4096) symbols: a 20-50 KB
# page has ~2,000, and a full O(n*m) DP over them took 6-9 ms per alignment (one pair of
# near-duplicate pages: two alignments). Myers' bit-vector algorithm (J. ACM 1999), in Hyyro's
# multi-word form, computes the same DP matrix a column at a time as vertical deltas packed 64
# rows to a word: O(m * ceil(n / 64)) word operations, the same distances (and, with the deltas
# kept, the same traceback) as the cell-by-cell DP, no approximation.

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _match_masks(a, words):
    """peq[s, w]: bit r of word w set where a[64 * w + r] == s."""
    peq = np.empty((256, words), dtype=np.uint64)
    for s in range(256):
        for w in range(words):
            peq[s, w] = _ZERO
    for i in range(a.shape[0]):
        peq[a[i], i >> 6] |= _ONE << np.uint64(i & 63)
    return peq


@njit(cache=True, inline="always")
def _start_deltas(words):
    """Column 0's vertical deltas: all +1 (``vp``), none -1 (``vn``). Filled by loops on empty
    arrays: ``np.full`` and ``np.zeros`` would each compile their own implementation into
    every cold start (~0.3 s with their helpers)."""
    vp = np.empty(words, dtype=np.uint64)
    vn = np.empty(words, dtype=np.uint64)
    for w in range(words):
        vp[w] = _ALL
        vn[w] = _ZERO
    return vp, vn


@njit(cache=True, inline="always")
def _column(peq_c, vp, vn, top_hp, d0_out):
    """Advance the vertical deltas ``vp``/``vn`` (dp[i,j] - dp[i-1,j] = +1 / -1) by one column.

    ``top_hp`` is the row-0 horizontal delta (1: dp[0,j] = j, global; 0: dp[0,j] = 0, free
    start). Writes D0 (bit set where dp[i,j] == dp[i-1,j-1]) into ``d0_out`` and returns the
    bottom word's horizontal deltas (hp, hn) before the shift.
    """
    add_carry = _ZERO
    hp_carry = top_hp
    hn_carry = _ZERO
    hp = _ZERO
    hn = _ZERO
    for w in range(vp.shape[0]):
        x = peq_c[w] | vn[w]
        v = vp[w]
        t = x & v
        s1 = t + v
        s = s1 + add_carry
        add_carry = _ONE if (s1 < t or s < s1) else _ZERO
        d0 = (s ^ v) | x
        hn = v & d0
        hp = vn[w] | ~(v | d0)
        hp_s = (hp << _ONE) | hp_carry
        hn_s = (hn << _ONE) | hn_carry
        hp_carry = hp >> np.uint64(63)
        hn_carry = hn >> np.uint64(63)
        vn[w] = hp_s & d0
        vp[w] = hn_s | ~(hp_s | d0)
        d0_out[w] = d0
    return hp, hn


@njit(cache=True)
def semi_global_distance(a, b):
    """The distance of :func:`semi_global` (best edit distance of ``a`` against any substring of
    ``b``), bit-parallel: O(len(b) * ceil(len(a) / 64)). What the verification's embedding test
    reads; :func:`semi_global` also finds the region (explain)."""
    n = a.shape[0]
    m = b.shape[0]
    if n == 0:
        return 0
    words = (n + 63) >> 6
    peq = _match_masks(a, words)
    vp, vn = _start_deltas(words)
    d0 = np.empty(words, dtype=np.uint64)
    last = np.uint64((n - 1) & 63)
    score = n
    best = n
    for j in range(m):
        hp, hn = _column(peq[b[j]], vp, vn, _ZERO, d0)
        score += np.int64((hp >> last) & _ONE) - np.int64((hn >> last) & _ONE)
        if score < best:
            best = score
    return best


@njit(cache=True)
def edit_runs(a, b, merge_gap, runs_out):
    """Levenshtein alignment of two signatures, summarised as runs of consecutive edits.

    Fills ``runs_out`` with the edit count of each run (runs separated by at most
    ``merge_gap`` matching symbols are merged, since a replaced block still matches a few
    symbols by chance) and returns ``(distance, n_runs)``; ``runs_out`` needs
    ``len(a) + len(b)`` slots. The DP matrix is kept as each column's D0 and vertical +1
    bits (bit-parallel, see above); the traceback reads them and takes the steps the
    cell-by-cell DP's traceback takes (match, substitution, deletion, insertion, in that order
    of preference), so the runs are that DP's (``edit_runs_ref`` in the tests).
    """
    n = a.shape[0]
    m = b.shape[0]
    words = (n + 63) >> 6
    # column j's bits at [j - 1]: d0 (dp[i,j] == dp[i-1,j-1]) and vp (dp[i,j] == dp[i-1,j] + 1)
    d0s = np.empty((m, words), dtype=np.uint64)
    vps = np.empty((m, words), dtype=np.uint64)
    dist = m
    if n > 0:
        peq = _match_masks(a, words)
        vp, vn = _start_deltas(words)
        last = np.uint64((n - 1) & 63)
        dist = n
        for j in range(m):
            hp, hn = _column(peq[b[j]], vp, vn, _ONE, d0s[j])
            dist += np.int64((hp >> last) & _ONE) - np.int64((hn >> last) & _ONE)
            for w in range(words):  # not a slice assignment: see _kernels/__init__, Compile time
                vps[j, w] = vp[w]
    # Walk back from the end; an edit starts or extends the current run, a match ends it
    # unless the next edit comes within merge_gap matches.
    i = n
    j = m
    n_runs = 0
    cur = 0
    gap = 0
    while i > 0 or j > 0:
        if i > 0 and j > 0:
            w = (i - 1) >> 6
            bit = np.uint64((i - 1) & 63)
            diag_same = (d0s[j - 1, w] >> bit) & _ONE == _ONE
            if diag_same and a[i - 1] == b[j - 1]:
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
            if not diag_same:
                i -= 1
                j -= 1
            elif (vps[j - 1, w] >> bit) & _ONE == _ONE:
                i -= 1
            else:
                j -= 1
        elif i > 0:
            i -= 1
        else:
            j -= 1
        cur += 1
        gap = 0
    if cur > 0:
        runs_out[n_runs] = cur
        n_runs += 1
    return dist, n_runs
