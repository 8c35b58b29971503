"""The engine finds short copies by their anchor keys (``_kernels.anchor_index``): copies that
share no band with their story, found, kept across a restart, and boilerplate anchors counted."""

from __future__ import annotations

import random

import pytest

from streamdedup.bench import short_edits as S
from streamdedup.bench.corpus import load_reuters
from streamdedup.config import load_config
from streamdedup.engine import record
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.verify import judge_pair
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state.base import MemoryStore
from streamdedup.state.rocks import RocksStore

CFG = load_config(environ={})


@pytest.fixture(scope="module")
def excerpts():
    """(story, a paragraph from its middle) that verification accepts but no band proposes."""
    fp = Fingerprinter(CFG.fingerprint)
    rng = random.Random(29)
    out = []
    for s in load_reuters():
        if not S.LONG_WORDS[0] <= len(s.body.split()) <= S.LONG_WORDS[1]:
            continue
        ex = S.mid_excerpt(s, rng)
        if ex is None:
            continue
        j = judge_pair(Fingerprinter(CFG.fingerprint).fingerprint_batch([s.text, ex]), 0, 1, CFG)
        if j.shared_keys == 0 and not j.same_digest and j.comparison.is_duplicate:
            assert j.shared_anchors > 0 and j.is_duplicate  # explain says what the engine does
            out.append((s.text, ex))
        if len(out) == 6:
            break
    assert fp and len(out) == 6
    return out


def _docs(pairs, which: int, t0: int) -> list[Document]:
    return [Document(f"{which}-{k}", p[which], t0 + k) for k, p in enumerate(pairs)]


def test_an_excerpt_no_band_proposes_is_found_by_its_anchors(excerpts) -> None:
    engine = Deduplicator(CFG, MemoryStore())
    engine.process(_docs(excerpts, 0, 0))
    out = engine.process(_docs(excerpts, 1, 100))
    # linked to its story; whether a cut copy reads as a revision is the revision test's call
    assert [d.duplicate_of for d in out] == [f"0-{k}" for k in range(len(excerpts))]
    assert {d.status for d in out} <= {"duplicate", "revision"}


def test_a_restarted_engine_still_finds_them(excerpts, tmp_path) -> None:
    first = Deduplicator(CFG, RocksStore(str(tmp_path / "s")))
    first.process(_docs(excerpts, 0, 0))
    first.close()
    second = Deduplicator(CFG, RocksStore(str(tmp_path / "s")))
    out = second.process(_docs(excerpts, 1, 100))
    second.close()
    assert [d.duplicate_of for d in out] == [f"0-{k}" for k in range(len(excerpts))]


def test_an_anchor_many_stories_share_is_counted_hot() -> None:
    line = S.SECTION_LINES[0]
    stories = [s for s in load_reuters() if 40 <= len(s.body.split()) <= 80][:4]
    store = MemoryStore()
    engine = Deduplicator(CFG, store)
    out = engine.process([Document(f"s{k}", f"{line}\n{s.text}", k) for k, s in enumerate(stories)])
    assert [d.status for d in out] == ["unique"] * 4
    bands = engine.index_bands
    hot = [record.decode(seq, raw, bands, CFG.fingerprint.minhash.num_perm).anchor_hot for seq, raw in store.iter_from(0)]
    # the key at the text's start (the line) was written by 1, 2, 3, 4 clusters in a row
    assert [int(h[0]) for h in hot] == [1, 2, 3, 4]
