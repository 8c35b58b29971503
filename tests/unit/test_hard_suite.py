"""The hard accuracy suite: its generators do what they claim, and a small run scores every kind."""

from __future__ import annotations

import html
import random
import re

import pytest
from rapidfuzz.distance import Levenshtein

from streamdedup.bench import hard_edits as H
from streamdedup.bench import hard_suite
from streamdedup.bench.truth import UNIQUE_C, UNIQUE_J
from streamdedup.bench.synthetic import LONG_FOOTERS
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters

TITLE = "ACME <ACM> SAYS FIRST QUARTER PROFIT ROSE"
BODY = (
    "Acme Corp said its first quarter net profit rose 12 pct to 45.2 mln dlrs, helped by\n"
    "strong demand for its industrial pumps in the U.S. and Europe.\n"
    "    \"We expect the second quarter to be as strong,\" chairman John Smith told\n"
    "reporters. The company's shares rose 1.5 dlrs to 38 dlrs in early trading on the\n"
    "New York Stock Exchange.\n"
    "    Acme Inc. also said it will build a new plant in Ohio at a cost of 120 mln dlrs,\n"
    "which will employ about 400 people when it opens in 1989.\n"
    "    Analysts said the results were above expectations, citing cost cuts and a\n"
    "weaker dollar that made the company's exports cheaper abroad.\n"
    " Reuter\n\x03"
)


@pytest.fixture(scope="module")
def long_stories():
    return [s for s in load_reuters() if s.date is not None and 400 <= len(s.body.split()) <= 800][:300]


