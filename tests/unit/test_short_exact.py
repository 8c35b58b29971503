"""Short copies on exact evidence: a teaser after a story's header block, or a "key points" box,
is looked up 8-gram by 8-gram in the earlier canonical text when its estimates cannot settle it
(``verify.short_exact_containment``): caught in any batch, after a restart, in a replay and by
explain alike; texts that only quote a paragraph, or a template's other figures, stay apart."""

from __future__ import annotations

import random

import pytest

from streamdedup.bench import short_edits as S
from streamdedup.bench.corpus import load_reuters
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.stored import stored_decisions
from streamdedup.engine.verify import Fingerprint, compare, judge_pair
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state import MemoryStore
from tests.engine_runs import across_restart, cfg, in_batches as _run

SHORT = "short copy:"


@pytest.fixture(scope="module")
def stream() -> list[Document]:
    """30 long Reuters stories as web pages (headline, standfirst, byline, dateline, body),
    each followed three documents later by a teaser after its header block or a key-points box."""
    rng = random.Random(7)
    made = []
    for s in load_reuters():
        if len(made) == 40:
            break
        if not 400 <= len(s.body.split()) <= 800:
            continue
        page = S.web_page(s, rng)
        copy = (S.teaser_after_header if len(made) % 2 else S.key_points)(s, rng)
        if page is not None and copy is not None:
            made.append((page, copy))
    # the corpus repeats some stories: keep those the engine calls unique among themselves
    unique = Deduplicator(cfg(), MemoryStore()).process([Document(str(k), p, 0) for k, (p, _) in enumerate(made)])
    made = [m for m, d in zip(made, unique) if d.status == "unique"][:30]
    pages = [Document(f"p{k}", page, k * 1000) for k, (page, _) in enumerate(made)]
    copies = [Document(f"p{k}-copy", copy, k * 1000 + 500) for k, (_, copy) in enumerate(made)]
    out = []
    for k in range(30):
        out.append(pages[k])
        if k >= 3:
            out.append(copies[k - 3])
    return out + copies[27:]


def _key(d):
    return d.id, d.status, d.duplicate_of, d.relation, d.reason


def test_teasers_and_key_points_are_caught_on_exact_containment_and_missed_without(stream) -> None:
    on = {d.id: d for d in _run(Deduplicator(cfg(), MemoryStore()), stream, 16)}
    off = {d.id: d for d in _run(Deduplicator(cfg(VERIFY__SHORT_EXACT_CONTAINMENT="0"), MemoryStore()), stream, 16)}
    copies = [i for i in on if i.endswith("-copy")]
    caught = [i for i in copies if on[i].status != "unique" and on[i].duplicate_of == i.removesuffix("-copy")]
    assert len(caught) == len(copies) == 30
    exact = [i for i in copies if on[i].reason and on[i].reason.startswith(SHORT)]
    assert len(exact) >= 15  # most: the estimates and the embedding refuse these
    for i in exact:
        assert on[i].relation == "contained_in"
        assert off[i].status == "unique", off[i]  # the rule decided them
    # the stories themselves are not touched
    assert all(on[i].status == "unique" for i in on if not i.endswith("-copy"))


def test_any_batching_and_a_restart_give_the_same_decisions(stream, tmp_path) -> None:
    whole = [_key(d) for d in _run(Deduplicator(cfg(), MemoryStore()), stream, 64)]
    assert [_key(d) for d in _run(Deduplicator(cfg(), MemoryStore()), stream, 1)] == whole
    part, second = across_restart(cfg(), stream, str(tmp_path / "state"), 20, (7, 5), _key)
    assert part == whole
    assert second.evidence.read > 0, "no story was read from its record"


def test_replayed_decisions_keep_the_evidence(stream) -> None:
    engine = Deduplicator(cfg(), MemoryStore(), explicit_confirm=True)
    live = {d.id: d for d in _run(engine, stream, 16) if d.reason and d.reason.startswith(SHORT)}
    stored = stored_decisions(engine, [d.seq for d in live.values()])
    assert live and {d.id: d for d in stored.values()} == live


