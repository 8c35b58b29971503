"""Anchor keys: a hash of the text that follows each place a copy can start.

A teaser, an excerpt or a "key points" box is a short text that starts where a sentence,
a paragraph or a dateline of the story starts, rarely at the story's first word (a standfirst,
byline or dateline comes first). Its MinHash is far from the story's and its lead bands see
only the story's header, so the bands never propose the pair. An anchor key is the same for
both texts wherever the copy starts: a hash of the ``window`` canonical bytes after
an anchor (the text's start, a line end that is not a hard wrap, a sentence end, a dateline dash), read on across the
anchor's own sentence or line end, so a headline line followed by the body gives one key in
the copy (headline + body) and another in the story (where the body starts).

Anchors are found where the canonical pass reads the raw bytes (canonical text has lost the
line ends and punctuation): ``_canonicalise`` notes each byte that can make one (``TRIGGER``)
with its raw position and the canonical position after it, and :func:`anchor_keys` keeps those
that do. The bytes hashed are the canonical text's from its first non-space byte after the
anchor (one space between words: "Reuters) - The" and "reuters the" hash alike), so a
non-ASCII character is hashed as its canonical form (NFKC, case folded). One pass over the
raw bytes: a second one for the anchors alone cost more than the rest of the anchor work.
40 bytes is about 7 English words or 13 CJK characters: the span the prototype measured
(8 words, 12 characters) without a tokenizer.

A long story keeps its first ``first`` anchors (teasers start there) and then every k-th one,
at most ``out.shape[0]`` in all; keys are distinct and never 0 (the empty marker).
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint32, uint64

from streamdedup._kernels.hashing import FNV_OFFSET, FNV_PRIME, fmix64, load64, siphash64

#: canonical bytes hashed after an anchor (a multiple of 8: they are hashed 8 at a time)
ANCHOR_WINDOW = 40
#: anchors a long story keeps from its start before it keeps every k-th
ANCHOR_FIRST = 16
#: anchor keys per document at most
MAX_ANCHORS = 64
#: a line shorter than this (bytes) ends a paragraph, headline, byline or dateline, not a hard
#: wrap: wire copy wrapped at ~70 columns made every line end an anchor (16.8 keys per Reuters
#: story instead of 8-9, twice the record bytes and table load for the same copies found)
SHORT_LINE = 50
#: a line longer than this (bytes) is a whole paragraph, not a hard wrap (wire copy wraps at
#: 65-80 columns), so its end is one even without a sentence end: a table row or a figure
#: before a disclaimer or newsletter block starting on the next line
LONG_LINE = 120


#: the bytes that can make an anchor (``\n . ! ? -`` and the lead bytes of ``。！？–—``): the
#: canonical pass notes a byte where this is 1, a table lookup and a store without a branch
#: (a letter/space test per byte mispredicted at every word boundary)
TRIGGER = np.zeros(256, dtype=np.uint8)
for _b in (10, 33, 45, 46, 63, 0xE2, 0xE3, 0xEF):
    TRIGGER[_b] = 1

#: the rule a trigger byte follows in :func:`anchor_starts`: 1 a line end, 2 a sentence end,
#: 3 a dash, 4 the lead byte of a non-ASCII one (:func:`_anchors_here`)
_KIND = np.zeros(256, dtype=np.uint8)
_KIND[10], _KIND[45] = 1, 3
for _b in (33, 46, 63):
    _KIND[_b] = 2
for _b in (0xE2, 0xE3, 0xEF):
    _KIND[_b] = 4
#: what a byte next to an ASCII trigger is to the rules, as bits: 1 a space (``_is_space``),
#: 2 a closing quote or bracket, 4 the space byte itself, 8 a dash
_NEAR = np.zeros(256, dtype=np.uint8)
for _b in (9, 10, 13, 32):
    _NEAR[_b] |= 1
for _b in (34, 39, 41):
    _NEAR[_b] |= 2
_NEAR[32] |= 4
_NEAR[45] |= 8


@njit(cache=True, inline="always")
def _is_space(b):
    return b == 32 or b == 10 or b == 13 or b == 9


@njit(cache=True, inline="always")
def _anchors_here(raw, p, lo, hi, line_start, first_line):
    """Whether the trigger byte ``raw[p]`` ends a sentence, a short line or a dateline."""
    b = raw[p]
    nxt = raw[p + 1] if p + 1 < hi else np.uint8(32)
    if b == 10:  # a line end: the first, a short line's, or before a blank or indented line
        return first_line or p - line_start < SHORT_LINE or p - line_start > LONG_LINE or _is_space(nxt)
    if b == 46 or b == 33 or b == 63:  # . ! ? then a space, or a closing quote or bracket then a space
        if _is_space(nxt) or p + 1 >= hi:
            return True
        return (nxt == 34 or nxt == 39 or nxt == 41) and (p + 2 >= hi or _is_space(raw[p + 2]))
    if b == 45:  # a dateline dash: " - " or " -- "
        return p > lo and raw[p - 1] == 32 and (_is_space(nxt) or (nxt == 45 and p + 2 < hi and raw[p + 2] == 32))
    if b == 0xE3:  # 。
        return p + 2 < hi and raw[p + 1] == 0x80 and raw[p + 2] == 0x82
    if b == 0xEF:  # ！ ？
        return p + 2 < hi and raw[p + 1] == 0xBC and (raw[p + 2] == 0x81 or raw[p + 2] == 0x9F)
    if b == 0xE2:  # " – " / " — " (a dateline dash)
        return (p + 2 < hi and raw[p + 1] == 0x80 and (raw[p + 2] == 0x93 or raw[p + 2] == 0x94)
                and p > lo and raw[p - 1] == 32)
    return False


@njit(cache=True, inline="always")
def _ascii_anchors_here(raw, p, lo, hi, line_start, kind):
    """:func:`_anchors_here` of an ASCII trigger of ``kind`` (``_KIND``), without a branch: the
    rules are bit tests on the ``_NEAR`` classes of the bytes around it, read at clamped
    positions (a position past the text reads as a space, or as nothing for the byte before
    the text and the dash's second byte after). All unsigned, ``line_start == lo`` on the first
    line. Each trigger kind's branch and its rule's were a coin toss for the predictor: 0.38 ->
    0.26 us per Reuters story for the 28 triggers of :func:`anchor_starts` (with its selects)."""
    one, two = uint64(1), uint64(2)
    nxt = _NEAR[raw[p + one if p + one < hi else p]]  # loaded, then selected: no branch
    nxt = nxt if p + one < hi else np.uint8(5)
    nxt2 = _NEAR[raw[p + two if p + two < hi else p]]
    nxt2 = nxt2 if p + two < hi else np.uint8(1)
    prev = _NEAR[raw[p - one if p > lo else p]]
    prev = prev if p > lo else np.uint8(0)
    space = (nxt & np.uint8(1)) != 0
    length = p - line_start
    line = (line_start == lo) | (length < uint64(SHORT_LINE)) | (length > uint64(LONG_LINE)) | space
    sentence = space | (((nxt & np.uint8(2)) != 0) & ((nxt2 & np.uint8(1)) != 0))
    dash = ((prev & np.uint8(4)) != 0) & (space | (((nxt & np.uint8(8)) != 0) & ((nxt2 & np.uint8(4)) != 0)))
    return ((kind == 1) & line) | ((kind == 2) & sentence) | ((kind == 3) & dash)


@njit(cache=True)  # called, not inlined: the rare path's registers stay out of the mark loop
def _unicode_anchors_here(raw, p, lo, hi, line_start):
    return _anchors_here(raw, np.int64(p), np.int64(lo), np.int64(hi), np.int64(line_start), line_start == lo)


@njit(cache=True)
def anchor_starts(raw, lo, hi, marks, n_marks, canon, cs, ce, starts):
    """Canonical positions in ``canon[cs:ce]`` where an anchored span starts (its first non-space
    byte after an anchor), in order and distinct; returns how many. ``marks[:n_marks]`` are the
    trigger bytes of ``raw[lo:hi]`` as the canonical pass noted them: ``(p - lo) << 32 | (q - cs)``,
    ``q`` the canonical position after raw byte ``p``. A start is stored at every mark and the
    count advances when it is one (selects, unsigned positions: see :func:`_ascii_anchors_here`)."""
    n = 0
    if ce > cs:  # the text's start (canonical text has no leading space)
        starts[0] = cs
        n = 1
    ulo, uhi, ucs, uce = uint64(lo), uint64(hi), uint64(cs), uint64(ce)
    last = ucs if n == 1 else ~uint64(0)  # the last start kept
    line_start = ulo
    for j in range(n_marks):
        mk = marks[j]
        p = ulo + (mk >> uint64(32))
        q = ucs + (mk & uint64(0xFFFFFFFF))
        b = raw[p]
        kind = _KIND[b]
        if kind == 4:
            here = _unicode_anchors_here(raw, p, ulo, uhi, line_start)
        else:
            here = _ascii_anchors_here(raw, p, ulo, uhi, line_start, kind)
        # spaces are collapsed: the first byte written after p, or the one after that space
        s = q + (uint64(0) if (q < uce) & (canon[q if q < uce else ucs] != 32) else uint64(1))
        keep = here & (s < uce) & (s != last)
        starts[n] = np.int64(s)
        n += 1 if keep else 0
        last = s if keep else last
        line_start = p + uint64(1) if b == 10 else line_start
    return n


@njit(cache=True, inline="always")
def _span_key(canon, p, hi, window, key0, key1, keyed):
    """The key of the ``window`` canonical bytes from ``p`` (a multiple of 8), hashed 8 at a time;
    0 when the text ends first. Canonical text has one space between words, so the bytes need
    no gathering: skipping spaces one byte at a time cost more than the rest of the key.
    ``keyed``: through SipHash under ``(key0, key1)`` (``fingerprint.secret``)."""
    if p + window > hi:
        return uint32(0)
    h = FNV_OFFSET
    for t in range(p, p + window, 8):
        h = (h ^ load64(canon, t, hi)) * FNV_PRIME
    if keyed:
        h = siphash64(key0, key1, h)
    k = uint32(fmix64(h) & uint64(0xFFFFFFFF))
    return k if k != 0 else uint32(1)


@njit(cache=True)
def anchor_keys(raw, lo, hi, marks, n_marks, canon, cs, ce, window, first, starts, out, key0, key1, keyed):
    """The anchor keys of the text ``raw[lo:hi]`` (canonical ``canon[cs:ce]``, trigger bytes
    ``marks[:n_marks]``: :func:`anchor_starts`) into ``out``; returns how many (see the module)."""
    n = anchor_starts(raw, lo, hi, marks, n_marks, canon, cs, ce, starts)
    cap = out.shape[0]
    step = 1
    if n > cap:  # the first anchors, then every step-th of the rest
        step = (n - first + (cap - first) - 1) // (cap - first)
    m = 0
    for j in range(n):
        if j >= first and (j - first) % step != 0:
            continue
        k = _span_key(canon, starts[j], ce, window, key0, key1, keyed)
        if k == 0:
            break  # every later span ends past the text too
        dup = False
        for t in range(m):
            if out[t] == k:
                dup = True
                break
        if not dup and m < cap:
            out[m] = k
            m += 1
    return m