@pytest.mark.parametrize("rate", hard_suite.NOISE_RATES)
def test_char_noise_has_its_rate_in_edit_distance(rate: float) -> None:
    text = f"{TITLE}\n{BODY}" * 4  # ~2,400 characters: a rate of 0.5% is a dozen edits
    for seed in range(5):
        noisy = H.char_noise(text, rate, random.Random(seed))
        edits = round(rate * len(text))
        distance = Levenshtein.distance(text, noisy)
        # each edit costs one; two adjacent edits can cancel or merge, rarely
        assert edits - max(2, edits // 10) <= distance <= edits, (rate, seed, distance, edits)


def test_generators_are_deterministic_with_a_seed() -> None:
    make = {
        "noise": lambda rng: H.char_noise(BODY, 0.02, rng),
        "compound": lambda rng: H.compound(TITLE, BODY + BODY, BODY, rng),
        "wraps": lambda rng: H.hyphen_wrapped(TITLE, BODY, rng),
        "entities": lambda rng: H.html_entities(TITLE, BODY, rng),
        "curly": lambda rng: H.curly_quotes(TITLE, BODY, rng),
    }
    for name, f in make.items():
        assert f(random.Random(3)) == f(random.Random(3)), name
    assert make["noise"](random.Random(3)) != make["noise"](random.Random(4))


def test_sentences_do_not_end_at_abbreviations() -> None:
    sents = H.sentences(BODY)
    assert sents[0].startswith("Acme Corp said") and sents[0].endswith("Europe.")
    assert any(s.startswith("Acme Inc. also said") and "Ohio" in s for s in sents)
    assert not any(s.endswith("U.S.") for s in sents)
    assert "Reuter" not in sents[-1] and "\x03" not in sents[-1]


def test_teasers_are_headline_plus_leading_sentences_in_range(long_stories) -> None:
    made = 0
    for story in long_stories:
        for k in (1, 2):
            t = H.teaser(story.title, story.body, k)
            if t is None:
                continue
            made += 1
            assert 30 <= len(t.split()) <= 60
            head, rest = t.split("\n", 1)
            assert head == story.title
            # the sentences are the start of the body (whitespace aside), so all of it is in the original
            assert " ".join(story.body.split()).startswith(rest) and len(rest.split()) < len(story.body.split()) / 5
            assert hard_suite.overlap(t, story.text)[1] == 1.0
    assert made > 200


def test_hyphen_wraps_keep_every_word_and_the_width() -> None:
    for seed in range(5):
        out = H.hyphen_wrapped(TITLE, BODY, random.Random(seed))
        lines = out.split("\n")
        assert max(len(line) for line in lines[1:]) <= 60
        hyphenated = [line for line in lines if re.search(r"[a-z]-$", line)]
        assert hyphenated, "a 34-60 column over this text breaks some long word"
        joined = re.sub(r"(?<=[A-Za-z])-\n", "", out)
        assert joined.split() == f"{TITLE}\n{H.clean_body(BODY)}".split()


def test_entities_and_curly_quotes_map_back_to_the_original() -> None:
    original = f"{TITLE}\n{H.clean_body(BODY)}"
    straight = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\xa0": " "})
    for seed in range(5):
        ent = H.html_entities(TITLE, BODY, random.Random(seed))
        assert "<" not in ent and ent.count("&") >= 3
        assert html.unescape(ent).translate(straight) == original
        curly = H.curly_quotes(TITLE, BODY, random.Random(seed))
        assert '"' not in curly and "'" not in curly
        assert curly.translate(straight) == original


def test_compound_copy_has_new_header_footer_and_keeps_most_sentences() -> None:
    body = BODY.replace(" Reuter\n\x03", "") * 2  # eight sentences
    donor = "The weather in the region was unusually mild for the season. Farmers welcomed the rain."
    out = H.compound(TITLE, body, donor, random.Random(1))
    lines = out.split("\n")
    assert lines[0].startswith("BC-ACME-") and TITLE not in out
    assert "(Wire) - " in lines[2] and "(Reporting by" in out and "@wire.example" in out
    kept = sum(1 for s in H.sentences(body) if s in out)
    # 8 sentences: one replaced, and 2-6 typos may damage a few more
    assert 2 <= kept <= 7
    assert H.compound(TITLE, BODY, donor, random.Random(1)) is None  # four sentences: too short


def test_near_miss_negatives_share_one_paragraph() -> None:
    earlier = load_reuters()[200]
    new_title, new_body = TITLE, BODY
    rng = random.Random(5)
    for make in (H.quoting_paragraph, H.background_lead):
        out = make(new_title, new_body, earlier.body, rng)
        if out is None:
            pytest.skip("story 200 has no background paragraph")
        paras = [" ".join(p.split()) for p in re.split(r"\n\s{2,}|\n\n", H.clean_body(earlier.body))[1:]]
        flat = " ".join(out.split())
        shared = [p for p in paras if p in flat]
        assert len(shared) == 1 and 25 <= len(shared[0].split()) <= 80
        assert " ".join(H.clean_body(new_body).split()[:10]) in flat
    assert H.background_lead(new_title, new_body, earlier.body, random.Random(5)).split("\n")[1] in " ".join(earlier.body.split())


@pytest.fixture(scope="module")
def small_stream():
    return hard_suite.build_stream(per_kind=10, seed=3, stories=2000)


def test_small_stream_has_every_kind_and_honest_negatives(small_stream) -> None:
    kinds = {}
    for it in small_stream:
        kinds.setdefault(it.kind, []).append(it)
    assert {k: len(v) for k, v in kinds.items() if k != "natural"} == {
        k: 10 for k in (*hard_suite.COPY_KINDS, *hard_suite.NEGATIVE_KINDS)}
    by_id = {it.id: it for it in kinds["natural"]}
    position = {it.id: i for i, it in enumerate(small_stream)}
    for kind in hard_suite.RELATED_NEGATIVES:
        for neg in kinds[kind]:
            jac, c_new, c_old = hard_suite.overlap(neg.text, by_id[neg.source].text)
            assert jac < UNIQUE_J and c_new < UNIQUE_C and c_old < UNIQUE_C and c_new >= hard_suite.NEAR_MISS_MIN_SHARE
            assert position[neg.source] < position[neg.id] and neg.truth is False
    footers = [n.text for n in kinds[hard_suite.FOOTER_NEGATIVE]]
    assert all(any(t.endswith(f) for f in LONG_FOOTERS) for t in footers)
    for kind in hard_suite.COPY_KINDS:
        assert all(it.truth and position[it.source] < position[it.id] for it in kinds[kind])
        assert len({it.source for it in kinds[kind]}) == 10  # distinct sources within a kind
    again = hard_suite.build_stream(per_kind=10, seed=3, stories=2000)
    assert [(it.id, it.text) for it in again] == [(it.id, it.text) for it in small_stream]


def test_a_small_hard_run_scores_and_diagnoses_every_kind() -> None:
    from streamdedup.bench.accuracy import run

    res = run(Config(), per_kind=10, seed=3, suite="hard", stories=2000, with_datasketch=False)
    s = res["streamdedup"]
    assert set(s["recall_per_kind"]) == set(hard_suite.COPY_KINDS)
    assert set(s["flagged_per_negative_kind"]) == set(hard_suite.NEGATIVE_KINDS)
    # typography only: canonicalisation makes these equal to their source
    assert s["recall_per_kind"]["curly quotes"] == s["recall_per_kind"]["html entities"] == 1.0
    assert s["recall_per_kind"]["noise 0.5%"] >= s["recall_per_kind"]["noise 3%"]
    for kind, r in s["recall_per_kind"].items():
        missed = round((1 - r) * 10)
        got = res["missed_per_kind"].get(kind, {"stages": {}})
        assert sum(got["stages"].values()) == missed, kind
        for ex in got.get("examples", []):
            assert ex["relation"] and 0 <= ex["exact_jaccard"] <= 1 and ex["bands"] > 0


def test_overlap_summary_measures_each_kind_against_its_source_by_the_suite_measure() -> None:
    """One summary serves both suites; each passes its own overlap (word shingles, character grams)."""
    from streamdedup.bench import hard_suite, lang_suite
    from streamdedup.bench.truth import Item

    story = "the harbour strike closed the port of call for a third day on monday " * 3
    stream = [Item("a", story, 0, "natural"), Item("a-copy", story, 1, "resend", "a"),
              Item("b", "港口罢工第三天关闭了港口" * 3, 2, "natural"),
              Item("b-tease", "港口罢工第三天", 3, "teaser", "b")]
    words, chars = hard_suite.overlap_summary(stream), lang_suite.overlap_summary(stream)
    assert words["resend"] == {"n": 1, "median_jaccard": 1.0, "median_containment": 1.0}
    assert chars["resend"]["median_jaccard"] == 1.0
    # a Chinese teaser is one "word" to word shingles and several character grams of its source
    assert chars["teaser"]["median_containment"] == 1.0 > words["teaser"]["median_containment"]
