"""The compiled revision test against its reference (``engine.revisions.detect``, in Python).

Generated pairs: a story and an edit of it (words replaced, inserted, dropped, moved; figures
changed; letters damaged as OCR and typists damage them; markers and polarity words; Chinese),
with and without the headline lengths. The kernel must give the reference's result.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdedup.engine import revision_kernel as RK
from streamdedup.engine import revisions as R

VOCAB = ("acme corp said its first quarter profit was mln dlrs the of to in and for on by with reuters "
         "rose fell not no never corrected update adds reporting editing copyright 1987 1986 600 500 "
         "4th 1980s 12 125 bln billion million march 3 iso9002 b747 l987 4oo proft profit2 0ne oneof "
         "中 国 1998 年 月 日 电 新 华 社 更 正 增 长 万 亿").split()


def _same(a: str, b: str, ha: int = R.HEAD_CHARS, hb: int | None = None) -> None:
    want = R.detect(a, b, ha, hb)
    got = RK.detect(a, b, ha, hb)
    assert (got.revised, got.kinds, got.changed, got.typos) == (want.revised, want.kinds, want.changed, want.typos), (a, b)


def _edit(words: list[str], rng: random.Random, n: int) -> list[str]:
    out = list(words)
    for _ in range(n):
        op = rng.randrange(6)
        k = rng.randrange(len(out) + 1)
        if op == 0 and out:
            out[min(k, len(out) - 1)] = rng.choice(VOCAB)
        elif op == 1:
            out.insert(k, rng.choice(VOCAB))
        elif op == 2 and out:
            del out[min(k, len(out) - 1)]
        elif op == 3 and out:
            w = out[min(k, len(out) - 1)]
            j = rng.randrange(len(w))
            out[min(k, len(out) - 1)] = w[:j] + rng.choice("o0l1i5sb8xz") + w[j + 1:]
        elif op == 4 and len(out) > 4:
            a = rng.randrange(len(out) - 3)
            out[a:a + 3] = []
        elif op == 5 and out:
            k = min(k, len(out) - 1)
            out[k:k + 1] = [out[k] + (out[k + 1] if k + 1 < len(out) else "")]
    return out


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCAB), min_size=0, max_size=60), st.integers(0, 2 ** 32), st.integers(0, 6),
       st.booleans(), st.integers(0, 40))
def test_kernel_gives_the_reference_result(words: list[str], seed: int, edits: int, heads: bool, cut: int) -> None:
    rng = random.Random(seed)
    later = _edit(words, rng, edits)
    a, b = " ".join(words), " ".join(later)
    if heads:
        _same(a, b, min(cut, len(a)), min(cut, len(b)))
    else:
        _same(a, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(VOCAB), min_size=20, max_size=80), st.integers(0, 2 ** 32))
def test_excerpts_give_the_reference_result(words: list[str], seed: int) -> None:
    rng = random.Random(seed)
    story = words * 2
    a0 = rng.randrange(len(story) - 10)
    part = _edit(story[a0:a0 + rng.randrange(3, len(story) // 2)], rng, rng.randrange(3))
    _same(" ".join(story), " ".join(part))


@pytest.mark.parametrize(("a", "b"), [
    ("", ""), ("a", ""), ("", "a"), ("acme", "acme corp"), ("600 mln", "500 mln"),
    ("acme profit rose 600 mln dlrs", "acme profit rose 600 mln dlrs corrected"),
    ("中国经济增长 1998年", "中国经济增长 1999年 更正"),
])
def test_edge_cases(a: str, b: str) -> None:
    _same(a, b)
    _same(b, a)


def _blocks_ref(a: list[int], b: list[int]) -> list[tuple[int, int, int, int]]:
    from streamdedup.engine.revision_tokens import opcodes
    return [op[1:] for op in opcodes(a, b) or () if op[0] != "equal"]


def _blocks(a: list[int], b: list[int]) -> list[tuple[int, int, int, int]]:
    import numpy as np

    from streamdedup._kernels.revalign import aligned
    ha, hb = np.array(a, dtype=np.uint64) + np.uint64(1), np.array(b, dtype=np.uint64) + np.uint64(1)
    out = np.empty((len(a) + len(b) + 2, 4), dtype=np.int64)
    n = aligned(ha, 0, len(a), hb, 0, len(b), out)
    return [tuple(int(x) for x in r) for r in out[:n]]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=150), st.lists(st.integers(0, 3), max_size=150))
def test_alignment_picks_rapidfuzz_s_subsequence(a: list[int], b: list[int]) -> None:
    """Among longest common subsequences (many, on a 4-token alphabet) the same one."""
    assert _blocks(a, b) == _blocks_ref(a, b)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alignment_of_long_middles_picks_rapidfuzz_s_subsequence(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.randrange(50) for _ in range(2900)]
    b = [t if rng.random() < 0.7 else rng.randrange(60) for t in a]
    b = b[:1000] + [rng.randrange(5) for _ in range(400)] + b[1300:]
    assert _blocks(a, b) == _blocks_ref(a, b)


def test_the_blocks_read_without_the_digits_table_hold_no_digit_or_space() -> None:
    """The tokeniser classes a Han or Kana character without looking it up in the digits' table
    (``revtext.no_digit``): this Python's ``str`` must agree that none of them is one."""
    from streamdedup._kernels.revtext import no_digit

    chars = [c for c in range(0x3000, 0xFB00) if no_digit(c)]
    assert len(chars) > 20_000
    assert not [hex(c) for c in chars if chr(c).isdigit() or chr(c).isdecimal() or chr(c).isspace()]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 32), st.integers(1, 70), st.integers(2, 5))
def test_a_batch_cut_for_threads_gives_each_pair_its_own_answer(seed: int, n: int, threads: int) -> None:
    """``detect_many`` on several threads answers every pair as one kernel call over the whole
    batch does, in the batch's order, pairs of very different lengths included."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(VOCAB) for _ in range(rng.choice((3, 20, 400)))]
        pairs.append((" ".join(words).encode(), " ".join(_edit(words, rng, rng.randrange(5))).encode()))
    assert RK.detect_many(pairs, threads=threads) == RK.detect_many(pairs)


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=200), st.integers(1, 9))
def test_a_batch_is_cut_into_whole_parts_of_about_equal_bytes(sizes: list[int], threads: int) -> None:
    import numpy as np
    n = len(sizes)
    off = np.zeros(2 * n + 1, np.int64)
    np.cumsum([s for size in sizes for s in (size, size)], out=off[1:])
    cuts = RK._cuts(off, n, threads)
    assert cuts[0] == 0 and cuts[-1] == n and all(a < b for a, b in zip(cuts, cuts[1:]))
    assert len(cuts) - 1 <= max(1, min(threads, n // RK.MIN_PAIRS_A_THREAD))
    if len(cuts) > 2 and min(sizes) > 0:  # no part holds more than its share and one pair more
        share = off[-1] / (len(cuts) - 1)
        assert all(off[2 * b] - off[2 * a] <= share + 2 * max(sizes) for a, b in zip(cuts, cuts[1:]))
