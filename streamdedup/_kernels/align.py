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
