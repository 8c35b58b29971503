"""Exact character evidence for a pair the sketches cannot settle.

A copy with 2-3% character noise keeps a byte 8-gram Jaccard of 0.6-0.75 with its original
while its word 5-shingle Jaccard falls to 0.1-0.4, where templates and shared footers sit too
(earnings tables of two companies, a Treasury balance of two days): the signature aligns those
as well as the noise copy, so ``verify.ld_min_jaccard`` keeps the LD estimate from deciding
alone. What separates them is *where* the texts differ: in numbers and names for templates,
anywhere for noise. Both show in the exact 8-gram sets: the template siblings' Jaccard rises
when every digit is read as ``0`` (their difference is made of digits), the noise copy's
barely moves. A 64-slot sketch's error (+-0.06) is as wide as that gap, so this is exact:
``benchmarks/noise_verification.py`` measured the rule on every proposed pair of both suites.

The grams are the 8 bytes themselves (one uint64, no hash: exact), kept in an open-addressing
table sized for both texts. A third figure tells misspelt words from swapped ones
(:func:`near_word_share`): noise leaves most of a copy's own words one edit from the word they
replaced, a template's next report or a rewrite does not. References: ``gram_jaccards_ref``
and ``near_word_share_ref`` in ``tests/reference.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.hashing import fmix64
from streamdedup._kernels.verify import P_EXACT_DIGIT_GAIN, P_EXACT_GRAM, P_EXACT_NEAR_WORDS, P_SHORT_EXACT, P_SHORT_EXACT_MIN

GRAM = 8
# table states
_EMPTY = 0
_IN_A = 1
_IN_B = 2
_IN_BOTH = 3


@njit(cache=True, inline="always")
def lengths_close(len_a, len_b, min_similarity):
    """Whether two texts' lengths allow an LD similarity of ``min_similarity``: an edit distance
    is at least the length difference, so a longer text more than 1 - s longer cannot reach s
    (skips the signature alignment for most pairs that could never be asked about)."""
    longest = len_a if len_a > len_b else len_b
    return longest - (len_b if len_a > len_b else len_a) <= (1.0 - min_similarity) * longest


@njit(cache=True)
def accepts(plain, folded, near, params):
    """The rule on a pair's exact evidence (``verify.exact_*`` in ``params``, the verification
    kernel's array): the decide loop and :func:`streamdedup.engine.verify.compare` both apply it."""
    return plain >= params[P_EXACT_GRAM] and folded - plain <= params[P_EXACT_DIGIT_GAIN] and near >= params[P_EXACT_NEAR_WORDS]


#: a newer text of at most this share of the earlier one's bytes is a short copy's question
#: (teasers, excerpts, key points: 0.05-0.3 of their story; a copy under other boilerplate or
#: a rewrite is most of its length, and the sketches judge those)
SHORT_SHARE = 0.5
#: and of at least this many bytes: ~70 grams, which a story contains by chance only if it
#: quotes them (a 20-word card is ~120 bytes, a 76-character Chinese teaser ~230)
SHORT_MIN_BYTES = 80


@njit(cache=True, inline="always")
def short_question(len_a, len_b, c_ba, params):
    """Whether a pair that is no duplicate is asked for the exact containment of the newer,
    shorter text in the earlier one: its containment estimate is noise at this size (a teaser
    of 40 words after a story's header block: 0.4-1.0 for a true 0.97), and the signature
    embedding cannot bridge what the copy left out between its sentences (a header block,
    the paragraphs between key points: 0.4-0.8)."""
    return (params[P_SHORT_EXACT] <= 1.0 and len_b >= SHORT_MIN_BYTES and len_b <= SHORT_SHARE * len_a
            and c_ba >= params[P_SHORT_EXACT_MIN])


@njit(cache=True)
def contained(plain, folded, params):
    """The rule on a short copy's exact evidence: the share of its 8-grams in the earlier text
    reaches ``verify.short_exact_containment`` and reading digits as 0 does not add more than
    ``verify.exact_max_digit_gain`` (a brief of the same template with other figures)."""
    return plain >= params[P_SHORT_EXACT] and folded - plain <= params[P_EXACT_DIGIT_GAIN]


@njit(cache=True, inline="always")
def _roll(g, c, fold):
    """The gram ``g`` moved on by the byte ``c``: read at the byte ``q``, it is the 8 bytes
    ``q - 7 .. q`` as one little-endian word (digits read as ``0`` with ``fold``). One shift a
    byte instead of eight loads a gram."""
    if fold and 48 <= c <= 57:
        c = 48
    return (g >> np.uint64(8)) | (np.uint64(c) << np.uint64(56))


@njit(cache=True)
def _probe(keys, states, key, h):
    """The slot of ``key`` (hashed ``h``) in an open-addressing table of a power-of-two size:
    its own, or the empty one it would take (linear probing)."""
    mask = np.uint64(keys.shape[0] - 1)
    k = h & mask
    while states[k] != _EMPTY and keys[k] != key:
        k = (k + np.uint64(1)) & mask
    return k


