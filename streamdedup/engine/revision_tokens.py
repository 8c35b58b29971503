"""The words of a revision test and when two differ by a typo (pure core; :mod:`.revisions` uses them).

A canonical text's tokens (words; a character a token in scripts written without spaces), what
counts as a figure, the banded edit distance that says a block is a typo, the noise rule (letters
changed, or digits glued to a word, but not only digits changed), damaged twins across blocks,
and the alignment of two token lists after their common ends are cut off.
"""

from __future__ import annotations

import re
from functools import lru_cache
from bisect import bisect_left
from itertools import compress, count, islice
from operator import ne
from typing import Mapping

from rapidfuzz.distance import OSA, Indel

#: a typo changes at most this share of a block's characters (at least one character)
TYPO_SHARE = 0.34
#: blocks longer than this (characters) are never typos (keeps the edit distance cheap)
TYPO_MAX_CHARS = 48
#: tokens (after the common head and tail) beyond which two texts are not aligned and only the
#: markers are read: ~3,000 tokens a side align in ~50 ms (one core), a 20-30 KB text
MAX_ALIGN_TOKENS = 3000
#: characters a merged twin may have beyond the word (a neighbour word lost its space)
MERGE_CHARS = 12
#: a block of at most this many tokens on each side is small: what it changes counts only in a
#: pair without letter typos (noise changes digits and short words as well as letters); an
#: excerpt keeps a gap this small between two runs it quotes
SMALL_BLOCK = 4
#: tokens kept on each side of a few missing words of an excerpt for them to count
KEPT_RUN = 3
#: places a pair of words is looked up at, each side of where the last run ended (bounds the cost
#: of a text that repeats itself)
RUN_STARTS = 16
#: scripts written without spaces between words, read one character a token: Han, kana, Thai, Lao
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u0e00-\u0eff"
_TOKEN = re.compile(rf"[{_HAN}]|[^\s{_HAN}]+")
_DIGITS = re.compile(r"\D")  # removes all but digits
_NON_DIGITS = re.compile(r"\d")  # removes digits
#: a number with an ordinal or plural suffix ("4th", "1980s"): still a figure
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|s)")

NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
    "million billion trillion mln bln dozen 〇 零 一 二 三 四 五 六 七 八 九 十 百 千 万 亿 两".split())
POLARITY_WORDS = frozenset(
    "not no never nor neither none without cannot didn doesn isn wasn weren aren wouldn couldn shouldn hasn "
    "haven hadn include includes included including exclude excludes excluded excluding rise rises rose risen "
    "fall falls fell fallen up down higher lower increase increases increased decrease decreases decreased "
    "gain gains gained loss losses lost profit profits surplus deficit above below approve approved approves "
    "reject rejected rejects accept accepted accepts deny denied denies confirm confirmed confirms win won "
    "lose guilty innocent acquitted convicted buy buys bought sell sells sold raise raised raises cut cuts "
    "positive negative 不 没 未 无 非 否 增 减 升 降 涨 跌 盈 亏".split())

#: units written more than one way (each spelling -> one name): a change between two spellings
#: of one unit is style ("cents" -> "cts"), between two magnitudes a change of the figure by a
#: factor ("125 mln" -> "125 bln"), never a typo
UNITS = {
    "cents": "cents", "cts": "cents", "percent": "pct", "pct": "pct", "dollars": "dlrs", "dlrs": "dlrs",
    "dollar": "dlr", "dlr": "dlr", "thousand": "k", "k": "k", "million": "mln", "mln": "mln", "mn": "mln",
    "m": "mln", "billion": "bln", "bln": "bln", "bn": "bln", "trillion": "tln", "tln": "tln", "tn": "tln",
    "hundred": "hundred", "百": "百", "千": "千", "万": "万", "亿": "亿",
}
MAGNITUDES = frozenset({"k", "mln", "bln", "tln", "hundred", "百", "千", "万", "亿"})

#: letters OCR reads for digits: compared as those digits ("4OO" is a damaged "400")
_OCR = str.maketrans("olizsb", "011258")


def tokens(canonical: str) -> list[str]:
    """The words of a canonical text, characters of scripts without spaces (Han, kana, Thai) one
    by one (and split from digits).

    A word that mixes letters and digits stays whole: in clean copy that is a figure with a
    suffix ("4th") or a model name ("3b2"), in a noisy one a digit glued to a word ("board2") or
    a letter read into a number ("l987"), which the typo rule then reads as one damaged word.

    >>> tokens("q4 net 6 3 16 中国1998年")
    ['q4', 'net', '6', '3', '16', '中', '国', '1998', '年']
    """
    if canonical.isascii():
        return canonical.split()
    out: list[str] = []
    for w in canonical.split():
        if w.isascii():
            out.append(w)
        else:
            out += _TOKEN.findall(w)
    return out


