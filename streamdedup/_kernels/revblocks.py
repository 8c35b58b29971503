"""The revision test's reading of one changed block: material change, noise, or nothing.

The rules of ``revisions._body_block`` and ``revisions._head_block`` (their docstrings and the
module's say why each is there), on token spans of the two texts: ``ca``/``tka``/``ha`` the
earlier text's code points, tokens (start, end, classes) and hashes, ``cb``/``tkb``/``hb`` the
later's; ``sa`` the earlier text's words, ``dkeys``/``dval`` each word's count change, ``forms``
and ``groups`` the words whose count changed (:func:`.revtypos.garbled`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.revitems import (K_ADDED, K_FIGURES, K_NEGATION, K_WORDS, ROW, S_BUDGET, S_TYPOS, S_WORK, add,
                                           pending, put, show, write_span, write_tokens)
from streamdedup._kernels.revtext import (C_ASCII, C_BOILER, C_DATE_UNIT, C_DATELINE_END, C_DIGITS, C_FIGURE, C_HEAD_MARKER,
                                          C_MONTH, C_NUMBER, C_POLARITY, count_of, has)
from streamdedup._kernels.revtypos import TYPO_MAX_CHARS, garbled, joined_equal, noise_block, same_units, typo_sized

#: a block of at most this many tokens a side is small: what it changes counts only in a pair
#: without typos
SMALL_BLOCK = 4


@njit(cache=True)
def in_date(tk, lo, hi, k):
    """Whether number ``k`` (of the tokens ``lo:hi``) is no figure of a headline: the day or
    month of a dateline, or a slug's version ("update 2")."""
    after = tk[k + 1, 2] if k + 1 < hi else np.int64(0)
    before = tk[k - 1, 2] if k > lo else np.int64(0)
    if before & C_HEAD_MARKER:
        return True
    if not (after & (C_DATE_UNIT | C_MONTH) or before & C_MONTH):
        return False
    for q in range(k + 1, min(k + 5, hi)):
        if tk[q, 2] & C_DATELINE_END:
            return True
    return False


@njit(cache=True)
def cut_here(ca, tka, la, cb, tkb, lb, i1, i2, j1, j2):
    """Whether a changed block is where a teaser stops: the later text ends with it (or one
    short fragment after it), the earlier goes on or lost more, and the later text from the
    block on starts the earlier's from there (``revisions._cut_here``)."""
    if j2 == lb - 1:
        if tkb[lb - 1, 1] - tkb[lb - 1, 0] > 3 or i2 >= la - 1:
            return False
    elif j2 != lb:
        return False
    if not (i2 < la or i2 - i1 > j2 - j1):
        return False
    return joined_equal(ca, tka, i1, la, cb, tkb, j1, lb, np.bool_(True))


@njit(cache=True)
def head_block(st, store, slen, row, cb, tkb, hb, lo, hi, sa):
    """A block of a rewritten headline: numbers and polarity words new to the text count (not a
    dateline's day and month), and only in a pair without noise."""
    for k in range(lo, hi):
        cls = tkb[k, 2]
        if cls & (C_NUMBER | C_POLARITY) and not has(sa, hb[k]) and not in_date(tkb, lo, hi, k):
            n = put(row, np.int64(0), 43)
            n = write_span(row, n, cb, tkb[k, 0], tkb[k, 1])
            pending(st, store, slen, K_FIGURES if cls & C_NUMBER else K_NEGATION, row, n)


@njit(cache=True, inline="always")
def _fresh(tkb, hb, k, sa):
    """A word new to the earlier text that can be news: not all digits, not one ASCII letter."""
    cls = tkb[k, 2]
    return not has(sa, hb[k]) and not cls & C_DIGITS and (tkb[k, 1] - tkb[k, 0] > 1 or not cls & C_ASCII)


@njit(cache=True)
def _figures(st, ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, head, dated, sa, dkeys, dval, forms, groups, decimals,
             scratch, osa_rows):
    """Whether the block changed a figure: one whose count changed (in a headline, one new to
    the text and not a dateline's) and that is no damaged twin; a damaged one is a typo."""
    n_garbled = 0
    n_kept = 0
    for side in range(2):
        lo, hi = (i1, i2) if side == 0 else (j1, j2)
        for k in range(lo, hi):
            if n_kept and (n_garbled or st[S_WORK] > st[S_BUDGET]):
                break  # the answer is known (a spent budget finds no more twins): the rest changes nothing
            if side == 0:
                h, cls, c, ts, te = ha[k], tka[k, 2], ca, tka[k, 0], tka[k, 1]
            else:
                h, cls, c, ts, te = hb[k], tkb[k, 2], cb, tkb[k, 0], tkb[k, 1]
            if not cls & C_FIGURE:
                continue
            d = count_of(dkeys, dval, h)
            if d == 0 or head and (has(sa, h) or has(dated, h)):
                continue
            if garbled(st, c, ts, te, cls, np.int64(-1) if d > 0 else np.int64(1), forms, groups, ca, tka, cb, tkb, decimals, scratch,
                       osa_rows):
                n_garbled += 1
            else:
                n_kept += 1
    if n_garbled:
        st[S_TYPOS] += 1
    return n_kept > 0


