"""Boilerplate blocks: the sentences of a text that other stories carry too, learned from the stream.

Wire services and sites attach the same blocks to every story (a disclaimer, "Our Standards", a
newsletter or cookie notice). A short story resent under another such block shares its body
word for word and little else, so it reads as unrelated, or as a revision that swapped
paragraphs. The anchor table (``anchor_index``) already counts, for every anchor key (the first
40 canonical bytes of a sentence, line or paragraph), the distinct clusters that wrote it in a
row, and each record keeps the counts its keys had when it was stored. A sentence whose key was
written by ``engine.hot_bucket_clusters`` (3) or more clusters, from which a band or an anchor key
is no evidence of a copy, is one other stories carry: it starts a block
that runs to the text's next anchor (at most :data:`MAX_BLOCK` bytes further, a long story keeping
only every k-th of its anchors). Learned from the stream, not from a list, and from counts the
records keep, so a batch, a replay and a restart mark the same blocks.

Canonical text has lost its line ends and punctuation, so the anchors are found again where
they were: at word starts whose 40-byte key (``anchors._span_key``) is one of the document's
own keys. Reference: ``block_mask_ref`` in ``tests/reference.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.anchors import ANCHOR_WINDOW, _span_key
from streamdedup._kernels.evidence import blocks_held

#: canonical bytes a block runs at most from its anchor before it ends at the next word start
#: (a 60-word disclaimer is 4-5 sentences of 60-120 bytes; past the 16th anchor a long story
#: keeps every k-th one, and a block must not run on into the story)
MAX_BLOCK = 400


@njit(cache=True, inline="always")
def _key_index(keys, n_keys, k):
    for j in range(n_keys):
        if keys[j] == k:
            return j
    return -1


@njit(cache=True, inline="always")
def _word_end(text, p, n):
    """``p`` if it starts a word (or is the end), else the next word start."""
    while p < n and p > 0 and text[p - 1] != 32:
        p += 1
    return p


@njit(cache=True, nogil=True)
def block_mask(text, keys, hots, n_keys, hot, mask, key0, key1, keyed):
    """Number in ``mask[:len(text)]`` the bytes of ``text`` (canonical) by the boilerplate block
    they are in (1, 2, ...; 0: none): a block runs from each word start whose anchor key is one
    of ``keys[:n_keys]`` with ``hots[j] >= hot`` up to the next word start holding one of its
    keys, or :data:`MAX_BLOCK` bytes on (rounded up to a word start). Returns the number of
    blocks. (Two clusters would be too few: a copy that replaced a sentence with another
    story's would have that change taken for boilerplate.) ``key0, key1, keyed``: the anchor
    keys' secret (``fingerprint.secret``), as the fingerprint computed them."""
    n = text.shape[0]
    for p in range(n):
        mask[p] = 0
    blocks = 0
    start = -1  # the open block's first byte
    p = 0
    while p <= n:
        anchor = -1
        if p < n and (p == 0 or text[p - 1] == 32):
            k = _span_key(text, p, n, ANCHOR_WINDOW, key0, key1, keyed)
            if k != 0:
                anchor = _key_index(keys, n_keys, k)
        if start >= 0 and (p == n or anchor >= 0 or p - start >= MAX_BLOCK):
            end = _word_end(text, p, n)
            blocks += 1
            for q in range(start, end):
                mask[q] = blocks
            start = -1
            if end > p:  # cut inside a word: go on from the next word start
                p = end
                continue
        if anchor >= 0 and start < 0 and hots[anchor] >= hot:
            start = p
        p += 1
    return blocks


@njit(cache=True, nogil=True)
def uncarried_hot(keys, hots, n_keys, other, n_other, hot):
    """Whether one of ``keys[:n_keys]`` with a count of ``hot`` or more (one that starts a
    block) is not among ``other[:n_other]`` (the other text's keys, which carry the blocks they
    name). When neither text of a pair has one, no block is left out of either: the question
    every revised pair asks first, answered without an array operation per key. Reference:
    ``uncarried_hot_ref`` in ``tests/reference.py``."""
    for r in range(n_keys):
        if hots[r] >= hot and _key_index(other, n_other, keys[r]) < 0:
            return True
    return False


@njit(cache=True, nogil=True)
def left_out(a, a_keys, a_hots, n_a, b, b_keys, b_hots, n_b, hot, key0, key1, keyed, shared, min_bytes, tab_keys,
             tab_states, mask, held, out_a, out_b):
    """Both texts of a pair without the boilerplate blocks the other does not carry, into
    ``out_a`` and ``out_b``; returns their lengths, or (-1, -1) when nothing is left out of
    either or either keeps less than ``min_bytes``. A text's block is one that a key of count
    ``hot`` or more not among the other's keys starts (:func:`block_mask`), left out when less
    than ``shared`` of its 8-grams are in the other text (``_kernels.evidence.blocks_held``).
    One call a pair: the question (:func:`uncarried_hot`), both masks and both readings of the
    blocks without an array made in Python between them. ``tab_keys``/``tab_states``: a gram
    table of ``evidence.table_size(len(a), len(b))`` slots (both texts' grams, either side's
    reading); ``mask``, ``held``: room for the longer text. Reference: ``left_out_ref`` in ``tests/reference.py``."""
    if not (uncarried_hot(a_keys, a_hots, n_a, b_keys, n_b, hot) or uncarried_hot(b_keys, b_hots, n_b, a_keys, n_a, hot)):
        return -1, -1
    kept_a = _kept(a, a_keys, a_hots, n_a, b, b_keys, n_b, hot, key0, key1, keyed, shared, tab_keys, tab_states, mask,
                   held, out_a)
    kept_b = _kept(b, b_keys, b_hots, n_b, a, a_keys, n_a, hot, key0, key1, keyed, shared, tab_keys, tab_states, mask,
                   held, out_b)
    if kept_a == a.shape[0] and kept_b == b.shape[0] or kept_a < min_bytes or kept_b < min_bytes:
        return -1, -1
    return kept_a, kept_b


@njit(cache=True)
def _kept(mine, keys, hots, n, other, other_keys, n_other, hot, key0, key1, keyed, shared, tab_keys, tab_states, mask,
          held, out):
    """``mine`` without its blocks that ``other`` does not carry, into ``out``; its length. A
    block whose key the other text has too is carried by it and starts none."""
    own = np.empty(n, np.uint8)
    any_hot = False
    for r in range(n):
        c = hots[r]
        if c >= hot and _key_index(other_keys, n_other, keys[r]) >= 0:
            c = 0
        own[r] = c
        any_hot = any_hot or c >= hot
    size = mine.shape[0]
    blocks = block_mask(mine, keys, own, n, hot, mask, key0, key1, keyed) if any_hot else 0
    if blocks:
        blocks_held(other, mine, mask, blocks, tab_keys, tab_states, held)
    k = 0
    for p in range(size):
        if blocks == 0 or mask[p] == 0 or held[mask[p] - 1] >= shared:
            out[k] = mine[p]
            k += 1
    return k
