"""Token classes: the committed ranges equal Unicode's properties, and what they mean for text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from streamdedup.text import scripts
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.config import FingerprintConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from gen_script_ranges import patterns, ranges_from_property  # noqa: E402


def test_committed_ranges_equal_the_unicode_properties() -> None:
    """scripts/gen_script_ranges.py regenerates them; a newer Unicode shows up here."""
    from streamdedup.text._script_ranges import MARK_RANGES, UNSPACED_RANGES

    assert list(UNSPACED_RANGES) == ranges_from_property(patterns()[scripts.UNSPACED])
    assert list(MARK_RANGES) == ranges_from_property(patterns()[scripts.MARK])


def test_classes_of_each_script_kind() -> None:
    c = scripts.token_class
    assert [c(ch) for ch in "中國あア々กລកမ"] == [scripts.UNSPACED] * 9
    assert [c(ch) for ch in "a1é한Жא "] == [scripts.SPACED] * 7
    assert [c(ch) for ch in "\u0e31\u0e48\u0301\u093f"] == [scripts.MARK] * 4  # Thai vowel, tone, acute, Devanagari i
    assert c("\U00030000") == scripts.UNSPACED  # Han extension G, plane 3
    assert c("\U000e0100") == scripts.SPACED  # past the table (a variation selector)


def test_chinese_shingles_are_characters_and_english_words() -> None:
    """A Chinese text has one shingle per character position (5 characters each), an English
    text one per word position; one changed character changes at most 5 Chinese shingles."""
    fp = Fingerprinter(FingerprintConfig())
    zh = "新华社北京一月一日电国家主席江泽民发表新年讲话"
    en = "the quick brown fox jumps over the lazy dog again today"
    b = fp.fingerprint_batch([zh, zh[:10] + "X" + zh[11:], en])
    assert b.n_shingles.tolist() == [len(zh) - 4, len(zh) - 4, len(en.split()) - 4]
    same = np.mean(b.minhash[0] == b.minhash[1])
    assert same > 0.55  # 20 shingles, 5 changed: Jaccard 15/25 = 0.6 (word shingles: one clause, 0)
