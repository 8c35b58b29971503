"""The revision test's words: code points, tokens, word classes and typo distances.

A canonical text reaches the revision test as UTF-8 bytes. It is decoded once into code points
(``int32``); a token is a span of them (a word, or one character of a script written without
spaces: Han, kana, Thai, Lao), named by a 64-bit hash of its code points and carrying the
classes the rules ask about (all digits, a number, a figure, ASCII, and the word lists: polarity
words, markers, boilerplate, months, date units, dateline ends). Membership and counts are open
addressing tables of those hashes: every question about a word costs a few probes, never a scan
of the text. (Two different words with one 64-bit hash would be read as one word: at ~10^5
words a text, the chance is ~10^-9.)

Reference: :mod:`streamdedup.engine.revision_tokens` (``tokens``, ``is_figure``,
``is_number``, ``within``, ``noise_like``, ``ocr``), held to these in the tests.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.hashing import FNV_OFFSET, FNV_PRIME, fmix64

# token classes (bits of a token's flags)
C_DIGITS = 1  # every character a digit (str.isdigit)
C_NUMBER = 2
C_FIGURE = 4  # a number, or a word with a digit in it
C_ASCII = 8
C_POLARITY = 16
C_STRONG = 32  # a marker wherever it is new ("corrected")
C_HEAD_MARKER = 64  # a marker in the headline region ("update")
C_BOILER = 128
C_MONTH = 256
C_DATE_UNIT = 512
C_DATELINE_END = 1024
C_NUMBER_WORD = 2048  # one of the number words ("million", "万")
C_MAGNITUDE = 4096  # a unit that is a magnitude ("mln", "bln", "万")
#: a unit's name (one for all its spellings: "mln" and "million") sits in a token's classes
#: from this bit up (0: no unit)
UNIT_SHIFT = 16

#: OSA distances are worked out in a table of this many code points a side at most (the typo
#: rules never ask about longer strings: TYPO_MAX_CHARS)
OSA_MAX = 64


@njit(cache=True)
def decode_utf8(buf, out):
    """Code points of valid UTF-8 ``buf`` into ``out`` (at least ``len(buf)`` long); their count."""
    n = buf.shape[0]
    i = 0
    k = 0
    while i < n:
        b = np.int32(buf[i])
        if b < 0x80:
            out[k] = b
            i += 1
        elif b < 0xE0:
            out[k] = ((b & 0x1F) << 6) | (np.int32(buf[i + 1]) & 0x3F)
            i += 2
        elif b < 0xF0:
            out[k] = ((b & 0x0F) << 12) | ((np.int32(buf[i + 1]) & 0x3F) << 6) | (np.int32(buf[i + 2]) & 0x3F)
            i += 3
        else:
            out[k] = (((b & 0x07) << 18) | ((np.int32(buf[i + 1]) & 0x3F) << 12)
                      | ((np.int32(buf[i + 2]) & 0x3F) << 6) | (np.int32(buf[i + 3]) & 0x3F))
            i += 4
        k += 1
    return k


@njit(cache=True, inline="always")
def in_sorted(table, c):
    """Whether ``c`` is in the sorted ``table``."""
    lo = 0
    hi = table.shape[0]
    if hi == 0 or c > table[hi - 1]:
        return False  # past the table: Han, Kana and Hangul are all past the spaces'
    while lo < hi:
        mid = (lo + hi) >> 1
        if table[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    return lo < table.shape[0] and table[lo] == c


# The character classes below are written out at each site, the table looked up only for a
# character beyond ASCII: a helper that takes the table costs a reference count update per
# character (~18 ns) even inlined, 20x the test itself.


@njit(cache=True, inline="always")
def ascii_space(c):
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@njit(cache=True, inline="always")
def ascii_digit(c):
    return 48 <= c <= 57


@njit(cache=True, inline="always")
def unspaced(c):
    """A character of a script written without spaces: one token on its own."""
    return (0x3400 <= c <= 0x4DBF or 0x4E00 <= c <= 0x9FFF or 0xF900 <= c <= 0xFAFF or 0x3040 <= c <= 0x30FF
            or 0x0E00 <= c <= 0x0EFF)


@njit(cache=True, inline="always")
def no_digit(c):
    """A character of the Han and Kana blocks, none of which is a digit (the tests hold this
    Python's ``str.isdigit`` to it): its word needs no look-up in the digits' table."""
    return 0x4E00 <= c <= 0x9FFF or 0x3400 <= c <= 0x4DBF or 0x3040 <= c <= 0x30FF or 0xF900 <= c <= 0xFAFF


@njit(cache=True, inline="always")
def span_hash(cps, a, b):
    """The 64-bit name of the word ``cps[a:b]`` (never 0: 0 marks an empty table slot)."""
    h = FNV_OFFSET
    for k in range(a, b):
        h ^= np.uint64(cps[k])
        h *= FNV_PRIME
    h = fmix64(h ^ np.uint64(b - a))
    if h == 0:
        h = np.uint64(1)
    return h


@njit(cache=True)
def word_hash(cps):
    """:func:`span_hash` of a whole array (the word lists' tables are built with it)."""
    return span_hash(cps, np.int64(0), np.int64(cps.shape[0]))


# --------------------------------------------------------------------------- hash tables


@njit(cache=True)
def table_size(n):
    size = 16
    while size < 2 * n:
        size <<= 1
    return size


@njit(cache=True, inline="always")
def slot_of(keys, h):
    """The slot of ``h`` in the open addressing table ``keys``: where it is, or the empty slot
    where it would go."""
    mask = keys.shape[0] - 1
    s = np.int64((h >> np.uint64(7)) & np.uint64(mask))
    while keys[s] != 0 and keys[s] != h:
        s = (s + 1) & mask
    return s


@njit(cache=True)
def hash_set(hashes, lo, hi):
    """A table of the distinct ``hashes[lo:hi]``."""
    keys = np.zeros(table_size(hi - lo), dtype=np.uint64)
    for k in range(lo, hi):
        keys[slot_of(keys, hashes[k])] = hashes[k]
    return keys


@njit(cache=True, inline="always")
def has(keys, h):
    return keys[slot_of(keys, h)] == h


@njit(cache=True, inline="always")
def lookup_class(tab_keys, tab_vals, h):
    s = slot_of(tab_keys, h)
    return tab_vals[s] if tab_keys[s] == h else np.int64(0)


# --------------------------------------------------------------------------- tokens


@njit(cache=True)
def tokenise(cps, n, spaces, digits, decimals, tab_keys, tab_vals, tk, th):
    """The tokens of ``cps[:n]`` (``revision_tokens.tokens``): rows of ``tk`` (start, end,
    classes) and hashes ``th`` (room for every token); returns their count. ``spaces``,
    ``digits``, ``decimals``: the code points beyond ASCII that ``str.isspace``,
    ``str.isdigit`` and ``\\d`` hold for; ``tab_keys``/``tab_vals``: the word lists' classes."""
    k = 0
    i = 0
    while i < n:
        c = cps[i]
        if ascii_space(c) if c < 0x80 else in_sorted(spaces, c):
            i += 1
            continue
        # an ASCII word is named and classed in the pass that finds its end (one pass over its
        # characters); a word with other characters is split and classed apart
        j = i
        h = FNV_OFFSET
        wide = False
        all_digits = True
        any_digit = False
        lead = 0  # digits the word starts with
        while j < n:
            c = cps[j]
            if c < 0x80:
                if ascii_space(c):
                    break
                h ^= np.uint64(c)
                h *= FNV_PRIME
                if ascii_digit(c):
                    any_digit = True
                    if lead == j - i:
                        lead += 1
                else:
                    all_digits = False
            else:
                if in_sorted(spaces, c):
                    break
                wide = True
            j += 1
        if not wide:
            h = fmix64(h ^ np.uint64(j - i))
            if h == 0:
                h = np.uint64(1)
            cls = _number_classes(lookup_class(tab_keys, tab_vals, h) | C_ASCII, all_digits, any_digit,
                                  lead > 0 and _suffix(cps, i + lead, j))
            tk[k, 0] = i
            tk[k, 1] = j
            tk[k, 2] = cls
            th[k] = h
            k += 1
        else:  # a character a token in scripts without spaces, split from the rest
            a = i
            while a < j:
                b = a + 1
                if not unspaced(cps[a]):
                    while b < j and not unspaced(cps[b]):
                        b += 1
                h = span_hash(cps, a, b)
                tk[k, 0] = a
                tk[k, 1] = b
                cls = lookup_class(tab_keys, tab_vals, h)
                if b == a + 1 and no_digit(cps[a]):
                    tk[k, 2] = _number_classes(cls, False, False, False)  # what _classes says of it
                else:
                    tk[k, 2] = _classes(cps, a, b, digits, decimals, cls)
                th[k] = h
                k += 1
                a = b
        i = j
    return k


@njit(cache=True)
def _classes(cps, a, b, digits, decimals, cls):
    all_digits = True
    any_digit = False
    ascii_ = True
    lead = 0  # decimal digits the token starts with
    for p in range(a, b):
        c = cps[p]
        if c < 0x80:
            d = ascii_digit(c)
            dec = d
        else:
            ascii_ = False
            d = in_sorted(digits, c)
            dec = d and in_sorted(decimals, c)
        if d:
            any_digit = True
        else:
            all_digits = False
        if dec and lead == p - a:
            lead += 1
    if ascii_:
        cls |= C_ASCII
    return _number_classes(cls, all_digits, any_digit, lead > 0 and _suffix(cps, a + lead, b))


@njit(cache=True, inline="always")
def _number_classes(cls, all_digits, any_digit, ordinal):
    """A word's classes with what its digits make of it: all digits, a number (all digits, a
    number word, or an ordinal such as "4th"), a figure (a number, or a word with a digit)."""
    if all_digits:
        cls |= C_DIGITS
    if all_digits or cls & C_NUMBER_WORD or ordinal:
        cls |= C_NUMBER | C_FIGURE
    elif any_digit:
        cls |= C_FIGURE
    return cls


@njit(cache=True)
def _suffix(cps, p, b):
    """An ordinal or plural suffix: ``st``, ``nd``, ``rd``, ``th`` or ``s`` ("4th", "1980s")."""
    rest = b - p
    if rest == 1:
        return cps[p] == 115
    if rest == 2:
        x, y = cps[p], cps[p + 1]
        return (x == 115 and y == 116) or (x == 110 and y == 100) or (x == 114 and y == 100) or (x == 116 and y == 104)
    return False


# --------------------------------------------------------------------------- typos


@njit(cache=True, inline="always")
def ocr(c):
    """A character as OCR misreads digits: o l i z s b read as 0 1 1 2 5 8."""
    if c == 111:
        return 48
    if c == 108 or c == 105:
        return 49
    if c == 122:
        return 50
    if c == 115:
        return 53
    if c == 98:
        return 56
    return c


@njit(cache=True)
def osa_within(s, ls, t, lt, k, rows):
    """Whether the optimal string alignment distance (Levenshtein plus swaps of adjacent
    characters) of ``s[:ls]`` and ``t[:lt]`` is at most ``k`` (both at most :data:`OSA_MAX`;
    ``rows``: a scratch table of three rows). Cells farther than ``k`` from the diagonal
    cannot be within ``k`` and are not filled; a row wholly above ``k`` ends the search."""
    if abs(ls - lt) > k:
        return False
    big = k + 1
    w = lt + 1
    r2 = rows[0]
    r1 = rows[1]
    r0 = rows[2]
    for j in range(w):
        r1[j] = j if j <= k else big
    for i in range(1, ls + 1):
        lo = max(1, i - k)
        hi = min(lt, i + k)
        r0[lo - 1] = i if lo == 1 and i <= k else big
        best = r0[lo - 1]
        si = s[i - 1]
        for j in range(lo, hi + 1):
            tj = t[j - 1]
            v = r1[j - 1] + (0 if si == tj else 1)
            d = r1[j] + 1
            if d < v:
                v = d
            d = r0[j - 1] + 1
            if d < v:
                v = d
            if i > 1 and j > 1 and si == t[j - 2] and s[i - 2] == tj:
                d = r2[j - 2] + 1
                if d < v:
                    v = d
            if v > big:
                v = big
            r0[j] = v
            if v < best:
                best = v
        if hi < lt:
            r0[hi + 1] = big
        if best > k:
            return False
        r2, r1, r0 = r1, r0, r2
    return r1[lt] <= k


@njit(cache=True)
def same_run(x, p, y, q, m):
    """Whether ``x[p:p + m]`` equals ``y[q:q + m]`` (both in range)."""
    for r in range(m):
        if x[p + r] != y[q + r]:
            return False
    return True


@njit(cache=True, inline="always")
def count_of(keys, val, h):
    """The value of ``h`` in a table of ``keys`` and ``val`` (0 when it is not there)."""
    s = slot_of(keys, h)
    return val[s] if keys[s] == h else np.int64(0)
