"""The revision test of one linked pair, compiled: what changed between two canonical texts.

:func:`revision` runs the whole test of :func:`streamdedup.engine.revisions.detect` (its
docstring gives the rules) on the two texts' UTF-8 bytes: tokens (:mod:`.revtext`), the excerpt
cut, the common ends and the changed blocks (:mod:`.revalign`), each word's count change, and
the reading of every changed block (:mod:`.revblocks`), with no Python object per token. What
it found leaves as items of code points, kinds as bits and a typo count (:mod:`.revitems`).

Cost bound: a pair longer than ``revwindow.MAX_READ`` bytes a text is read in a window of at
most that many bytes of each, and every step is linear in the tokens read but three. The
alignment is bounded by ``revalign.MAX_ALIGN`` (a pair whose middle is longer is read for its
markers only), the blocks read by :data:`MAX_BLOCKS`, and the damaged-twin search by the
``work`` budget (:mod:`.revtypos`); a pair that reaches any bound is flagged partial.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.revalign import MAX_ALIGN, aligned, common_prefix, common_suffix, excerpted, inserted_at
from streamdedup._kernels.revblocks import body_block, cut_here, head_block, in_date
from streamdedup._kernels.revitems import (K_MARKER, MAX_ITEMS, PENDING, ROW, S_BUDGET, S_ITEMS, S_KINDS, S_PARTIAL,
                                           S_STRONG, S_TYPOS, S_WORK, STATE, add, settle, write_span)
from streamdedup._kernels.revtext import (C_DIGITS, C_HEAD_MARKER, C_NUMBER, C_STRONG, OSA_MAX, decode_utf8, has,
                                          ascii_space, hash_set, in_sorted, same_run, slot_of, table_size,
                                          tokenise)
from streamdedup._kernels.revtypos import TYPO_MAX_CHARS, noise_block, typo_sized
from streamdedup._kernels.revwindow import window

#: character edits a headline takes as noise; words both texts start with from which the
#: headline counts as kept
HEAD_TYPO_EDITS = 3
HEAD_KEPT = 4
# the result: meta[...]
M_REVISED = 0
M_KINDS = 1
M_TYPOS = 2
M_ITEMS = 3
M_PARTIAL = 4
M_WORK = 5  # the damaged-twin search's work spent (its budget's units)
META = 6
#: changed blocks a pair's reading reads at most (the first ones)
MAX_BLOCKS = 256
#: rows ``revision``'s ``store`` has
STORE_ROWS = MAX_ITEMS + PENDING


@njit(cache=True, nogil=True)
def revisions(buf, off, earlier_head, later_head, spaces, digits, decimals, tab_keys, tab_vals, cjk, cjk_off, work,
              store, slen, meta):
    """:func:`revision` of every pair of a batch: pair ``i`` is the earlier text
    ``buf[off[2i]:off[2i + 1]]`` and the later ``buf[off[2i + 1]:off[2i + 2]]``; its result in
    ``store[i]``, ``slen[i]``, ``meta[i]``. One call a batch: the arguments are unpacked once,
    not once a pair (~2 us a call), and the GIL is released meanwhile."""
    for i in range(meta.shape[0]):
        revision(buf[off[2 * i]:off[2 * i + 1]], buf[off[2 * i + 1]:off[2 * i + 2]], earlier_head, later_head, spaces,
                 digits, decimals, tab_keys, tab_vals, cjk, cjk_off, work, store[i], slen[i], meta[i])


@njit(cache=True)
def revision(a_buf, b_buf, earlier_head, later_head, spaces, digits, decimals, tab_keys, tab_vals, cjk, cjk_off,
             work, store, slen, meta):
    """The revision test of ``b_buf`` (the later text) against ``a_buf``: ``meta`` gets revised,
    kinds, typos, the number of items (the first rows of ``store``, of ``STORE_ROWS`` x
    ``revitems.ROW`` code points; ``slen`` their lengths and kinds) and whether the reading was
    partial. ``earlier_head``/``later_head``: the headline regions' lengths in characters
    (``later_head`` -1: as many tokens as the earlier region has). A long pair is read in its
    window (:mod:`.revwindow`), partially."""
    lo, a_hi, b_hi, cut = window(a_buf, b_buf, 4 * max(earlier_head, later_head))  # UTF-8: <= 4 bytes a character
    if lo == 0 and a_hi == a_buf.shape[0] and b_hi == b_buf.shape[0]:
        _read(a_buf, b_buf, earlier_head, later_head, spaces, digits, decimals, tab_keys, tab_vals, cjk, cjk_off, work,
              store, slen, meta, False)
        return
    if lo:  # the headlines are in the common start, unchanged: the window has none
        earlier_head, later_head = 0, (0 if later_head >= 0 else -1)
    _read(a_buf[lo:a_hi], b_buf[lo:b_hi], earlier_head, later_head, spaces, digits, decimals, tab_keys, tab_vals, cjk,
          cjk_off, work, store, slen, meta, cut)
    meta[M_PARTIAL] = 1


@njit(cache=True)
def _read(a_buf, b_buf, earlier_head, later_head, spaces, digits, decimals, tab_keys, tab_vals, cjk, cjk_off, work,
          store, slen, meta, cut):
    """:func:`revision` of two texts read whole (``cut``: a window cut before the end of what
    differs, whose block at both ends is not read)."""
    for k in range(META):
        meta[k] = 0
    if _equal(a_buf, b_buf):
        return
    ca, na, tka0, ha0, nta = _text(a_buf, spaces, digits, decimals, tab_keys, tab_vals)
    cb, nb, tkb, hb, lb = _text(b_buf, spaces, digits, decimals, tab_keys, tab_vals)
    sa = hash_set(ha0, 0, nta)
    head_a = _head_len(ca, na, tka0, nta, earlier_head, spaces)
    tka, ha, la, head_a = _excerpt(ca, tka0, ha0, nta, cb, tkb, hb, lb, head_a)
    same = common_prefix(ha, np.int64(0), la, hb, np.int64(0), lb)
    end = common_suffix(ha, la, hb, lb, min(la, lb) - same)
    head_b = min(head_a, lb) if later_head < 0 else _head_len(cb, nb, tkb, lb, later_head, spaces)
    if later_head < 0 and HEAD_KEPT <= same < head_a and inserted_at(ha, la, hb, lb, same):
        head_a = head_b = same  # a block inserted under a kept headline: aligned with the body, whole
    st = np.zeros(STATE, dtype=np.int64)
    st[S_BUDGET] = work
    joint = head_a == head_b and head_b <= same
    blocks, n_blocks = _blocks(ha, la, hb, lb, head_a, head_b, same, end, joint)
    if n_blocks < 0:
        st[S_PARTIAL] = 1
    old_head_set = hash_set(ha, 0, head_a)
    new_head_set = hash_set(hb, 0, head_b)
    dkeys, dval, forms, groups, marks = _counts(ha, tka, la, hb, tkb, lb, head_a, head_b, same, end, joint, sa,
                                                old_head_set, blocks, n_blocks)
    row = np.empty(ROW, dtype=np.int32)
    scratch = np.empty((2, TYPO_MAX_CHARS + 2), dtype=np.int32)  # the typo rules' strings: at most this long
    osa_rows = np.empty((3, OSA_MAX + 2), dtype=np.int64)
    rewritten = _heads(st, store, slen, row, ca, tka, ha, head_a, cb, tkb, hb, head_b, new_head_set, sa, dkeys, dval,
                       forms, groups, decimals, scratch, osa_rows)
    _markers(st, store, slen, row, ca, na, cb, nb, nb < b_buf.shape[0], tkb, hb, head_b, later_head, old_head_set, marks,
             cjk, cjk_off)
    no_dates = np.zeros(16, dtype=np.uint64)
    for q in range(max(n_blocks, 0)):
        if q == MAX_BLOCKS:
            st[S_PARTIAL] = 1  # the rest is not read: each block costs ~2-3 us
            break
        i1, i2, j1, j2 = blocks[q, 0], blocks[q, 1], blocks[q, 2], blocks[q, 3]
        if i1 == head_a and j1 == head_b:
            # the first body words of one text are headline words of the other (a lost line break)
            if j1 == j2 and _all_in(ha, i1, i2, new_head_set) or i1 == i2 and _all_in(hb, j1, j2, old_head_set):
                continue
            if rewritten:  # the rest of a rewritten headline longer than the region
                head_block(st, store, slen, row, cb, tkb, hb, j1, j2, sa)
                continue
        if cut and i2 == la and j2 == lb:
            continue
        tail = cut_here(ca, tka, la, cb, tkb, lb, i1, i2, j1, j2)
        body_block(st, store, slen, row, ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, tail, np.bool_(False), no_dates, sa, dkeys,
                   dval, forms, groups, decimals, scratch, osa_rows)
        if st[S_ITEMS] == MAX_ITEMS:
            break  # a revision whatever the rest says (no later block takes an item back)
    settle(st, store, slen)
    if st[S_KINDS] == K_MARKER and st[S_STRONG] == 0:
        st[S_KINDS] = 0  # a slug alone ("UPDATE 1-", "REFILE-") on a copy: a copy
        st[S_ITEMS] = 0
    meta[M_REVISED] = 1 if st[S_KINDS] != 0 else 0
    meta[M_KINDS] = st[S_KINDS]
    meta[M_TYPOS] = st[S_TYPOS]
    meta[M_ITEMS] = st[S_ITEMS]
    meta[M_PARTIAL] = st[S_PARTIAL]
    meta[M_WORK] = st[S_WORK]


@njit(cache=True)
def _equal(a, b):
    if a.shape[0] != b.shape[0]:
        return False
    for k in range(a.shape[0]):
        if a[k] != b[k]:
            return False
    return True


@njit(cache=True)
def _text(buf, spaces, digits, decimals, tab_keys, tab_vals):
    """A text's code points and count, its tokens (start, end, classes), hashes and count."""
    c = np.empty(buf.shape[0], dtype=np.int32)
    n = decode_utf8(buf, c)
    # room for every token: an ASCII text has a space between two words, others may not
    room = (n + 1) // 2 if n == buf.shape[0] else n
    tk = np.empty((room, 3), dtype=np.int64)
    h = np.empty(room, dtype=np.uint64)
    nt = tokenise(c, n, spaces, digits, decimals, tab_keys, tab_vals, tk, h)
    return c, n, tk, h, nt