@njit(cache=True)
def _jaccard(a, b, fold, keys, states):
    """Exact Jaccard of the distinct 8-gram sets of ``a`` and ``b``, and the containment of
    ``b``'s set in ``a``'s (tables cleared here)."""
    for k in range(keys.shape[0]):
        states[k] = _EMPTY
    n_a = 0
    g = np.uint64(0)
    for q in range(a.shape[0]):
        g = _roll(g, a[q], fold)
        if q < GRAM - 1:
            continue
        h = _probe(keys, states, g, fmix64(g))
        if states[h] == _EMPTY:
            keys[h] = g
            states[h] = _IN_A
            n_a += 1
    n_b = 0
    both = 0
    g = np.uint64(0)
    for q in range(b.shape[0]):
        g = _roll(g, b[q], fold)
        if q < GRAM - 1:
            continue
        h = _probe(keys, states, g, fmix64(g))
        s = states[h]
        if s == _EMPTY:
            keys[h] = g
            states[h] = _IN_B
            n_b += 1
        elif s == _IN_A:
            states[h] = _IN_BOTH
            n_b += 1
            both += 1
    union = n_a + n_b - both
    return both / union if union > 0 else 0.0, both / n_b if n_b > 0 else 0.0


@njit(cache=True, nogil=True)
def gram_jaccards(a, b, keys, states):
    """Exact Jaccard of the byte 8-gram sets of ``a`` and ``b`` and containment of ``b``'s in
    ``a``'s: (Jaccard, Jaccard digit-folded, containment, containment digit-folded).

    ``keys`` (uint64) and ``states`` (uint8) are a table of a power-of-two size of at least
    twice ``len(a) + len(b)`` (:func:`table_size`). A text shorter than 8 bytes has no gram:
    the pair scores 1.0 when both texts are equal, else 0.0.
    """
    if a.shape[0] < GRAM or b.shape[0] < GRAM:
        same = a.shape[0] == b.shape[0]
        if same:
            for k in range(a.shape[0]):
                if a[k] != b[k]:
                    same = False
                    break
        v = 1.0 if same else 0.0
        return v, v, v, v
    plain, contained = _jaccard(a, b, np.bool_(False), keys, states)
    folded, contained_folded = _jaccard(a, b, np.bool_(True), keys, states)
    return plain, folded, contained, contained_folded


@njit(cache=True, nogil=True)
def blocks_held(a, b, blocks, n_blocks, keys, states, out):
    """For each block k = 1..``n_blocks`` of ``b`` (``blocks[p] == k``: ``_kernels.blocks``),
    the share of its distinct byte 8-grams (those wholly inside it) that ``a`` has, into
    ``out[k - 1]`` (1.0 for a block of no whole gram): whether ``a`` carries that block. One
    table of ``a``'s grams serves every block (a table of :func:`table_size` of both texts)."""
    for k in range(keys.shape[0]):
        states[k] = _EMPTY
    g = np.uint64(0)
    for q in range(a.shape[0]):
        g = _roll(g, a[q], np.bool_(False))
        if q < GRAM - 1:
            continue
        h = _probe(keys, states, g, fmix64(g))
        if states[h] == _EMPTY:
            keys[h] = g
            states[h] = _IN_A
    total = np.zeros(n_blocks, np.int64)
    held = np.zeros(n_blocks, np.int64)
    g = np.uint64(0)
    for q in range(b.shape[0]):
        g = _roll(g, b[q], np.bool_(False))
        p = q - GRAM + 1  # the gram's first byte
        if p < 0:
            continue
        k = blocks[p]
        if k == 0 or blocks[q] != k:
            continue
        h = _probe(keys, states, g, fmix64(g))
        s = states[h]
        if s == _IN_B or s == _IN_BOTH:
            continue  # a gram this block has counted already (or, once, another block: rare)
        total[k - 1] += 1
        if s == _IN_A:
            held[k - 1] += 1
            states[h] = _IN_BOTH
        else:
            keys[h] = g
            states[h] = _IN_B
    for k in range(n_blocks):
        out[k] = held[k] / total[k] if total[k] > 0 else 1.0


def table_size(len_a: int, len_b: int) -> int:
    """The table :func:`gram_jaccards` needs for texts of these lengths (load <= 1/2)."""
    need = 2 * (len_a + len_b) + 2
    return 1 << max(4, (need - 1).bit_length())


# ---------------------------------------------------------------- words one edit apart

_SPACE = 32
#: words longer than this are compared whole only (their one-deletion variants are not hashed)
MAX_VARIANT_WORD = 32


