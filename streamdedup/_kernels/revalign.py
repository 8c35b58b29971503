"""The revision test's alignment of two token lists (hashes): common ends, changed blocks, excerpts.

The changed blocks are those of a longest common subsequence, found with Hyyrö's bit-parallel
algorithm and read back from its last cell (rapidfuzz's ``Indel.opcodes`` computes and reads the
same matrix, so both pick the same subsequence among the longest ones). Its cost is
``ceil(n / 64) * m`` word operations and as many words of memory for middles of ``n`` and ``m``
tokens; middles longer than ``MAX_ALIGN`` tokens are not aligned, which bounds a pair at
``47 * 3000`` word operations (~0.1 ms) whatever the texts. The changed blocks are each a
maximal run of tokens between two kept ones: ``(i1, i2, j1, j2)``.

Reference: :mod:`streamdedup.engine.revision_tokens` (``opcodes``, ``aligned``,
``common_prefix``, ``common_suffix``, ``inserted_at``) and ``revision_tokens.excerpted``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.hashing import fmix64
from streamdedup._kernels.revtext import same_run, slot_of, table_size
from streamdedup._kernels.revtypos import joined_equal

#: tokens a side (after the common head and tail) beyond which two texts are not aligned
MAX_ALIGN = 3000
#: excerpts: tokens a quoted run has at least, a left-out gap kept at most, places a pair of
#: words is looked up at each side of where the last run ended
KEPT_RUN = 3
SMALL_GAP = 4
RUN_STARTS = 16


@njit(cache=True)
def common_prefix(ha, a0, la, hb, b0, lb):
    """How many tokens ``ha[a0:la]`` and ``hb[b0:lb]`` start with in common."""
    n = min(la - a0, lb - b0)
    k = 0
    while k < n and ha[a0 + k] == hb[b0 + k]:
        k += 1
    return max(k, 0)


@njit(cache=True)
def common_suffix(ha, la, hb, lb, most):
    """How many tokens (at most ``most``) ``ha[:la]`` and ``hb[:lb]`` end with in common."""
    k = 0
    while k < most and ha[la - 1 - k] == hb[lb - 1 - k]:
        k += 1
    return max(k, 0)


@njit(cache=True)
def aligned(ha, a0, la, hb, b0, lb, blocks):
    """The changed blocks of ``ha[a0:la]`` and ``hb[b0:lb]`` (positions in ``ha``/``hb``) into
    ``blocks`` (rows of ``i1, i2, j1, j2``, at least ``min(la - a0, lb - b0) + 1`` rows); their
    count, or -1 when either side is longer than :data:`MAX_ALIGN` tokens."""
    if max(la - a0, lb - b0) > MAX_ALIGN:
        return -1
    lo = common_prefix(ha, a0, la, hb, b0, lb)
    a0 += lo
    b0 += lo
    hi = common_suffix(ha, la, hb, lb, min(la - a0, lb - b0))
    la -= hi
    lb -= hi
    if a0 == la and b0 == lb:
        return 0
    if a0 == la or b0 == lb:
        blocks[0, 0] = a0
        blocks[0, 1] = la
        blocks[0, 2] = b0
        blocks[0, 3] = lb
        return 1
    return _read_back(_lcs_rows(ha, a0, la, hb, b0, lb), a0, la, b0, lb, blocks)


@njit(cache=True)
def _lcs_rows(ha, a0, la, hb, b0, lb):
    """Hyyrö's bit vectors of ``ha[a0:la]`` after each token of ``hb[b0:lb]`` (a bit clear: that
    token of ``ha`` is in a longest common subsequence so far)."""
    n = la - a0
    words = (n + 63) >> 6
    # a dense id for each distinct token of the first side, its positions as a bit vector
    keys = np.zeros(table_size(n), dtype=np.uint64)
    ids = np.empty(keys.shape[0], dtype=np.int64)
    n_ids = 0
    for p in range(n):
        s = slot_of(keys, ha[a0 + p])
        if keys[s] == 0:
            keys[s] = ha[a0 + p]
            ids[s] = n_ids
            n_ids += 1
    pm = np.zeros((n_ids, words), dtype=np.uint64)
    for p in range(n):
        pm[ids[slot_of(keys, ha[a0 + p])], p >> 6] |= np.uint64(1) << np.uint64(p & 63)
    rows = np.empty((lb - b0, words), dtype=np.uint64)
    sv = np.empty(words, dtype=np.uint64)
    for w in range(words):
        sv[w] = ~np.uint64(0)
    for r in range(lb - b0):
        s = slot_of(keys, hb[b0 + r])
        row_id = ids[s] if keys[s] != 0 else -1
        carry = np.uint64(0)
        for w in range(words):
            x = sv[w]
            u = pm[row_id, w] & x if row_id >= 0 else np.uint64(0)
            # x + u (with the carry of the word below) | (x - u), where x - u never borrows
            t = x + carry
            c1 = np.uint64(1) if t < x else np.uint64(0)
            total = t + u
            carry = c1 | (np.uint64(1) if total < t else np.uint64(0))
            x = total | (x & ~u)
            sv[w] = x
            rows[r, w] = x
    return rows


@njit(cache=True, inline="always")
def _bit(rows, r, col):
    return (rows[r, col >> 6] >> np.uint64(col & 63)) & np.uint64(1)


@njit(cache=True)
def _read_back(rows, a0, la, b0, lb, blocks):
    """The blocks between the kept pairs, read back from the last cell in rapidfuzz's order (a
    deletion first, then an insertion, else a match)."""
    col = la - a0
    row = lb - b0
    n_blocks = 0
    end_i = la  # where the block being read ends
    end_j = lb
    while row != 0 and col != 0:
        if _bit(rows, row - 1, col - 1):
            col -= 1
            continue
        row -= 1
        if row != 0 and not _bit(rows, row - 1, col - 1):
            continue  # an insertion
        col -= 1
        i = a0 + col  # a kept pair
        j = b0 + row
        if i + 1 < end_i or j + 1 < end_j:
            blocks[n_blocks, 0] = i + 1
            blocks[n_blocks, 1] = end_i
            blocks[n_blocks, 2] = j + 1
            blocks[n_blocks, 3] = end_j
            n_blocks += 1
        end_i = i
        end_j = j
    if a0 < end_i or b0 < end_j:
        blocks[n_blocks, 0] = a0
        blocks[n_blocks, 1] = end_i
        blocks[n_blocks, 2] = b0
        blocks[n_blocks, 3] = end_j
        n_blocks += 1
    for k in range(n_blocks // 2):  # read backwards: put them in order
        for c in range(4):
            x = blocks[k, c]
            blocks[k, c] = blocks[n_blocks - 1 - k, c]
            blocks[n_blocks - 1 - k, c] = x
    return n_blocks


@njit(cache=True)
def inserted_at(ha, la, hb, lb, k):
    """Whether ``hb`` has tokens inserted at ``k``: the earlier text's next 6 tokens come later
    in ``hb`` (within 400) rather than replaced."""
    probe = 6
    if la - k < probe:
        return False
    for p in range(k + 1, min(lb - probe, k + 400) + 1):
        if same_run(hb, p, ha, k, probe):
            return True
    return False


@njit(cache=True, inline="always")
def _pair(h1, h2):
    return fmix64(h1 * np.uint64(0x9E3779B97F4A7C15) + h2) | np.uint64(1)


@njit(cache=True)
def excerpted(ca, tka, ha, la, cb, tkb, hb, lb):
    """The positions of ``ha[:la]`` that the excerpt ``hb[:lb]`` quotes, in its order
    (``revision_tokens.excerpted``): ``hb`` covered left to right by the longest runs of at least
    :data:`KEPT_RUN` tokens found anywhere in ``ha`` (a pair of words looked up at most
    ``2 * RUN_STARTS`` places, nearest where the last run ended), a gap of at most
    :data:`SMALL_GAP` tokens before a run kept, and the story's words that a few last words
    after the last run start (a teaser cut inside a word), with the next; all of ``ha`` when no
    run is found."""
    keys, ids, start, pos = _pair_places(ha, la, hb, lb)
    run_p, run_n, covered = _runs(ha, la, hb, lb, keys, ids, start, pos)
    if run_p.shape[0] == 0:
        keep = np.empty(la, dtype=np.int64)
        for p in range(la):
            keep[p] = p
        return keep
    # a few last words that start the story's words after the last run: a teaser cut inside a
    # word or a number keeps those and the story's next word
    last = run_p[-1] + run_n[-1]
    cut = lb - covered
    tail = 0
    if la - last > SMALL_GAP and 0 < cut <= SMALL_GAP and joined_equal(ca, tka, last, min(last + cut, la), cb, tkb, covered,
                                                                    lb, np.bool_(True)):
        tail = min(cut + 1, la - last)
    total = _kept(run_p, run_n, la, tail, np.empty(0, dtype=np.int64))
    keep = np.empty(total, dtype=np.int64)
    _kept(run_p, run_n, la, tail, keep)
    return keep


@njit(cache=True)
def _pair_places(ha, la, hb, lb):
    """The places in ``ha`` of the pairs of words ``hb`` has: a table of those pairs (``keys``,
    a dense id each in ``ids``), and by id the places in order, ``pos[start[id]:start[id + 1]]``
    (a counting sort: linear)."""
    keys = np.zeros(table_size(max(lb - 1, 1)), dtype=np.uint64)
    ids = np.empty(keys.shape[0], dtype=np.int64)
    n_ids = 0
    for j in range(lb - 1):
        h = _pair(hb[j], hb[j + 1])
        s = slot_of(keys, h)
        if keys[s] == 0:
            keys[s] = h
            ids[s] = n_ids
            n_ids += 1
    start = np.zeros(n_ids + 1, dtype=np.int64)
    at = np.empty(max(la - 1, 0), dtype=np.int64)
    for p in range(la - 1):
        s = slot_of(keys, _pair(ha[p], ha[p + 1]))
        at[p] = -1
        if keys[s] != 0:
            at[p] = ids[s]
            start[ids[s] + 1] += 1
    for i in range(n_ids):
        start[i + 1] += start[i]
    fill = start[:n_ids].copy()
    pos = np.empty(start[n_ids], dtype=np.int64)
    for p in range(la - 1):
        if at[p] >= 0:
            pos[fill[at[p]]] = p
            fill[at[p]] += 1
    return keys, ids, start, pos


@njit(cache=True)
def _runs(ha, la, hb, lb, keys, ids, start, pos):
    """The runs (start in ``ha``, length) that cover ``hb`` left to right. Work: at most
    ``2 * RUN_STARTS`` places a step, each run followed no further than the longest, which
    ``hb`` then skips: linear in ``lb``."""
    run_p = np.empty(lb, dtype=np.int64)
    run_n = np.empty(lb, dtype=np.int64)
    n_runs = 0
    j = 0
    end = 0  # where the last run ended in ha: a run that goes on from there wins a tie
    covered = 0  # and in hb
    while j < lb - 1:
        best = -1
        most = 0
        pid = ids[slot_of(keys, _pair(hb[j], hb[j + 1]))]
        lo, hi = start[pid], start[pid + 1]
        if hi - lo > 2 * RUN_STARTS:  # a common pair of words: its places nearest the last run
            k = lo
            top = hi
            while k < top:  # the first place at or after ``end``
                mid = (k + top) >> 1
                if pos[mid] < end:
                    k = mid + 1
                else:
                    top = mid
            lo, hi = max(lo, k - RUN_STARTS), min(hi, k + RUN_STARTS)
        for q in range(lo, hi):
            p = pos[q]
            if ha[p] != hb[j] or ha[p + 1] != hb[j + 1]:
                continue
            n = 2
            while j + n < lb and p + n < la and ha[p + n] == hb[j + n]:
                n += 1
            if n > most or n == most and abs(p - end) < abs(best - end):
                best = p
                most = n
        if most >= KEPT_RUN:
            run_p[n_runs] = best
            run_n[n_runs] = most
            n_runs += 1
            j += most
            end = best + most
            covered = j
        else:
            j += 1
    return run_p[:n_runs], run_n[:n_runs], covered


@njit(cache=True)
def _kept(run_p, run_n, la, tail, keep):
    """The positions the runs keep (into ``keep`` when it is long enough) and ``tail`` more
    after the last run, and their count."""
    k = 0
    last = 0
    write = keep.shape[0] > 0
    for r in range(run_p.shape[0]):
        p = run_p[r]
        lo = last if 0 <= p - last <= SMALL_GAP else p
        for q in range(lo, p + run_n[r]):
            if write:
                keep[k] = q
            k += 1
        last = p + run_n[r]
    stop = la if la - last <= SMALL_GAP else last + tail
    for q in range(last, stop):
        if write:
            keep[k] = q
        k += 1
    return k