@njit(cache=True)
def _head_len(c, n, tk, nt, head_chars, spaces):
    """How many tokens start within the first ``head_chars`` characters, less one when the cut
    falls between two characters that are not spaces (the last one is cut: it is the body's)."""
    if head_chars <= 0:
        return 0
    k = 0
    while k < nt and tk[k, 0] < head_chars:
        k += 1
    if k and n > head_chars:
        x, y = c[head_chars - 1], c[head_chars]
        if not (ascii_space(x) if x < 0x80 else in_sorted(spaces, x)) and not (ascii_space(y) if y < 0x80
                                                                                else in_sorted(spaces, y)):
            k -= 1
    return min(k, nt)


@njit(cache=True)
def _excerpt(ca, tka0, ha0, nta, cb, tkb, hb, lb, head_a):
    """The earlier text as the later one is compared with: cut to the runs it quotes when the
    later is an excerpt (at most half its tokens), with the headline it kept."""
    if 0.5 * nta < lb:
        return tka0, ha0, nta, head_a
    keep = excerpted(ca, tka0, ha0, nta, cb, tkb, hb, lb)
    la = keep.shape[0]
    k = 0
    while k < la and keep[k] < head_a:
        k += 1
    tka = np.empty((la, 3), dtype=np.int64)
    ha = np.empty(la, dtype=np.uint64)
    for q in range(la):
        for c in range(3):
            tka[q, c] = tka0[keep[q], c]
        ha[q] = ha0[keep[q]]
    return tka, ha, la, k


