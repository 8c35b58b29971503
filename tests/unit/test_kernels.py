"""Every Numba kernel against its slow reference (tests/reference.py), driven from one table."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference import KERNELS, edit_runs_ref, fused, semi_global_dp_ref

ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
rng = random.Random(1234)


def _words(n: int) -> bytes:
    vocab = [b"the", b"a", b"company", b"said", b"profits", b"rose", b"in", b"1987", b"dlrs", b"mln", b"interbank", b"x"]
    return b" ".join(rng.choice(vocab) for _ in range(n))


SAMPLE_TEXTS = [b"", b"a", b"ab cd", b"one two three four", _words(5), _words(6), _words(40), _words(300), b"x" * 17, b"abcdefgh ijklmnopq"]
SIG_PAIRS = [(b"", b""), (b"", b"abc"), (b"kitten", b"sitting"), (b"abcdef", b"abcdef"), (b"abc", b"xyz"),
             (bytes(rng.choice(ALPHABET) for _ in range(40)), bytes(rng.choice(ALPHABET) for _ in range(35)))]

RAW_TEXTS = [b"", b"  ", b"a", b"Hello,  World!\n\tFoo_bar", b"A-B C\x1cD", b"MiXeD 123 &amp; <b>", b"...",
             b" lead and trail ", b"One two THREE four five six", _words(300), b"abcdefgh ijklmnopq rstuvwxyz0123456"]

# Every token kind: Chinese, Japanese (kanji, kana, the prolonged sound mark, Script=Common),
# Thai with its vowel and tone marks, Lao, Khmer, Myanmar, Korean and Latin with accents
# (spaced), mixed text, a mark at the start of a token, and a text cut inside a character.
SCRIPT_TEXTS = ["新华社北京1月1日电 国家主席江泽民发表新年讲话", "東京都は2日、コーヒーの価格を発表した", "ที่ดี คนไทย ไปโรงเรียน",
                "ສະບາຍດີ ປະເທດລາວ", "ព្រះរាជាណាចក្រកម្ពុជា", "မြန်မာနိုင်ငံ", "한국 정부는 2일 발표했다", "café résumé naïve",
                "Obama说 美国 will 继续 support 台湾2024年", "\u0301x \u0e31ก", "中" * 40, "a中b国c", "单"]
UNICODE_TEXTS = [t.encode("utf-8") for t in SCRIPT_TEXTS]

# One row per kernel: the argument tuples fed to kernel and reference alike.
CASES = {
    "canonical (fused)": [(t.decode(), lo, pu) for t in RAW_TEXTS for lo in (True, False) for pu in (True, False)],
    "minhash (fused)": [(t, kw, s, cl) for t in RAW_TEXTS for kw in (True, False) for s in (1, 5) for cl in (False, True)],
    "ld_signature (fused)": [(t, n, c, f, k, 7, ALPHABET) for t in RAW_TEXTS + SAMPLE_TEXTS
                             for n, c, f, k in ((4, 16, 8, 0), (6, 5, 2, 3), (2, 3, 4, 2), (8, 2, 2, 1))],
    "digest (fused)": [(t,) for t in RAW_TEXTS],
    "combine_words": [([rng.randrange(2**64) for _ in range(n)], w) for n in (0, 1, 3, 5, 6, 50) for w in (1, 2, 5, 9)],
    "char_shingles": [(t, s) for t in SAMPLE_TEXTS for s in (1, 3, 5, 9)],
    "byte_grams": [(t, s, sb) for t in SAMPLE_TEXTS + [b"", b"ab", b"abcdefgh", b"\xff" * 20] for s in (2, 5, 8) for sb in (0, 3)],
    "gram_jaccards": [(a, b) for a in SAMPLE_TEXTS + RAW_TEXTS[-3:] for b in SAMPLE_TEXTS[::2] + [a, a[:-3] + b"x19", a + b" 1988"]]
    + [(b"profit 1987 rose 12 pct", b"profit 1986 rose 15 pct"), (b"a" * 30, b"a" * 31), (bytes(range(256)), bytes(range(255, -1, -1)))],
    "near_word_share": [(a, b) for a in SAMPLE_TEXTS + RAW_TEXTS[-3:] for b in SAMPLE_TEXTS[::2] + [a, a[:-3] + b"x19", a + b" 1988"]]
    + [(b"the fed added reserves via three-day repurchases", b"the fed added reserves via customer repurchases"),
       (b"the fed added reserves", b"teh fed adde reservess"), (b"a b a b", b"a b b"), (b"word " * 3, b"wrod wodr word"),
       (b"x" * 40 + b" y", b"x" * 39 + b" y"), (b"  spaced   out  ", b"spaced  ot")],
    "tokens (fused)": [(t, s, u) for t in UNICODE_TEXTS + RAW_TEXTS for s, u in ((5, 5), (5, 3), (2, 1))],
    "char count (fused)": [(t,) for t in UNICODE_TEXTS + RAW_TEXTS + ["ＡＢＣ１２３ 全角".encode(), "é\u0301 ﬁ".encode()]],
    "unicode_scan": [(tuple(ts), fold) for fold in (True, False) for ts in (
        SCRIPT_TEXTS,
        # composing marks, an expanding character, past the tables, Traditional, kana, a Kangxi
        # radical (NFKC makes Han of it), a trailing jamo, Hebrew points out of and in order
        ["", "plain", "e\u0301", "a\u0323\u0301", "a\u0301\u0323", "\u00bd", "\U0004e000x", "國語", "国語かな",
         "\u2f00", "한\u11a8", "\u05d0\u05b4\u05b0", "\u05d0\u05b0\u05b4"])],
    "char sketch (fused)": [(t, s, sb, k, b, r) for t in RAW_TEXTS for s, sb, k, b, r in ((8, 3, 64, 16, 4), (5, 3, 32, 8, 4), (3, 0, 16, 5, 3))],
    "oph_minhash": [(list(range(n)), k, seed) for n in (0, 1, 2, 7, 100, 1000) for k in (8, 64, 128) for seed in (1, 99)],
    "classic_minhash": [(list(range(0, 9 * n, 9)), k, 5) for n in (0, 1, 30) for k in (8, 32)],
    "band_keys": [([rng.randrange(2**32) for _ in range(128)], b, r, s) for b, r in ((25, 5), (32, 4), (1, 1)) for s in (1, 3)],
    "digest128": [(t,) for t in SAMPLE_TEXTS + [bytes(range(256)) * 3, b"y" * 15, b"y" * 16, b"y" * 33]],
    "levenshtein_bounded": [(a, b, bound) for a, b in SIG_PAIRS for bound in (0, 1, 2, 5, 100)],
    "semi_global": [(a, b) for a, b in SIG_PAIRS if len(b) <= 20] + [(b"bcd", b"xxabcdyy"), (b"abc", b""), (b"hello", b"say hallo there")],
    "semi_global_distance": [(a, b) for a, b in SIG_PAIRS if len(b) <= 20]
    + [(b"bcd", b"xxabcdyy"), (b"abc", b""), (b"", b"abc"), (b"hello", b"say hallo there"), (bytes(range(250, 256)), bytes(range(256)))],
    "evidence_sketch": [(t, k) for t in SAMPLE_TEXTS + RAW_TEXTS[:4] + [b"", b"ab", b"abcdefgh", b"price 12.5 vs 13.75"]
                        for k in (None, (7, 2**64 - 3))],
    "edit_runs": [(a, b, g) for a, b in SIG_PAIRS + [(b"aaaXaaaaYYYYaaa", b"aaaaaaaaaaa")] for g in (0, 2)],
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_reference(name: str) -> None:
    case = KERNELS[name]
    assert CASES[name], f"no inputs for {name}"
    for args in CASES[name]:
        assert case.kernel(*args) == case.reference(*args), (name, args)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200), st.booleans(), st.booleans())
def test_canonical_kernel_equals_python_on_any_ascii(text: str, lower: bool, punct: bool) -> None:
    case = KERNELS["canonical (fused)"]
    assert case.kernel(text, lower, punct) == case.reference(text, lower, punct)


@given(st.binary(max_size=24), st.binary(max_size=24), st.integers(0, 30))
def test_bounded_levenshtein_property(a: bytes, b: bytes, bound: int) -> None:
    case = KERNELS["levenshtein_bounded"]
    assert case.kernel(a, b, bound) == case.reference(a, b, bound)


@given(st.binary(max_size=8), st.binary(max_size=12))
def test_semi_global_property(a: bytes, b: bytes) -> None:
    case = KERNELS["semi_global"]
    assert case.kernel(a, b) == case.reference(a, b)


@st.composite
def _signature_pairs(draw, max_size: int = 200) -> tuple[bytes, bytes]:
    """Two signatures across the kernels' 64-symbol word boundaries: unrelated, or one an edited
    copy of the other (few edits, long matching stretches: the tracebacks near-duplicates take)."""
    alphabet = draw(st.sampled_from([b"ab", b"abcd", ALPHABET, bytes(range(256))]))
    sym = st.sampled_from(list(alphabet))
    a = draw(st.lists(sym, max_size=max_size))
    if draw(st.booleans()):
        return bytes(a), bytes(draw(st.lists(sym, max_size=max_size)))
    b = list(a)
    for _ in range(draw(st.integers(0, 12))):
        at = draw(st.integers(0, len(b)))
        kind = draw(st.sampled_from(["ins", "del", "sub"]))
        if kind == "ins":
            b.insert(at, draw(sym))
        elif b:
            at = min(at, len(b) - 1)
            if kind == "del":
                del b[at]
            else:
                b[at] = draw(sym)
    return (bytes(a), bytes(b)) if draw(st.booleans()) else (bytes(b), bytes(a))


@given(_signature_pairs(), st.sampled_from([0, 0, 1, 3]))
def test_edit_runs_property(pair: tuple[bytes, bytes], merge_gap: int) -> None:
    # the bit-parallel kernel's traceback takes the cell-by-cell DP's steps: same distance, same runs
    a, b = pair
    assert KERNELS["edit_runs"].kernel(a, b, merge_gap) == edit_runs_ref(a, b, merge_gap)


@given(_signature_pairs())
def test_semi_global_distance_property(pair: tuple[bytes, bytes]) -> None:
    a, b = pair
    assert KERNELS["semi_global_distance"].kernel(a, b) == semi_global_dp_ref(a, b) == KERNELS["semi_global"].kernel(a, b)


def test_semi_global_dp_ref_is_the_brute_force() -> None:
    for a, b in CASES["semi_global_distance"]:
        assert semi_global_dp_ref(a, b) == KERNELS["semi_global_distance"].reference(a, b), (a, b)


def test_alignment_kernels_on_page_sized_signatures() -> None:
    # long signatures (700 symbols, 11 words per column; pages have ~2,000) with a replaced block and
    # scattered edits, against the references (too slow for the property tests at this size)
    r = random.Random(7)
    a = bytes(r.choice(ALPHABET) for _ in range(700))
    b = bytearray(a)
    b[300:330] = bytes(r.choice(ALPHABET) for _ in range(25))
    for _ in range(10):
        b[r.randrange(len(b))] = r.choice(ALPHABET)
    b = bytes(b)
    assert KERNELS["edit_runs"].kernel(a, b) == edit_runs_ref(a, b)
    assert KERNELS["semi_global_distance"].kernel(b[100:600], a) == semi_global_dp_ref(b[100:600], a)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=60), st.sampled_from([8, 16, 128]))
def test_oph_property(hashes: list[int], k: int) -> None:
    case = KERNELS["oph_minhash"]
    assert case.kernel(hashes, k, 1) == case.reference(hashes, k, 1)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300), st.sampled_from([(4, 16), (3, 4), (8, 2)]))
def test_signature_property(text: str, nc: tuple[int, int]) -> None:
    n, c = nc
    data = text.encode("ascii")
    case = KERNELS["ld_signature (fused)"]
    assert case.kernel(data, n, c, 4, 1, 7, ALPHABET) == case.reference(data, n, c, 4, 1, 7, ALPHABET)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120), st.sampled_from([1, 3, 5]), st.booleans())
def test_fused_minhash_property(text: str, size: int, kind_word: bool) -> None:
    case = KERNELS["minhash (fused)"]
    data = text.encode("ascii")
    assert case.kernel(data, kind_word, size, False) == case.reference(data, kind_word, size, False)


@given(st.text(alphabet=st.sampled_from("中国人民日报 abcXYZ1,.ーあア\u0e01\u0e31\u0301é한\u1780"), max_size=80),
       st.sampled_from([(5, 5), (5, 2), (3, 4)]))
def test_tokens_property(text: str, sizes: tuple[int, int]) -> None:
    case = KERNELS["tokens (fused)"]
    data = text.encode("utf-8")
    assert case.kernel(data, *sizes) == case.reference(data, *sizes)


def test_a_text_cut_inside_a_character_keeps_its_bytes() -> None:
    """Not valid UTF-8 (the wrappers refuse it): the kernel reads no byte past the text."""
    cut = "长江".encode("utf-8")[:-1]
    out = fused(cut + b" " + cut)
    assert out["canonical"] == cut + b" " + cut and out["n_shingles"] == 1


@given(st.binary(max_size=200))
def test_digest_property(data: bytes) -> None:
    case = KERNELS["digest128"]
    assert case.kernel(data) == case.reference(data)


@given(st.binary(max_size=120), st.binary(max_size=120), st.sampled_from([b"0123456789ab ", b"ab", bytes(range(256))]))
def test_gram_jaccards_on_any_pair(a: bytes, b: bytes, alphabet: bytes) -> None:
    # a small alphabet makes many equal grams (the table's probing and the both-sides state)
    a, b = bytes(alphabet[x % len(alphabet)] for x in a), bytes(alphabet[x % len(alphabet)] for x in b)
    case = KERNELS["gram_jaccards"]
    assert case.kernel(a, b) == case.reference(a, b)


@given(st.lists(st.sampled_from([b"rate", b"rates", b"rat", b"tare", b"fed", b"fde", b"x", b"xy", b"yx", b"1987", b"1988"]),
                max_size=30),
       st.lists(st.sampled_from([b"rate", b"rates", b"rat", b"tare", b"fed", b"fde", b"x", b"xy", b"yx", b"1987", b"1988"]),
                max_size=30))
def test_near_word_share_on_any_pair(a: list[bytes], b: list[bytes]) -> None:
    case = KERNELS["near_word_share"]
    x, y = b" ".join(a), b" ".join(b)
    assert case.kernel(x, y) == case.reference(x, y)


def _blocks_case(words: list[bytes], anchors: list[tuple[int, int]]) -> tuple[bytes, list[int], list[int]]:
    """A text of ``words`` and the keys (with counts) of the word positions in ``anchors``."""
    from tests.reference import span_key_ref

    text = b" ".join(words)
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    keys, hots = [], []
    for i, count in anchors:
        k = span_key_ref(text, starts[i % len(words)])
        if k and k not in keys:
            keys.append(k)
            hots.append(count)
    return text, keys, hots


@given(st.lists(st.sampled_from([b"our", b"standards", b"the", b"trust", b"principles", b"acme", b"rose", b"12.5",
                                 b"newsletter", b"x" * 30]), min_size=1, max_size=150),
       st.lists(st.tuples(st.integers(0, 149), st.integers(1, 4)), max_size=12), st.sampled_from([2, 3]))
def test_block_mask_on_any_text(words: list[bytes], anchors: list[tuple[int, int]], hot: int) -> None:
    # repeated words make a key recur at several word starts; 30-byte words make blocks run
    # past MAX_BLOCK between anchors
    text, keys, hots = _blocks_case(words, anchors)
    case = KERNELS["block_mask"]
    assert case.kernel(text, keys, hots, hot) == case.reference(text, keys, hots, hot)


def test_block_mask_marks_a_footer_of_hot_sentences() -> None:
    from tests.reference import block_mask_ref

    body = b"acme corp said on tuesday its first quarter profit rose to 12 mln dlrs from ten mln a year earlier"
    foot = b"sign up for our morning newsletter to get the top stories delivered to your inbox every day"
    text, keys, hots = _blocks_case((body + b" " + foot).split(), [(0, 1), (len(body.split()), 3)])
    mask = KERNELS["block_mask"].kernel(text, keys, hots)
    assert mask == block_mask_ref(text, keys, hots)
    assert mask.index(1) == len(body) + 1 and all(mask[len(body) + 1:]) and not any(mask[:len(body) + 1])


CASES["block_mask"] = [_blocks_case(_words(n).split(), a) for n, a in
                       [(1, []), (8, [(0, 3)]), (40, [(0, 1), (5, 3), (9, 2)]), (300, [(3, 3), (200, 4), (250, 2)])]]


CASES["uncarried_hot"] = [([], [], [7]), ([5, 6], [1, 2], []), ([5, 6], [3, 1], [5]), ([5, 6], [3, 4], [6, 5]),
                          ([5, 6, 9], [3, 4, 3], [6, 5]), ([1, 2, 3], [9, 9, 9], [3, 2, 1, 0])]


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 5)), max_size=20), st.lists(st.integers(1, 12), max_size=20),
       st.sampled_from([2, 3]))
def test_uncarried_hot_on_any_keys(keyed: list[tuple[int, int]], other: list[int], hot: int) -> None:
    case = KERNELS["uncarried_hot"]
    keys, hots = [k for k, _ in keyed], [c for _, c in keyed]
    assert case.kernel(keys, hots, other, hot) == case.reference(keys, hots, other, hot)


_BODY = b"acme corp said on tuesday its first quarter profit rose to 12 mln dlrs from ten mln a year earlier".split()
_NOTICE = b"sign up for our morning newsletter to get the top stories delivered to your inbox every day".split()
_STANDARDS = b"our standards the trust principles govern how we report the news for every reader".split()


def _left_out_case(a_words, a_anchors, b_words, b_anchors, share_keys: bool = False):
    a, ak, ah = _blocks_case(a_words, a_anchors)
    b, bk, bh = _blocks_case(b_words, b_anchors)
    if share_keys:  # the earlier text has the later's block keys too (it carries them)
        ak, ah = ak + [k for k in bk if k not in ak], ah + [1 for k in bk if k not in ak]
    return a, ak, ah, b, bk, bh


CASES["left_out"] = [
    _left_out_case(_BODY * 3, [(0, 1)], _BODY * 3 + _NOTICE, [(0, 1), (3 * len(_BODY), 4)]),  # a notice only the copy has
    _left_out_case(_BODY * 3 + _STANDARDS, [(3 * len(_BODY), 5)], _BODY * 3 + _NOTICE, [(3 * len(_BODY), 4)]),
    _left_out_case(_BODY * 3 + _NOTICE, [(3 * len(_BODY), 4)], _BODY * 3 + _NOTICE, [(3 * len(_BODY), 4)]),  # both carry it
    _left_out_case(_BODY, [(0, 1)], _BODY + _NOTICE, [(len(_BODY), 4)]),  # too little left: compared whole
    _left_out_case(_BODY * 3, [(0, 1)], _BODY * 3 + _NOTICE, [(3 * len(_BODY), 4)], share_keys=True),
    _left_out_case(_BODY * 3, [], _BODY * 3, []),
]


@given(st.lists(st.sampled_from([b"our", b"standards", b"the", b"trust", b"acme", b"rose", b"12.5", b"newsletter",
                                 b"x" * 30]), min_size=1, max_size=80),
       st.lists(st.integers(0, 2), min_size=1, max_size=80),
       st.lists(st.tuples(st.integers(0, 79), st.integers(1, 4)), max_size=6),
       st.lists(st.tuples(st.integers(0, 79), st.integers(1, 4)), max_size=6),
       st.booleans(), st.sampled_from([2, 3]), st.sampled_from([0.3, 0.5, 0.9]), st.sampled_from([0, 20, 100]))
def test_left_out_on_any_pair(words: list[bytes], edits: list[int], a_anchors, b_anchors, share_keys: bool, hot: int,
                              shared: float, min_bytes: int) -> None:
    # the later text: the earlier's words, some dropped (0), kept (1) or doubled (2)
    later = [w for w, e in zip(words, edits + [1] * len(words)) for _ in range(e)] or words[:1]
    case = KERNELS["left_out"]
    args = (*_left_out_case(words, a_anchors, later, b_anchors, share_keys), hot, shared, min_bytes)
    assert case.kernel(*args) == case.reference(*args)


CASES["blocks_held"] = [(a, b, [0] * 3 + [1] * 20 + [2] * (len(b) - 23)) for a in SAMPLE_TEXTS[4:8] for b in SAMPLE_TEXTS[6:8]]


@given(st.binary(min_size=0, max_size=120), st.binary(min_size=0, max_size=120), st.lists(st.integers(0, 3), max_size=120),
       st.sampled_from([b"ab ", b"0123456789ab ", bytes(range(256))]))
def test_blocks_held_on_any_pair(a: bytes, b: bytes, marks: list[int], alphabet: bytes) -> None:
    # a small alphabet repeats grams across blocks and texts (a gram counted once, for its first block)
    a, b = bytes(alphabet[x % len(alphabet)] for x in a), bytes(alphabet[x % len(alphabet)] for x in b)
    blocks = (marks + [0] * len(b))[:len(b)]
    case = KERNELS["blocks_held"]
    assert case.kernel(a, b, blocks) == case.reference(a, b, blocks)