# cached: a pair asks about the same words many times, and the words of a feed repeat
@lru_cache(maxsize=1 << 16)
def is_figure(t: str) -> bool:
    """A number, or a word with digits in it ("iso9002", "b747")."""
    return is_number(t) or not t.isalpha() and any(c.isdigit() for c in t)


@lru_cache(maxsize=1 << 16)
def is_number(t: str) -> bool:
    return t.isdigit() or t in NUMBER_WORDS or (t[0].isdigit() and _ORDINAL.fullmatch(t) is not None)


def within(s: str, t: str, k: int) -> bool:
    """Whether the optimal string alignment distance of ``s`` and ``t`` (Levenshtein plus swaps
    of adjacent characters, a common typo) is at most ``k`` (rapidfuzz's OSA, which stops at
    ``k``; a pure-Python table in the tests is its reference)."""
    return abs(len(s) - len(t)) <= k and OSA.distance(s, t, score_cutoff=k) <= k


def typo_sized(old: list[str], new: list[str], cap: int = TYPO_MAX_CHARS) -> bool:
    """Whether a block is within a few character edits (at most ``cap``) of what it replaced
    (spaces ignored, so a split or merged word and a letter inside a number count as the one
    edit they are)."""
    s, t = "".join(old), "".join(new)
    longest = max(len(s), len(t))  # the OCR reading keeps the length: checked before it is made
    if longest > TYPO_MAX_CHARS:
        return False
    return within(s.translate(_OCR), t.translate(_OCR), max(1, min(cap, int(TYPO_SHARE * longest))))


def garbled(t: str, others: Forms) -> bool:
    """Whether ``t``, a word (or figure) whose count differs between the texts, has a damaged (or
    repaired) twin among ``others``, the words whose count moved the other way (each with its
    OCR reading, :class:`Forms`): a typo of it or a merge with a neighbour ("1986" and
    "19a86", "one" and "0neof" from "one of"). A noisy stretch the matcher misaligned puts the
    two in different blocks. Only digits changed ("600" and "500") is no damage."""
    o = ocr(t)
    lo = len(o)
    # a typo: within a third of the longer's characters (the length checks first: they are
    # cheap); against a word no longer than t, a third of t's, worked out once
    k_lo = max(1, int(TYPO_SHARE * lo))
    long_o = lo > TYPO_MAX_CHARS
    # a number's twin has letters in it: two numbers differ in digits only, never damage (the
    # last test below), so they are not compared
    for u, v in (others.lettered if t.isdigit() else others.all):
        lv = len(v)
        if lv > lo:
            if lv > lo + MERGE_CHARS:
                continue
            if not (v.startswith(o) or v.endswith(o)):  # not t merged with a neighbour
                k = max(1, int(TYPO_SHARE * lv))
                if lv - lo > k or lv > TYPO_MAX_CHARS or not within(o, v, k):
                    continue
        elif not (lo > lv > 1 and (o.startswith(v) or o.endswith(v))):  # nor a piece of t
            if lo - lv > k_lo or long_o or not within(o, v, k_lo):
                continue
        if noise_like([t], [u], _unmoved):
            return True
    return False


def _unmoved(_: str) -> bool:
    """:func:`noise_like`'s ``moved`` for a pair of single words: none moved."""
    return False


class Forms:
    """The words whose count fell from one text to the other, each with its OCR reading
    (:func:`ocr`): ``all``, and ``lettered``, those not all digits. ``diff``: each word's count
    in the earlier text less its count in the later, where they differ (:func:`count_changes`);
    ``sign`` 1: the words the later text has fewer of, -1: more of. Listed when first read: most
    pairs never read them (:func:`garbled` does, for a changed figure or for new words), and
    listing them was ~7% of a pair's test."""

    __slots__ = ("_diff", "_sign", "_all", "_lettered")

    def __init__(self, diff: Mapping[str, int], sign: int):
        self._diff, self._sign = diff, sign
        self._all: list[tuple[str, str]] | None = None
        self._lettered: list[tuple[str, str]] | None = None

    @property
    def all(self) -> list[tuple[str, str]]:
        if self._all is None:
            sign = self._sign
            self._all = [(u, ocr(u)) for u, n in self._diff.items() if n * sign > 0]
        return self._all

    @property
    def lettered(self) -> list[tuple[str, str]]:
        if self._lettered is None:
            self._lettered = [f for f in self.all if not f[0].isdigit()]
        return self._lettered


def count_changes(fell: list[str], grew: list[str]) -> dict[str, int]:
    """Each word's count in ``fell`` less its count in ``grew``, the words whose counts differ
    only: given the tokens of two texts' changed blocks (and of whatever else was not aligned),
    what any word's count changed by between the whole texts (what an alignment keeps adds the
    same to both). (A loop over a dict: two ``Counter``s of a pair's ~50 block words cost more
    in their set-up than in counting.)"""
    diff: dict[str, int] = {}
    get = diff.get
    for t in fell:
        diff[t] = get(t, 0) + 1
    for t in grew:
        diff[t] = get(t, 0) - 1
    return {t: n for t, n in diff.items() if n}