@njit(cache=True)
def _blocks(ha, la, hb, lb, head_a, head_b, same, end, joint):
    """The changed blocks of the bodies, aligned apart from the headline regions unless those
    are in the texts' common head; -1 blocks when the middles are too long to align."""
    blocks = np.empty((min(la + lb, 2 * MAX_ALIGN) + 2, 4), dtype=np.int64)
    if joint:
        return blocks, aligned(ha, same, la - end, hb, same, lb - end, blocks)
    lo = common_prefix(ha, head_a, la, hb, head_b, lb)
    hi = common_suffix(ha, la, hb, lb, min(la - head_a, lb - head_b) - lo)
    return blocks, aligned(ha, head_a + lo, la - hi, hb, head_b + lo, lb - hi, blocks)


@njit(cache=True)
def _count(keys, val, src, h, lo, hi, text, delta):
    for k in range(lo, hi):
        s = slot_of(keys, h[k])
        if keys[s] == 0:
            keys[s] = h[k]
            src[s, 0] = text
            src[s, 1] = k
        val[s] += delta


@njit(cache=True)
def _counts(ha, tka, la, hb, tkb, lb, head_a, head_b, same, end, joint, sa, old_head, blocks, n_blocks):
    """Each word's count change (what the alignment keeps adds the same to both texts, so the
    changed blocks and the headline regions aligned apart tell it), the words whose count
    changed (:func:`_forms`) and the strong markers among the words the later text adds
    (``old_head``: the earlier headline region's words)."""
    if n_blocks < 0:
        n_count = (la - end - same) + (lb - end - same)
    else:
        n_count = 0 if joint else head_a + head_b
        for q in range(n_blocks):
            n_count += blocks[q, 1] - blocks[q, 0] + blocks[q, 3] - blocks[q, 2]
    keys = np.zeros(table_size(max(n_count, 1)), dtype=np.uint64)
    val = np.zeros(keys.shape[0], dtype=np.int64)
    src = np.empty((keys.shape[0], 2), dtype=np.int64)
    marks = np.empty(n_count + head_b + 1, dtype=np.int64)
    n_marks = 0
    for k in range(head_b):
        if tkb[k, 2] & C_STRONG and not has(old_head, hb[k]):
            marks[n_marks] = k
            n_marks += 1
    if n_blocks < 0:
        _count(keys, val, src, ha, same, la - end, np.int64(0), np.int64(1))
        _count(keys, val, src, hb, same, lb - end, np.int64(1), np.int64(-1))
        seen = np.zeros(table_size(max(lb - end - same, 1)), dtype=np.uint64)
        for k in range(same, lb - end):  # the middle's distinct words new to the earlier text
            s = slot_of(seen, hb[k])
            if seen[s] == 0:
                seen[s] = hb[k]
                if tkb[k, 2] & C_STRONG and not has(sa, hb[k]):
                    marks[n_marks] = k
                    n_marks += 1
    else:
        if not joint:
            _count(keys, val, src, ha, np.int64(0), head_a, np.int64(0), np.int64(1))
            _count(keys, val, src, hb, np.int64(0), head_b, np.int64(1), np.int64(-1))
        for q in range(n_blocks):
            if blocks[q, 2] == lb and blocks[q, 1] == la:
                continue  # the rest of the story, which a shortened copy leaves out, is no change
            _count(keys, val, src, ha, blocks[q, 0], blocks[q, 1], np.int64(0), np.int64(1))
            _count(keys, val, src, hb, blocks[q, 2], blocks[q, 3], np.int64(1), np.int64(-1))
            for k in range(blocks[q, 2], blocks[q, 3]):
                if tkb[k, 2] & C_STRONG:
                    marks[n_marks] = k
                    n_marks += 1
    forms, groups = _forms(keys, val, src, tka, tkb)
    return keys, val, forms, groups, marks[:n_marks]


