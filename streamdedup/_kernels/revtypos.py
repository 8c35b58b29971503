"""The revision test's noise rules: when a changed block or word is damage, not a change.

A block within a few character edits of what it replaced (spaces ignored, letters read as the
digits OCR takes them for) is typo-sized; it is noise when letters changed, not when only
digits did (``600`` -> ``500``). A changed figure or new word is damage when a word whose count
moved the other way is a typo of it, a merge of it with a neighbour, or a piece of it (a noisy
stretch that the alignment cut across two blocks).

The damaged-twin search compares a word with every word whose count moved the other way: the
one step whose work grows with the square of a pair's changed words. Each word compared spends
a unit of the pair's budget (``st[S_BUDGET]``; an edit distance table 32 cells a unit more);
once it is spent a word is taken as no damage and the reading flagged partial.

Reference: ``revision_tokens.typo_sized``, ``noise_like``, ``garbled`` and ``within``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.revitems import S_BUDGET, S_PARTIAL, S_WORK
from streamdedup._kernels.revtext import C_DIGITS, C_MAGNITUDE, C_POLARITY, UNIT_SHIFT, ascii_digit, count_of, in_sorted, ocr, osa_within

TYPO_SHARE = 0.34
#: blocks longer than this (characters) are never typos
TYPO_MAX_CHARS = 48
#: characters a merged twin may have beyond the word
MERGE_CHARS = 12


@njit(cache=True)
def joined_equal(ca, tka, i1, i2, cb, tkb, j1, j2, prefix):
    """Whether the tokens ``i1:i2`` joined without spaces equal (``prefix``: start with) the
    tokens ``j1:j2`` joined."""
    ka, pa = i1, tka[i1, 0] if i1 < i2 else 0
    kb, pb = j1, tkb[j1, 0] if j1 < j2 else 0
    while True:
        while ka < i2 and pa >= tka[ka, 1]:
            ka += 1
            if ka < i2:
                pa = tka[ka, 0]
        while kb < j2 and pb >= tkb[kb, 1]:
            kb += 1
            if kb < j2:
                pb = tkb[kb, 0]
        if kb >= j2:
            return prefix or ka >= i2
        if ka >= i2:
            return False
        if ca[pa] != cb[pb]:
            return False
        pa += 1
        pb += 1


@njit(cache=True)
def _joined(out, c, tk, lo, hi, with_ocr):
    """The tokens ``lo:hi`` joined without spaces into ``out`` (as OCR reads them); the length,
    or -1 past :data:`TYPO_MAX_CHARS`."""
    n = 0
    for k in range(lo, hi):
        for p in range(tk[k, 0], tk[k, 1]):
            if n >= TYPO_MAX_CHARS:
                return -1
            out[n] = ocr(c[p]) if with_ocr else c[p]
            n += 1
    return n


@njit(cache=True)
def typo_sized(ca, tka, i1, i2, cb, tkb, j1, j2, cap, scratch, osa_rows):
    """Whether a block is within a few character edits of what it replaced (spaces ignored, as
    OCR reads them; ``revision_tokens.typo_sized``)."""
    ls = _joined(scratch[0], ca, tka, i1, i2, np.bool_(True))
    if ls < 0:
        return False
    lt = _joined(scratch[1], cb, tkb, j1, j2, np.bool_(True))
    if lt < 0:
        return False
    longest = max(ls, lt)
    k = max(1, min(cap, int(TYPO_SHARE * longest)))
    return osa_within(scratch[0], ls, scratch[1], lt, k, osa_rows)


@njit(cache=True)
def _decimals(c, s, e, decimals):
    """Which of ``c[s:e]`` are decimal digits (what ``\\d`` matches)."""
    out = np.empty(e - s, dtype=np.bool_)
    for p in range(s, e):
        x = c[p]
        out[p - s] = ascii_digit(x) if x < 0x80 else in_sorted(decimals, x)
    return out


@njit(cache=True)
def noise_chars(x, xs, xe, y, ys, ye, decimals):
    """``noise_like``'s test of the characters: letters changed (or digits glued to a word or
    gone from one) is noise, digits alone changed is not."""
    dx = _decimals(x, xs, xe, decimals)
    dy = _decimals(y, ys, ye, decimals)
    nx = xe - xs
    ny = ye - ys
    # the letters (all but decimal digits) of both, then their digits, compared in order
    letters = False
    digits_x = False
    digits_y = False
    for want in range(2):
        p = 0
        q = 0
        while True:
            while p < nx and dx[p] != (want == 1):
                p += 1
            while q < ny and dy[q] != (want == 1):
                q += 1
            if p >= nx or q >= ny:
                if p < nx or q < ny:
                    return want == 0  # letters differ: noise; digits differ: not
                break
            if x[xs + p] != y[ys + q]:
                return want == 0
            letters = letters or want == 0
            p += 1
            q += 1
        if want == 0:
            for p in range(nx):
                digits_x = digits_x or dx[p]
            for q in range(ny):
                digits_y = digits_y or dy[q]
            if letters and not (digits_x and digits_y):
                return True  # digits glued to a word, or gone from one
    return True  # the same letters and the same digits


@njit(cache=True)
def noise_block(ca, tka, ha, i1, i2, cb, tkb, hb, j1, j2, dkeys, dval, decimals, scratch):
    """``noise_like`` of a typo-sized block: not when a polarity word whose count changed comes
    in (or, with nothing new, goes out)."""
    if j2 > j1:
        for k in range(j1, j2):
            if tkb[k, 2] & C_POLARITY and count_of(dkeys, dval, hb[k]) != 0:
                return False
    else:
        for k in range(i1, i2):
            if tka[k, 2] & C_POLARITY and count_of(dkeys, dval, ha[k]) != 0:
                return False
    if not same_magnitudes(tka, i1, i2, tkb, j1, j2):
        return False  # another magnitude: the figure changed by a factor ("mln" -> "bln")
    ls = _joined(scratch[0], ca, tka, i1, i2, np.bool_(False))
    lt = _joined(scratch[1], cb, tkb, j1, j2, np.bool_(False))
    return noise_chars(scratch[0], np.int64(0), ls, scratch[1], np.int64(0), lt, decimals)


@njit(cache=True)
def same_magnitudes(tka, i1, i2, tkb, j1, j2):
    """Whether the two blocks name the same magnitudes in the same order, or one names none (a
    damaged "billion" is no other magnitude; ``noise_like``)."""
    p, q = i1, j1
    one = False
    other = False
    for k in range(i1, i2):
        one = one or tka[k, 2] & C_MAGNITUDE != 0
    for k in range(j1, j2):
        other = other or tkb[k, 2] & C_MAGNITUDE != 0
    if not (one and other):
        return True
    while True:
        while p < i2 and not tka[p, 2] & C_MAGNITUDE:
            p += 1
        while q < j2 and not tkb[q, 2] & C_MAGNITUDE:
            q += 1
        if p >= i2 or q >= j2:
            return p >= i2 and q >= j2
        if tka[p, 2] >> UNIT_SHIFT != tkb[q, 2] >> UNIT_SHIFT:
            return False
        p += 1
        q += 1


@njit(cache=True)
def same_units(tka, ha, i1, i2, tkb, hb, j1, j2):
    """Whether the later block spells the earlier with other spellings of the same units, word
    for word ("cents" -> "cts"): style, not a change (``revision_tokens.same_units``)."""
    if i2 - i1 != j2 - j1:
        return False
    differ = False
    for k in range(i2 - i1):
        if ha[i1 + k] == hb[j1 + k]:
            continue
        differ = True
        unit = tka[i1 + k, 2] >> UNIT_SHIFT
        if unit == 0 or unit != tkb[j1 + k, 2] >> UNIT_SHIFT:
            return False
    return differ


@njit(cache=True, inline="always")
def _bits(x):
    """The set bits of ``x`` (a SWAR popcount)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True)
