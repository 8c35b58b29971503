"""The short-copies suite: its items are what they claim, and a small run scores every kind."""

from __future__ import annotations

import random

import pytest

from streamdedup.bench import short_edits as S
from streamdedup.bench import short_suite
from streamdedup.bench.corpus import load_reuters
from streamdedup.bench.hard_suite import overlap
from streamdedup.config import load_config


@pytest.fixture(scope="module")
def stream():
    return short_suite.reuters_stream(6, seed=3, stories=4000)


def test_a_teaser_sits_after_the_header_block() -> None:
    """The page opens with headline, standfirst, byline and dateline; the teaser is headline +
    the body's first sentences, so its words after the headline are not the page's."""
    rng = random.Random(2)
    st = next(s for s in load_reuters() if 400 <= len(s.body.split()) <= 800 and S.teaser_after_header(s, rng))
    page, teaser = S.web_page(st, rng), S.teaser_after_header(st, rng)
    lines = page.split("\n")
    assert lines[0] == st.title and lines[2].startswith("By ") and "(Wire) -" in lines[3]
    assert teaser.split("\n")[1].split()[:8] != lines[1].split()[:8]
    assert overlap(teaser, page)[1] >= 0.9  # the teaser's shingles are in the page


def test_every_kind_has_its_items_and_sources(stream) -> None:
    ids = [it.id for it in stream]
    assert len(ids) == len(set(ids))
    pos = {it.id: i for i, it in enumerate(stream)}
    kinds = {}
    for it in stream:
        if it.kind != "natural":
            kinds[it.kind] = kinds.get(it.kind, 0) + 1
            assert pos[it.source] < pos[it.id] and it.truth == (not it.kind.startswith("NEG"))
    en = [k for k in short_suite.COPY_KINDS + short_suite.NEGATIVE_KINDS if k != short_suite.ZH_TEASER]
    assert kinds == {k: 6 for k in en}


def test_near_misses_overlap_their_earlier_story_only_in_part(stream) -> None:
    text = {it.id: it.text for it in stream}
    for it in stream:
        if it.kind.startswith("NEG"):
            jac, c_new, _ = overlap(it.text, text[it.source])
            assert jac < 0.4 and c_new < 0.5, (it.kind, jac, c_new)


def test_zh_teasers_are_short_and_their_features_long() -> None:
    items = short_suite.zh_stream(5, seed=1)
    text = {it.id: it.text for it in items}
    teasers = [it for it in items if it.kind == short_suite.ZH_TEASER]
    assert len(teasers) == 5
    for it in teasers:
        assert 76 <= len(it.text) <= 127 and 5000 <= len(text[it.source]) <= 7100
        assert it.text[:60] in text[it.source].replace("\n", "")


def test_a_small_run_scores_every_kind() -> None:
    res = short_suite.run(load_config(environ={}), 4, seed=1, stories=3000)
    assert set(res["kinds"]) == set(short_suite.COPY_KINDS + short_suite.NEGATIVE_KINDS)
    assert all(k["n"] == 4 for k in res["kinds"].values())
    assert 0.0 <= res["near_misses_flagged"] <= 1.0