@njit(cache=True)
def _group(d, text, k, tka, tkb):
    """A word whose count changed by ``d``: fell (0, 1) or grew (2, 3), lettered (0, 2) or all
    digits (1, 3): a number's damaged twin is only ever among the lettered ones."""
    cls = tka[k, 2] if text == 0 else tkb[k, 2]
    return (0 if d > 0 else 2) + (1 if cls & C_DIGITS else 0)


@njit(cache=True)
def _forms(keys, val, src, tka, tkb):
    """The words whose count changed, as (text, token) rows in their groups (:func:`_group`),
    and where each group starts (five bounds)."""
    groups = np.zeros(5, dtype=np.int64)
    for s in range(keys.shape[0]):
        if keys[s] != 0 and val[s] != 0:
            groups[_group(val[s], src[s, 0], src[s, 1], tka, tkb) + 1] += 1
    for g in range(4):
        groups[g + 1] += groups[g]
    forms = np.empty((groups[4], 2), dtype=np.int64)
    fill = groups[:4].copy()
    for s in range(keys.shape[0]):
        if keys[s] != 0 and val[s] != 0:
            g = _group(val[s], src[s, 0], src[s, 1], tka, tkb)
            forms[fill[g], 0] = src[s, 0]
            forms[fill[g], 1] = src[s, 1]
            fill[g] += 1
    return forms, groups


