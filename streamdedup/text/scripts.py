"""Which characters are tokens of their own: scripts written without spaces between words.

In Chinese, Japanese and Thai a "word" of the canonical text (the run between two spaces) is a
whole clause, 10-25 characters: a word 5-shingle spans five clauses and one changed character
breaks five of a story's ~40 shingles. So in those scripts every character is a
token, while scripts with spaces keep words. The fingerprint kernel reads the class of each
code point from :func:`token_classes`:

- ``SPACED`` (0): part of a word; words end at spaces.
- ``UNSPACED`` (1): a token of its own: scripts written without spaces, by Unicode's Script
  property. (Script_Extensions would add the kana prolonged sound mark "ー" but also U+02BC, the
  apostrophe of Ukrainian words; a Common character between two unspaced ones is a token of its
  own anyway, see the kernel.)
- ``MARK`` (2): a combining mark (general category M: Thai vowel and tone marks, Devanagari
  vowel signs): it stays in the token of the character before it, whatever that is.

The ranges come from Unicode's properties through the ``regex`` package's database, generated
into :mod:`streamdedup.text._script_ranges` by ``scripts/gen_script_ranges.py`` (a test compares them
with the installed ``regex``): asking ``regex`` at start-up took ~1 s.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

SPACED, UNSPACED, MARK = 0, 1, 2
#: scripts written without spaces between words (Unicode script names)
UNSPACED_SCRIPTS = ("Han", "Hiragana", "Katakana", "Bopomofo", "Thai", "Lao", "Khmer", "Myanmar")
#: the table covers planes 0-3 (Han extensions B-H end below 0x32000); above, every code point
#: is SPACED (the kernel checks the bound)
TABLE_SIZE = 0x40000


@lru_cache(maxsize=1)
def token_classes() -> np.ndarray:
    """``uint8[TABLE_SIZE]``: the class of each code point (read-only)."""
    from streamdedup.text._script_ranges import MARK_RANGES, UNSPACED_RANGES

    table = np.zeros(TABLE_SIZE, dtype=np.uint8)
    for ranges, cls in ((UNSPACED_RANGES, UNSPACED), (MARK_RANGES, MARK)):
        for lo, hi in ranges:
            table[lo:hi] = cls
    table.setflags(write=False)
    return table


def token_class(ch: str) -> int:
    """The class of one character (a code point past the table is ``SPACED``)."""
    cp = ord(ch)
    return int(token_classes()[cp]) if cp < TABLE_SIZE else SPACED


def word_tokens(canonical: str) -> list[tuple[str, bool]]:
    """The tokens the fingerprint kernel shingles, and whether each is one character of an
    unspaced script: words end at spaces, such a character is a token of its own, a combining
    mark stays with the token before it, and the character after a one-character token starts
    a new token. For exact figures next to the estimates (``streamdedup explain``): splitting
    on spaces would make a Chinese clause one "word".

    >>> [t for t, _ in word_tokens("q4 net 中国1998年")]
    ['q4', 'net', '中', '国', '1998', '年']
    """
    out: list[tuple[str, bool]] = []
    cur, single = "", False
    for ch in canonical:
        k = token_class(ch)
        if ch == " " or k == UNSPACED or (k == SPACED and single):
            if cur:
                out.append((cur, single))
            cur, single = "", False
        if ch != " ":
            cur += ch
            single = single if k == MARK else k == UNSPACED
    if cur:
        out.append((cur, single))
    return out


def word_shingles(canonical: str, size: int, unspaced_size: int) -> set[tuple[str, ...]]:
    """The distinct word shingles the kernel hashes: ``unspaced_size`` tokens where most tokens
    are characters of an unspaced script, else ``size``; a text shorter than that is one shingle.

    >>> sorted(word_shingles("新华社北京电", 5, 3))
    [('北', '京', '电'), ('华', '社', '北'), ('新', '华', '社'), ('社', '北', '京')]
    """
    toks = word_tokens(canonical)
    if not toks:
        return set()
    w = unspaced_size if 2 * sum(s for _, s in toks) > len(toks) else size
    w = min(w, len(toks))
    words = [t for t, _ in toks]
    return {tuple(words[i:i + w]) for i in range(len(words) - w + 1)}