@lru_cache(maxsize=1 << 16)
def ocr(word: str) -> str:
    """A word as OCR misreads digits: its letters that look like digits read as those digits."""
    return word.translate(_OCR)


def noise_like(old: list[str], new: list[str], moved) -> bool:
    """Whether a typo-sized block is noise: not when it brings a polarity word in (includes ->
    excludes) or takes one out, nor when only digits changed ("600" -> "500", "4th" -> "5th",
    "iso9002" -> "iso9302", a digit added or dropped); yes when letters changed ("proft" for
    "profit") or digits and letters mixed anew ("board2" for "board", "l987" for "1987")."""
    if any(t in POLARITY_WORDS and not moved(t) for t in (new or old)):
        return False
    before, after = magnitudes(old), magnitudes(new)
    if before and after and before != after:
        return False  # another magnitude: the figure changed by a factor ("mln" -> "bln")
    s, t = "".join(old), "".join(new)
    digits_s, digits_t = _DIGITS.sub("", s), _DIGITS.sub("", t)
    letters_s, letters_t = _NON_DIGITS.sub("", s), _NON_DIGITS.sub("", t)
    if letters_s != letters_t:
        return True
    if letters_s and not (digits_s and digits_t):
        return True  # digits glued to a word, or gone from one
    return digits_s == digits_t


def magnitudes(words: list[str]) -> list[str]:
    """The magnitudes ``words`` name, in order, each spelling by its unit's name."""
    return [UNITS[t] for t in words if UNITS.get(t) in MAGNITUDES]