@njit(cache=True)  # called, not inlined: inlined at its call sites it cost ~0.6 s more compile
def _word_hash(text, s, e, skip):
    """FNV-1a of ``text[s:e]`` without the byte at ``skip`` (-1: none), mixed."""
    h = np.uint64(0xCBF29CE484222325)
    for p in range(s, e):
        if p != skip:
            h = (h ^ np.uint64(text[p])) * np.uint64(0x100000001B3)
    return fmix64(h ^ np.uint64(e - s - (1 if skip >= 0 else 0)))


@njit(cache=True)
def _words(text, starts, ends):
    """Word boundaries of ``text`` (runs of non-space bytes) into ``starts``/``ends``; returns the count."""
    n = 0
    p = 0
    size = text.shape[0]
    while p < size:
        while p < size and text[p] == _SPACE:
            p += 1
        if p >= size:
            break
        starts[n] = p
        while p < size and text[p] != _SPACE:
            p += 1
        ends[n] = p
        n += 1
    return n




@njit(cache=True, nogil=True)
def near_word_share(a, b, keys, counts, states):
    """Of the words the newer ``b`` has beyond the earlier ``a`` (as multisets), the share one
    edit away (a byte substituted, dropped or added, or two neighbours swapped) from a word
    ``a`` has beyond ``b``; 1.0 when ``b`` has no word of its own. (Hashed: two different
    words share a key with probability ~2^-64 per pair.)

    Character noise misspells words, so most of a noisy copy's own words are one edit from the
    word they replaced; two reports of one template, or a rewrite, swap whole words
    ("three-day" / "customer"). ``keys`` (uint64), ``counts`` (int64), ``states`` (uint8): a
    table of :func:`word_table_size`.
    """
    # word starts and ends of a and b in one allocation (a text of n bytes has <= n/2 + 1 words)
    wa, wb = a.shape[0] // 2 + 1, b.shape[0] // 2 + 1
    bounds = np.empty(2 * (wa + wb), np.int64)
    sa, ea = bounds[:wa], bounds[wa:2 * wa]
    sb, eb = bounds[2 * wa:2 * wa + wb], bounds[2 * wa + wb:]
    na = _words(a, sa, ea)
    nb = _words(b, sb, eb)
    for k in range(keys.shape[0]):
        states[k] = _EMPTY
        counts[k] = 0
    for w in range(na):  # a's words, counted
        h = _word_hash(a, sa[w], ea[w], np.int64(-1))
        k = _probe(keys, states, h, h)  # a word's key is its hash
        keys[k] = h
        states[k] = _IN_A
        counts[k] += 1
    own = np.zeros(nb, np.bool_)
    n_own = 0
    for w in range(nb):  # b's words beyond a's (a multiset difference)
        h = _word_hash(b, sb[w], eb[w], np.int64(-1))
        k = _probe(keys, states, h, h)
        if states[k] != _EMPTY and counts[k] > 0:
            counts[k] -= 1
        else:
            own[w] = True
            n_own += 1
    if n_own == 0:
        return 1.0
    # a's words beyond b's (what is left of the counts) and their one-deletion variants, as
    # a second kind of entry: a word of b is near when it, or one of its variants, is there
    for w in range(na):
        h = _word_hash(a, sa[w], ea[w], np.int64(-1))
        k = _probe(keys, states, h, h)
        if counts[k] <= 0:
            continue
        counts[k] -= 1
        _mark(a, sa[w], ea[w], keys, states)
    near = 0
    for w in range(nb):
        if own[w] and _is_near(b, sb[w], eb[w], keys, states):
            near += 1
    return near / n_own


@njit(cache=True, inline="always")
def _variant(text, s, e, skip):
    """The word (``skip`` = -1) or it without the byte at ``skip``, in the variants' key space."""
    return _word_hash(text, s, e, skip) ^ np.uint64(0x5BD1E995)


@njit(cache=True)
def _mark(text, s, e, keys, states):
    """Enter a word and its one-deletion variants (words over MAX_VARIANT_WORD: itself only)."""
    last = e if e - s <= MAX_VARIANT_WORD else s
    for skip in range(s - 1, last):
        h = _variant(text, s, e, np.int64(skip if skip >= s else -1))
        k = _probe(keys, states, h, h)
        keys[k] = h
        states[k] = _IN_B


@njit(cache=True)
def _is_near(text, s, e, keys, states):
    """Whether the word or one of its one-deletion variants was entered by :func:`_mark`."""
    last = e if e - s <= MAX_VARIANT_WORD else s
    for skip in range(s - 1, last):
        h = _variant(text, s, e, np.int64(skip if skip >= s else -1))
        if states[_probe(keys, states, h, h)] == _IN_B:
            return True
    return False


def word_table_size(len_a: int, len_b: int) -> int:
    """The table :func:`near_word_share` needs: a's words and their variants (load <= 1/2)."""
    return table_size(3 * len_a + 2, len_b)
