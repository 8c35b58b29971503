"""Character classes of the canonical form, as code-point ranges and regexes: what counts as a
word character, and which blocks are Han and kana (pure).

The canonical form (:mod:`streamdedup.text.canonical`), the kernel's Unicode tables
(:mod:`streamdedup.text.unicode_map`) and the Traditional fold (:mod:`streamdedup.text.fold`)
read them from here.
"""

from __future__ import annotations

import re

from streamdedup.text._script_ranges import MARK_RANGES


def char_ranges(ranges, end_exclusive: bool = False) -> str:
    """The body of a regex character class for code-point ranges (inclusive ends, or exclusive)."""
    return "".join(f"\\U{lo:08x}-\\U{hi - end_exclusive:08x}" for lo, hi in ranges)


# "Not a letter or digit", except combining marks: Python's \w leaves out general category M,
# and Thai vowel and tone marks (or Devanagari vowel signs) are part of their words ("ที่" would
# lose two of its three characters)
MARKS = char_ranges(MARK_RANGES, end_exclusive=True)  # half-open ranges (_script_ranges)
NON_WORD = re.compile(rf"(?:[^\w{MARKS}]|_)+")
# Han blocks: CJK Unified Ideographs and Extension A, Compatibility Ideographs, Extensions B-H
# and the Compatibility Supplement. Every character OpenCC's t2s tables change lies in them
# (a unit test converts every code point and checks), so a text without them is left alone.
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF))
HAN = re.compile(f"[{char_ranges(HAN_RANGES)}]")
# Hiragana, Katakana (with its phonetic extensions and half-width forms, for nfkc: false) and
# the Kana Supplement/Extended blocks: a text with any of them is Japanese for ``auto``
KANA_RANGES = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F), (0x1B000, 0x1B16F))
KANA = re.compile(f"[{char_ranges(KANA_RANGES)}]")