def same_units(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` spells ``old`` with other spellings of the same units, word for word
    ("cents" -> "cts", "million" -> "mln"): style, not a change."""
    return len(old) == len(new) and old != new and all(
        a == b or a in UNITS and UNITS[a] == UNITS.get(b) for a, b in zip(old, new))


def opcodes(ta: list[str], tb: list[str], at_a: int = 0, at_b: int = 0) -> list[tuple[str, int, int, int, int]] | None:
    """The opcodes of ``ta[at_a:]`` and ``tb[at_b:]`` (positions in ``ta`` and ``tb``), aligned
    on their longest common subsequence (rapidfuzz's Indel, C++; the blocks
    ``difflib.SequenceMatcher`` gives, at a fraction of its cost), the common head and tail cut
    off first: a revision usually changes one place, and the matcher then sees a few tokens, not
    the story. None when what is left is longer than :data:`MAX_ALIGN_TOKENS` on either side
    (the matcher's cost grows with the product of the lengths: 100,000-word texts changed
    throughout took 25 s).

    (A greedy walk that resumes after each block at the nearest two shared tokens was tried: it
    halved the cost on noisy copies but paired far-apart tokens in dense noise, and 3% noise
    copies kept as duplicates fell from 0.99 to 0.93-0.96 on the suite.)
    """
    lo = common_prefix(ta, tb, at_a, at_b)
    return aligned(ta, tb, at_a + lo, at_b + lo, common_suffix(ta, tb, min(len(ta) - at_a, len(tb) - at_b) - lo))


def aligned(ta: list[str], tb: list[str], a0: int, b0: int, hi: int) -> list[tuple[str, int, int, int, int]] | None:
    """:func:`opcodes` of ``ta[a0:]`` and ``tb[b0:]`` when they end with ``hi`` tokens in common
    and the caller knows what they start with in common is behind ``a0`` and ``b0``."""
    la, lb = len(ta) - hi, len(tb) - hi
    if max(la - a0, lb - b0) > MAX_ALIGN_TOKENS:
        return None
    ops = _merged(Indel.opcodes(ta[a0:la], tb[b0:lb]))
    return [(op, i1 + a0, i2 + a0, j1 + b0, j2 + b0) for op, i1, i2, j1, j2 in ops]


def _merged(ops) -> list[tuple[str, int, int, int, int]]:
    """A longest-common-subsequence alignment's opcodes (insert and delete only) with each run of
    changes between two equal runs as one block, a ``replace`` when it both drops and adds."""
    out: list[tuple[str, int, int, int, int]] = []
    run = None
    for op in ops:
        tag, i1, i2, j1, j2 = op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end
        if tag == "equal":
            if run is not None:
                out.append(run)
                run = None
            out.append((tag, i1, i2, j1, j2))
        elif run is None:
            run = (tag, i1, i2, j1, j2)
        else:
            a1, b1 = run[1], run[3]
            run = ("replace", a1, i2, b1, j2)
    if run is not None:
        out.append(run)
    return [("replace" if t != "equal" and i2 > i1 and j2 > j1 else t, i1, i2, j1, j2) for t, i1, i2, j1, j2 in out]


def inserted_at(ta: list[str], tb: list[str], k: int, probe: int = 6, reach: int = 400) -> bool:
    """Whether ``tb`` has tokens inserted at ``k``: the earlier text's next ``probe`` tokens come
    later in ``tb`` (within ``reach``) rather than replaced."""
    want = ta[k:k + probe]
    if len(want) < probe:
        return False
    first = want[0]
    for p in range(k + 1, min(len(tb) - probe, k + reach) + 1):
        if tb[p] == first and tb[p:p + probe] == want:
            return True
    return False


def common_prefix(ta: list[str], tb: list[str], at_a: int = 0, at_b: int = 0) -> int:
    """How many tokens ``ta[at_a:]`` and ``tb[at_b:]`` start with in common: the first pair that
    differs, found in C (``map`` and ``compress`` over the two lists; a loop in Python cost
    more than the rest of a pair, a binary search on slices twice this)."""
    n = min(len(ta) - at_a, len(tb) - at_b)
    return next(compress(count(), map(ne, islice(ta, at_a, None), islice(tb, at_b, None))), max(n, 0))


def common_suffix(ta: list[str], tb: list[str], most: int) -> int:
    """How many tokens (at most ``most``) the lists end with in common."""
    return next(compress(count(), map(ne, islice(reversed(ta), max(most, 0)), reversed(tb))), max(most, 0))


def excerpted(ta: list[str], tb: list[str]) -> list[int]:
    """The positions of ``ta`` that excerpt ``tb`` quotes, in the order it quotes them: ``tb``
    is covered from left to right by the longest runs (of at least :data:`KEPT_RUN` tokens) that
    occur anywhere in ``ta`` (an excerpt need not keep the story's order: key points may quote
    the standfirst last); between two runs, what the story has between them is kept too when it
    is at most :data:`SMALL_BLOCK` tokens (a word dropped or changed inside a quoted sentence,
    "did not approve"), else it is what the excerpt left out. Words of ``tb`` in no run read as
    inserted, except a few last words that start the story's words after the last run (a teaser
    cut inside a word or a number: "... for 12" of "... for 125 mln"), which keep those and the
    story's next word. A
    ``tb`` in no run at all quotes nothing of ``ta``: all of ``ta`` is kept (it is
    compared with the whole story, as a text that is no excerpt is; cut to nothing, every word
    of it would read as inserted, an addition).

    (An alignment in order, longest common subsequence or longest blocks first, pairs an
    excerpt's words with stray copies of them in the runs it left out, or cannot reach a
    sentence it quotes out of order.)"""
    # the places in ta of the pairs of words tb has (only those are looked up), found in C: a
    # loop over every pair of the story in Python was most of an excerpt's cost
    pairs = list(zip(ta, islice(ta, 1, None)))
    at: dict[tuple[str, str], list[int]] = {}
    for p in compress(range(len(pairs)), map(set(zip(tb, islice(tb, 1, None))).__contains__, pairs)):
        at.setdefault(pairs[p], []).append(p)
    runs: list[tuple[int, int]] = []  # (start in ta, length), in tb's order
    j, end = 0, 0  # where the last run ended in ta: a run that goes on from there wins a tie
    covered = 0  # where the last run ended in tb
    while j < len(tb) - 1:
        best, most = -1, 0
        where = at.get((tb[j], tb[j + 1]), ())
        if len(where) > 2 * RUN_STARTS:  # a common pair of words: its places nearest the last run
            k = bisect_left(where, end)
            where = where[max(0, k - RUN_STARTS):k + RUN_STARTS]
        for p in where:
            n = 2
            while j + n < len(tb) and p + n < len(ta) and ta[p + n] == tb[j + n]:
                n += 1
            if n > most or n == most and abs(p - end) < abs(best - end):
                best, most = p, n
        if most >= KEPT_RUN:
            runs.append((best, most))
            j += most
            end = best + most
            covered = j
        else:
            j += 1
    if not runs:
        return list(range(len(ta)))
    keep: list[int] = []
    last = 0  # the story's start: a change before the first run is kept like one between runs
    for p, n in runs:
        if 0 <= p - last <= SMALL_BLOCK:
            keep += range(last, p)
        keep += range(p, p + n)
        last = p + n
    cut = tb[covered:]
    if len(ta) - last <= SMALL_BLOCK:
        keep += range(last, len(ta))
    elif 0 < len(cut) <= SMALL_BLOCK and "".join(ta[last:last + len(cut)]).startswith("".join(cut)):
        keep += range(last, last + len(cut) + 1)  # and the word after: the story goes on
    return keep
