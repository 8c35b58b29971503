"""Very short copies of long stories: their containment estimate is noise (one or two of 128
b-bit slots hold their shingles), so the exact embedding of their whole signature decides."""

from __future__ import annotations

import pytest

from streamdedup.bench import hard_edits as H
from streamdedup.bench.corpus import load_reuters
from streamdedup.config import load_config
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.verify import judge_pair
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state.base import MemoryStore

ON = load_config(environ={})
# both short-copy rules off: the exact embedding and the exact containment (which catches these too)
OFF = load_config(environ={"STREAMDEDUP_VERIFY__SHORT_COPY_RATIO": "0", "STREAMDEDUP_VERIFY__SHORT_EXACT_CONTAINMENT": "0"})


@pytest.fixture(scope="module")
def cards():
    """(story, its first 20-24 words) where the containment estimate is below contained_min_estimate."""
    fp = Fingerprinter(ON.fingerprint)
    out = []
    for s in load_reuters():
        if not 400 <= len(s.body.split()) <= 800:
            continue
        words = (s.title + " " + " ".join(H.sentences(s.body)[:1])).split()
        card = " ".join(words[:20 + len(out) % 5])
        j = judge_pair(fp.fingerprint_batch([s.text, card]), 0, 1, ON)
        if j.proposed and j.comparison.containment_b_in_a < ON.verify.contained_min_estimate:
            out.append((s.text, card))
        if len(out) == 12:
            break
    return out


def test_a_card_whose_estimate_is_noise_is_contained_in_its_story(cards) -> None:
    fp = Fingerprinter(ON.fingerprint)
    assert len(cards) == 12
    for story, card in cards:
        batch = fp.fingerprint_batch([story, card])
        on, off = judge_pair(batch, 0, 1, ON), judge_pair(batch, 0, 1, OFF)
        assert on.comparison.relation == "contained_in" and on.comparison.reasons[0].startswith("short text"), on
        assert not off.is_duplicate  # the rule, not the estimate, decides these
        d = Deduplicator(ON, MemoryStore()).process([Document("a", story, 0), Document("b", card, 1)])
        assert d[1].status == "duplicate" and d[1].relation == "contained_in"


def test_a_card_with_a_word_of_its_own_stays_apart(cards) -> None:
    """An exact embedding only: a card with a sentence the story does not have is not inside it."""
    fp = Fingerprinter(ON.fingerprint)
    for story, card in cards:
        own = card + " Analysts at three other banks expect the central bank to cut rates again next month."
        j = judge_pair(fp.fingerprint_batch([story, own]), 0, 1, ON)
        assert not (j.comparison.relation == "contained_in" and j.comparison.reasons[0].startswith("short text")), j


def test_texts_of_similar_length_are_not_short_copies() -> None:
    """Two short texts (an earnings template's siblings) keep the estimate's rule: the short rule
    needs the earlier text to have at least short_copy_ratio times the shingles."""
    fp = Fingerprinter(ON.fingerprint)
    a = "ACME CORP QTR NET\nShr 12 cts vs 10 cts\nNet 1,200,000 vs 1,000,000\nRevs 45.2 mln vs 40.1 mln\nReuter"
    b = "ACME CORP QTR NET\nShr 12 cts vs 10 cts\nNet 1,200,000 vs 1,000,000"
    j = judge_pair(fp.fingerprint_batch([a, b]), 0, 1, ON)
    assert not j.comparison.reasons[0].startswith("short text")
