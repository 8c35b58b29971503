"""One judgement everywhere: ``streamdedup explain`` (and the inspector, through the same
``judge_pair``) says what the engine decides for a stream of the two documents, and its exact
figures count the detector's tokens in every script."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from streamdedup.bench import hard_edits as H
from streamdedup.bench.corpus import load_reuters
from streamdedup.bench.corpus_cjk import load_peoples_daily
from streamdedup.cli.explain import explain_pair
from streamdedup.config import load_config
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state.base import MemoryStore
from tests.reference import shingle_hashes_ref

CFG = load_config(environ={})


@pytest.fixture(scope="module")
def stories():
    return [s for s in load_reuters() if 300 <= len(s.body.split()) <= 800][:400]


def engine_verdict(earlier: str, new: str) -> tuple[bool, np.ndarray]:
    """The engine's decision on the second of a two-document stream, and its figures."""
    d = Deduplicator(CFG, MemoryStore()).process([Document("a", earlier, 0), Document("b", new, 1)])
    return bool(d.relations[1] > 0), d.numbers[1]


def assert_same(earlier: str, new: str) -> None:
    out = explain_pair(earlier, new, CFG)
    dup, numbers = engine_verdict(earlier, new)
    assert out["is_duplicate"] == dup, (out["relation"], out["reasons"], earlier[:80], new[:80])
    if dup and out["relation"] != "exact":
        # the figures the engine records are explain's (float32 in the record)
        assert numbers[0] == pytest.approx(out["minhash_jaccard"], abs=1e-6)
        assert numbers[2] == pytest.approx(out["estimated_containment_b_in_a"], abs=1e-6)


def test_read_more_teasers_get_the_engine_verdict(stories) -> None:
    """Teasers ending in " Read more": with the earlier story's MinHash at its full width and
    without the candidate step, explain called a dozen of these 300 duplicates that a
    two-record run keeps unique (and a few the other way round)."""
    rng = random.Random(1)
    n = 0
    for s in stories[:300]:
        sents = H.sentences(s.body)
        if len(sents) < 4:
            continue
        assert_same(s.text, s.title + "\n" + " ".join(sents[:rng.choice((1, 2))]) + " Read more")
        n += 1
    assert n > 250


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_explain_agrees_with_a_two_document_run(stories, data) -> None:
    """Random pairs: a cut of one story (anywhere, any length) with words appended, against
    the story or another."""
    a = stories[data.draw(st.integers(0, len(stories) - 1))]
    b = stories[data.draw(st.integers(0, len(stories) - 1))] if data.draw(st.booleans()) else a
    words = b.text.split()
    lo = data.draw(st.integers(0, len(words) - 1))
    hi = data.draw(st.integers(lo + 1, min(len(words), lo + data.draw(st.sampled_from((20, 40, 80, 400))))))
    tail = data.draw(st.sampled_from(("", " Read more", " Full story on our site", " Reuter")))
    new = " ".join(words[lo:hi]) + tail
    if data.draw(st.booleans()):
        assert_same(a.text, new)
    else:
        assert_same(new, a.text)


def test_explain_counts_chinese_shingles_on_the_detector_tokens() -> None:
    """A Chinese text's exact shingles are shingles of characters, as the kernel hashes them:
    split on spaces, a 339-character text had 26 "shingles" and an exact Jaccard of 0.04
    against a MinHash estimate of 0.58."""
    arts = [s for s in load_peoples_daily() if 300 <= len(s.body) <= 1500][:20]
    fp = Fingerprinter(CFG.fingerprint)
    for s in arts:
        cut = s.text[: int(len(s.text) * 0.7)]
        out = explain_pair(s.text, cut, CFG)
        canon = fp.fingerprint_batch([s.text, cut]).canonical
        assert out["shingles"] == [len(set(shingle_hashes_ref(c, True, 5, 5))) for c in canon]
        assert abs(out["exact_jaccard"] - out["minhash_jaccard"]) < 0.2, (out["exact_jaccard"], out["minhash_jaccard"])