@njit(cache=True)
def _heads(st, store, slen, row, ca, tka, ha, head_a, cb, tkb, hb, head_b, new_head_set, sa, dkeys, dval, forms,
           groups, decimals, scratch, osa_rows):
    """The headline regions: noise, changed in place (each block read as a body block is, its
    figures counting when new to the text), or rewritten (returns True: only new numbers and
    polarity words count)."""
    zero = np.int64(0)
    if head_a == head_b and _equal(ha[:head_a], hb[:head_b]):
        return False
    if (typo_sized(ca, tka, zero, head_a, cb, tkb, zero, head_b, np.int64(HEAD_TYPO_EDITS), scratch, osa_rows)
            and noise_block(ca, tka, ha, zero, head_a, cb, tkb, hb, zero, head_b, dkeys, dval, decimals, scratch)):
        st[S_TYPOS] += 1
        return False
    longest = max(head_a, head_b)
    if longest <= MAX_ALIGN:
        # the earlier region's words found anywhere in the later bound what an alignment keeps
        found = 0
        for k in range(head_a):
            if has(new_head_set, ha[k]):
                found += 1
        if 3 * found < 2 * longest:
            head_block(st, store, slen, row, cb, tkb, hb, zero, head_b, sa)
            return True
    lo = common_prefix(ha, zero, head_a, hb, zero, head_b)
    hi = common_suffix(ha, head_a, hb, head_b, min(head_a, head_b) - lo)
    hblocks = np.empty((head_a + head_b + 2, 4), dtype=np.int64)
    n_h = max(aligned(ha, lo, head_a - hi, hb, lo, head_b - hi, hblocks), 0)
    kept = head_a
    for q in range(n_h):
        kept -= hblocks[q, 1] - hblocks[q, 0]
    if 3 * kept < 2 * longest:
        head_block(st, store, slen, row, cb, tkb, hb, zero, head_b, sa)
        return True
    dated = np.zeros(table_size(head_a + head_b), dtype=np.uint64)
    for k in range(head_a):
        if tka[k, 2] & C_NUMBER and in_date(tka, zero, head_a, k):
            dated[slot_of(dated, ha[k])] = ha[k]
    for k in range(head_b):
        if tkb[k, 2] & C_NUMBER and in_date(tkb, zero, head_b, k):
            dated[slot_of(dated, hb[k])] = hb[k]
    for q in range(n_h):
        body_block(st, store, slen, row, ca, tka, ha, hblocks[q, 0], hblocks[q, 1], cb, tkb, hb, hblocks[q, 2],
                   hblocks[q, 3], np.bool_(False), np.bool_(True), dated, sa, dkeys, dval, forms, groups, decimals, scratch, osa_rows)
    return False


@njit(cache=True)
def _markers(st, store, slen, row, ca, na, cb, nb, b_wide, tkb, hb, head_b, later_head, old_head_set, marks, cjk,
             cjk_off):
    """Markers: strong ones the later text adds, headline ones new to the headline, Chinese ones
    in the later headline (the whole later text when its headline is not known) and not in the
    earlier text. A headline one alone makes no revision (``S_STRONG`` tells the others)."""
    zero = np.int64(0)
    marker = np.int64(K_MARKER)
    for q in range(marks.shape[0]):
        k = marks[q]
        add(st, store, slen, marker, row, write_span(row, zero, cb, tkb[k, 0], tkb[k, 1]))
        st[S_STRONG] = 1
    for k in range(head_b):
        if tkb[k, 2] & C_HEAD_MARKER and not has(old_head_set, hb[k]):
            add(st, store, slen, marker, row, write_span(row, zero, cb, tkb[k, 0], tkb[k, 1]))
    if not b_wide:
        return  # Chinese markers need characters beyond ASCII in the later text (``b_wide``)
    b_end = nb if later_head < 0 else min(later_head, nb)
    for q in range(cjk_off.shape[0] - 1):
        p0, p1 = cjk_off[q], cjk_off[q + 1]
        if _contains(cb, b_end, cjk, p0, p1) and not _contains(ca, na, cjk, p0, p1):
            add(st, store, slen, marker, row, write_span(row, zero, cjk, p0, p1))
            st[S_STRONG] = 1


@njit(cache=True)
def _all_in(h, lo, hi, table):
    for k in range(lo, hi):
        if not has(table, h[k]):
            return False
    return True


@njit(cache=True)
def _contains(c, hi, pat, p0, p1):
    """Whether ``c[:hi]`` contains ``pat[p0:p1]``."""
    for i in range(hi - (p1 - p0) + 1):
        if same_run(c, i, pat, p0, p1 - p0):
            return True
    return False