def test_explain_judges_the_pair_as_the_engine_did(stream) -> None:
    c = cfg()
    decided = [d for d in _run(Deduplicator(c, MemoryStore()), stream, 16) if d.reason and d.reason.startswith(SHORT)]
    text = {d.id: d.text for d in stream}
    fp = Fingerprinter(c.fingerprint)
    for d in decided:
        judged = judge_pair(fp.fingerprint_batch([text[d.duplicate_of], text[d.id]]), 0, 1, c)
        assert judged.is_duplicate and judged.comparison.relation == "contained_in", judged
        assert judged.comparison.reasons[-1].split(" (")[0] == d.reason.split(" (")[0]  # the same containment figure


def _pair(a: str, b: str, c):
    batch = Fingerprinter(c.fingerprint).fingerprint_batch([a, b])
    return compare(Fingerprint.from_batch(batch, 0).as_stored(c.fingerprint.minhash.storage_bits),
                   Fingerprint.from_batch(batch, 1), c.verify, c.fingerprint.signature)


def test_a_text_quoting_one_paragraph_stays_apart(stream) -> None:
    """A new short story quoting one paragraph of an earlier one: half of its 8-grams are its own."""
    c = cfg()
    story = stream[0].text
    quoted = S.paragraphs(story.split("\n")[-1].split(". "))[0]
    own = ("Shares of the company's rivals fell in early trading as investors weighed what the move would mean "
           "for the sector, and two analysts cut their forecasts for the year ahead by a wide margin.")
    why = _pair(story, f"Rivals slip after deal\n{own} {quoted}", c)
    assert why.grams is not None and why.grams[3] < 0.85, why  # asked, and refused
    assert not why.is_duplicate, why


def test_a_template_with_other_figures_stays_apart() -> None:
    """A brief of the same earnings template with other figures: its 8-grams are in the story
    once digits are read as 0, not as they stand (the digit rule refuses it); with the story's
    own figures it is a short copy."""
    c = cfg()
    para = ("Acme Corp said its first quarter net profit rose to {} mln dlrs, or {} cts a share, from {} mln dlrs a year "
            "earlier. Revenues in the quarter climbed to {} mln dlrs from {} mln dlrs, the company said in a statement "
            "released after the market closed. The company said it expected full year earnings of between {} and {} dlrs "
            "a share, against analysts' forecasts of about {} dlrs.")
    head = "ACME CORP REPORTS HIGHER FIRST QUARTER NET\n"
    figures = ("12.5", "41", "10.8", "431.6", "402.2", "1.60", "1.70", "1.65")
    body = " ".join(s.body for s in load_reuters() if 400 <= len(s.body.split()) <= 800)[:3000]
    story = head + para.format(*figures) + " " + body
    why = _pair(story, head + para.format("15.9", "52", "13.7", "598.4", "530.8", "2.10", "2.20", "2.15"), c)
    assert why.grams is not None, why  # asked: its containment estimate reaches short_exact_min_estimate
    plain, folded = why.grams[3], why.grams[4]
    assert folded >= c.verify.short_exact_containment and folded - plain > c.verify.exact_max_digit_gain, why.grams
    assert not why.is_duplicate, why
    same = _pair(story, head + para.format(*figures), c)
    assert same.is_duplicate and same.relation == "contained_in", same


@pytest.mark.parametrize("setting, value", [("SHORT_EXACT_CONTAINMENT", "1.5"), ("SHORT_EXACT_MIN_ESTIMATE", "-0.1"),
                                            ("SHORT_EXACT_CONTAINMENT", "x")])
def test_a_bad_short_exact_setting_is_refused_by_name(setting: str, value: str) -> None:
    from streamdedup.errors import ConfigError

    with pytest.raises(ConfigError, match=f"verify.{setting.lower()}"):
        cfg(**{f"VERIFY__{setting}": value})