@njit(cache=True)
def _polarity(tka, ha, i1, i2, tkb, hb, j1, j2, head, sa, dkeys, dval):
    for side in range(2):
        lo, hi = (i1, i2) if side == 0 else (j1, j2)
        for k in range(lo, hi):
            h, cls = (ha[k], tka[k, 2]) if side == 0 else (hb[k], tkb[k, 2])
            if cls & C_POLARITY and count_of(dkeys, dval, h) != 0 and not (head and has(sa, h)):
                return True
    return False


@njit(cache=True)
def _new_words(st, ca, tka, i1, i2, cb, tkb, hb, j1, j2, sa, forms, groups, decimals, scratch, osa_rows):
    """How many words the block brings that are new to the earlier text; in a block of more
    than :data:`SMALL_BLOCK` tokens, damaged words left out and counting stops at three."""
    n = 0
    for k in range(j1, j2):
        if _fresh(tkb, hb, k, sa):
            n += 1
    if n < 3 or i2 - i1 <= SMALL_BLOCK and j2 - j1 <= SMALL_BLOCK:
        return n
    n = 0
    for k in range(j1, j2):
        if n == 3:
            break
        if _fresh(tkb, hb, k, sa) and not garbled(st, cb, tkb[k, 0], tkb[k, 1], tkb[k, 2], np.int64(1), forms, groups, ca, tka,
                                                  cb, tkb, decimals, scratch, osa_rows):
            n += 1
    return n


@njit(cache=True)
def body_block(st, store, slen, row, ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, tail, head, dated, sa, dkeys, dval,
               forms, groups, decimals, scratch, osa_rows):
    """One changed block (``revisions._body_block``): ``ha[i1:i2]`` replaced by ``hb[j1:j2]``;
    ``tail``: where a shortened copy stops; ``head``: a block of a headline region changed in
    place (``dated``: the numbers of its datelines)."""
    n_old = i2 - i1
    n_new = j2 - j1
    if tail:
        return  # a teaser: the later text stops earlier
    boiler = 0
    for k in range(j1, j2):
        if tkb[k, 2] & C_BOILER:
            boiler += 1
    if boiler >= 2:
        return  # credits, copyright, subscription lines
    if joined_equal(ca, tka, i1, i2, cb, tkb, j1, j2, np.bool_(False)):
        st[S_TYPOS] += 1  # spacing inside a word or a number
        return
    if same_units(tka, ha, i1, i2, tkb, hb, j1, j2):
        return  # another spelling of the same units: style
    figures = _figures(st, ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, head, dated, sa, dkeys, dval, forms, groups,
                       decimals, scratch, osa_rows)
    polarity = _polarity(tka, ha, i1, i2, tkb, hb, j1, j2, head, sa, dkeys, dval)
    fresh = _new_words(st, ca, tka, i1, i2, cb, tkb, hb, j1, j2, sa, forms, groups, decimals, scratch, osa_rows)
    kinds = np.empty(3, dtype=np.int64)
    rows = np.empty((3, ROW), dtype=np.int32)
    lens = np.empty(3, dtype=np.int64)
    n = 0
    if figures:
        kinds[n] = K_FIGURES
        lens[n] = show(rows[n], ca, tka, i1, i2, cb, tkb, j1, j2, np.int64(C_FIGURE), np.int64(-1))
        n += 1
    if polarity:
        kinds[n] = K_NEGATION
        lens[n] = show(rows[n], ca, tka, i1, i2, cb, tkb, j1, j2, np.int64(C_POLARITY), np.int64(-1))
        n += 1
    if n_old and fresh and n == 0:
        kinds[n] = K_WORDS
        lens[n] = show(rows[n], ca, tka, i1, i2, cb, tkb, j1, j2, np.int64(0), np.int64(4))
        n += 1
    elif not n_old and fresh >= 3 and not figures:
        kinds[n] = K_ADDED
        lens[n] = write_tokens(rows[n], put(rows[n], np.int64(0), 43), cb, tkb, j1, j2, np.int64(0), np.int64(6))
        n += 1
    if (typo_sized(ca, tka, i1, i2, cb, tkb, j1, j2, np.int64(TYPO_MAX_CHARS), scratch, osa_rows)
            and noise_block(ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, dkeys, dval, decimals, scratch)):
        st[S_TYPOS] += 1
    elif n_old <= SMALL_BLOCK and n_new <= SMALL_BLOCK or fresh < 3 and not figures and not polarity:
        for q in range(n):
            pending(st, store, slen, kinds[q], rows[q], lens[q])
    else:
        for q in range(n):
            add(st, store, slen, kinds[q], rows[q], lens[q])