def _starts(x, xs, xe, y, ys, ye):
    """Whether the OCR reading of ``x[xs:xe]`` starts with that of ``y[ys:ye]``."""
    if ye - ys > xe - xs:
        return False
    for p in range(ye - ys):
        if ocr(x[xs + p]) != ocr(y[ys + p]):
            return False
    return True


@njit(cache=True)
def _ends(x, xs, xe, y, ys, ye):
    m = ye - ys
    if m > xe - xs:
        return False
    for p in range(m):
        if ocr(x[xe - m + p]) != ocr(y[ys + p]):
            return False
    return True


@njit(cache=True)
def garbled(st, c, ts, te, cls, sign, forms, groups, ca, tka, cb, tkb, decimals, scratch, osa_rows):
    """Whether the word ``c[ts:te]`` has a damaged (or repaired) twin among the words whose
    count moved the other way (``forms`` of ``sign``: the rows ``groups`` gives): a typo of it, a
    merge with a neighbour or a piece of it (``revision_tokens.garbled``). Each word compared
    spends a unit of the pair's budget; once it is spent the search stops (not damage) and the
    reading is partial."""
    lo = te - ts
    k_lo = max(1, int(TYPO_SHARE * lo))
    long_o = lo > TYPO_MAX_CHARS
    digits_only = cls & C_DIGITS
    letters = np.uint64(0)
    for p in range(lo if lo <= TYPO_MAX_CHARS else 0):
        scratch[0, p] = ocr(c[ts + p])
        letters |= np.uint64(1) << np.uint64(scratch[0, p] & 63)
    base = 0 if sign == 1 else 2
    for f in range(groups[base], groups[base + 1] if digits_only else groups[base + 2]):
        if forms[f, 0] == 0:
            uc = ca
            us, ue, ucls = tka[forms[f, 1], 0], tka[forms[f, 1], 1], tka[forms[f, 1], 2]
        else:
            uc = cb
            us, ue, ucls = tkb[forms[f, 1], 0], tkb[forms[f, 1], 1], tkb[forms[f, 1], 2]
        st[S_WORK] += 1
        if st[S_WORK] > st[S_BUDGET]:
            st[S_PARTIAL] = 1
            return False
        lv = ue - us
        if lv > lo:
            if lv > lo + MERGE_CHARS:
                continue
            if not (_starts(uc, us, ue, c, ts, te) or _ends(uc, us, ue, c, ts, te)):
                k = max(1, int(TYPO_SHARE * lv))
                if lv - lo > k or lv > TYPO_MAX_CHARS:
                    continue
                if not _within(st, scratch, lo, letters, uc, us, ue, k, osa_rows):
                    continue
        elif not (lo > lv > 1 and (_starts(c, ts, te, uc, us, ue) or _ends(c, ts, te, uc, us, ue))):
            if lo - lv > k_lo or long_o:
                continue
            if not _within(st, scratch, lo, letters, uc, us, ue, k_lo, osa_rows):
                continue
        if ucls & C_POLARITY:
            continue  # a polarity word brought in is no noise
        if cls & ucls & C_MAGNITUDE and (cls ^ ucls) >> UNIT_SHIFT != 0:
            continue  # another magnitude: the figure changed by a factor
        if noise_chars(c, ts, te, uc, us, ue, decimals):
            return True
    return False


@njit(cache=True)
def _within(st, scratch, lo, letters, uc, us, ue, k, osa_rows):
    """Whether the word in ``scratch[0, :lo]`` (its characters' set ``letters``, each as a bit of
    its code point mod 64) is within ``k`` edits of ``uc[us:ue]`` as OCR reads it. An edit adds
    or removes at most two characters of the set and a swap none, so sets that differ in more
    than ``2 k`` bits are farther apart: told without the distance table."""
    lv = ue - us
    other = np.uint64(0)
    for p in range(lv):
        scratch[1, p] = ocr(uc[us + p])
        other |= np.uint64(1) << np.uint64(scratch[1, p] & 63)
    if _bits(letters ^ other) > 2 * k:
        return False
    st[S_WORK] += (max(lo, lv) * (2 * k + 1)) >> 5
    return osa_within(scratch[0], lo, scratch[1], lv, k, osa_rows)
