"""Which characters are tokens of their own: scripts written without spaces between words.

In Chinese, Japanese and Thai a "word" of the canonical text (the run between two spaces) is a
whole clause, 10-25 characters: a word 5-shingle spans five clauses and one changed character
breaks five of a story's ~40 shingles (issue 17). So in those scripts every character is a
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
