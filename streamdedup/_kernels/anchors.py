"""Anchor keys: a hash of the text that follows each place a copy can start.

A teaser, an excerpt or a "key points" box is a short text that starts where a sentence,
a paragraph or a dateline of the story starts, rarely at the story's first word (a standfirst,
byline or dateline comes first). Its MinHash is far from the story's and its lead bands see
only the story's header, so the bands never propose the pair. An anchor key is the same for
both texts wherever the copy starts: a hash of the ``window`` non-space canonical bytes after
an anchor (the text's start, a line end that is not a hard wrap, a sentence end, a dateline dash), read on across the
anchor's own sentence or line end, so a headline line followed by the body gives one key in
the copy (headline + body) and another in the story (where the body starts).

Anchors are found in the raw bytes (canonical text has lost the line ends and punctuation);
the bytes hashed are the canonical byte map's (``cmap``: ASCII lower-cased, punctuation a
space), spaces skipped, so "Reuters) - The" and "reuters the" hash alike. Non-ASCII bytes are
hashed as they are (no NFKC or case folding): a copy with other Unicode forms loses its anchors,
not its bands. ~36 bytes is about 7 English words or 12 CJK characters: the span the prototype
measured (8 words, 12 characters) without a tokenizer.

A long story keeps its first ``first`` anchors (teasers start there) and then every k-th one,
at most ``out.shape[0]`` in all; keys are distinct and never 0 (the empty marker).
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint32, uint64

from streamdedup._kernels.hashing import FNV_OFFSET, FNV_PRIME, fmix64

#: non-space canonical bytes hashed after an anchor
ANCHOR_WINDOW = 36
#: anchors a long story keeps from its start before it keeps every k-th
ANCHOR_FIRST = 16
#: anchor keys per document at most
MAX_ANCHORS = 64
#: a line shorter than this (bytes) ends a paragraph, headline, byline or dateline, not a hard
#: wrap: wire copy wrapped at ~70 columns made every line end an anchor (16.8 keys per Reuters
#: story instead of 8-9, twice the record bytes and table load for the same copies found)
SHORT_LINE = 50


#: the bytes that can make an anchor (``\n . ! ? -`` and the lead bytes of ``。！？–—``): a table
#: lookup instead of testing every byte against each (a letter/space test mispredicted at every
#: word boundary: the scan cost 3.2 us per Reuters story)
_TRIGGER = np.zeros(256, dtype=np.uint8)
for _b in (10, 33, 45, 46, 63, 0xE2, 0xE3, 0xEF):
    _TRIGGER[_b] = 1


@njit(cache=True, inline="always")
def _is_space(b):
    return b == 32 or b == 10 or b == 13 or b == 9


@njit(cache=True)
def anchor_starts(raw, lo, hi, cmap, starts):
    """Positions in ``raw[lo:hi]`` where an anchored span starts (its first non-space canonical
    byte after an anchor); returns how many (``starts`` has room for ``hi - lo + 1``)."""
    n = 0
    pending = True  # the text's start is an anchor
    line_start = lo
    first_line = True
    for p in range(lo, hi):
        b = raw[p]
        if pending and cmap[b] != 32:
            starts[n] = p
            n += 1
            pending = False
        if _TRIGGER[b] == 0:  # most bytes (letters, spaces): a branch the predictor gets right
            continue
        nxt = raw[p + 1] if p + 1 < hi else np.uint8(32)
        if b == 10:  # a line end: the first, a short line's, or before a blank or indented line
            if first_line or p - line_start < SHORT_LINE or _is_space(nxt):
                pending = True
            line_start = p + 1
            first_line = False
        elif b == 46 or b == 33 or b == 63:  # . ! ? then a space, or a closing quote or bracket then a space
            if _is_space(nxt) or p + 1 >= hi:
                pending = True
            elif (nxt == 34 or nxt == 39 or nxt == 41) and (p + 2 >= hi or _is_space(raw[p + 2])):
                pending = True
        elif b == 45 and p > lo and raw[p - 1] == 32 and (_is_space(nxt) or (nxt == 45 and p + 2 < hi and raw[p + 2] == 32)):
            pending = True  # a dateline dash: " - " or " -- "
        elif b == 0xE3 and p + 2 < hi and raw[p + 1] == 0x80 and raw[p + 2] == 0x82:
            pending = True  # 。
        elif b == 0xEF and p + 2 < hi and raw[p + 1] == 0xBC and (raw[p + 2] == 0x81 or raw[p + 2] == 0x9F):
            pending = True  # ！ ？
        elif b == 0xE2 and p + 2 < hi and raw[p + 1] == 0x80 and (raw[p + 2] == 0x93 or raw[p + 2] == 0x94) \
                and p > lo and raw[p - 1] == 32:
            pending = True  # " – " / " — " (a dateline dash)
    return n


@njit(cache=True, inline="always")
def _span_key(raw, p, hi, cmap, window):
    """The key of the ``window`` non-space canonical bytes from ``p``; 0 when the text ends first."""
    h = FNV_OFFSET
    got = 0
    while p < hi and got < window:
        c = cmap[raw[p]]
        # a select, not a branch: whether a byte is a space is a coin toss to the predictor
        keep = c != 32
        h = (h ^ uint64(c)) * FNV_PRIME if keep else h
        got += 1 if keep else 0
        p += 1
    if got < window:
        return uint32(0)
    k = uint32(fmix64(h) & uint64(0xFFFFFFFF))
    return k if k != 0 else uint32(1)


@njit(cache=True)
def anchor_keys(raw, lo, hi, cmap, window, first, starts, out):
    """The anchor keys of ``raw[lo:hi]`` into ``out``; returns how many (see the module)."""
    n = anchor_starts(raw, lo, hi, cmap, starts)
    cap = out.shape[0]
    step = 1
    if n > cap:  # the first anchors, then every step-th of the rest
        step = (n - first + (cap - first) - 1) // (cap - first)
    m = 0
    for j in range(n):
        if j >= first and (j - first) % step != 0:
            continue
        k = _span_key(raw, starts[j], hi, cmap, window)
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
