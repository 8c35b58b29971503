"""Boilerplate blocks learned from the stream: a short story resent under another outlet's
notice is a duplicate once the blocks other stories carry are left out, in verification and in
the revision test; stories that share only a block stay apart; the same decisions in any batch,
after a restart and in a replay."""

from __future__ import annotations

import pytest

from streamdedup.bench import short_edits as S
from streamdedup.bench.corpus import load_reuters
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.stored import stored_decisions
from streamdedup.state import MemoryStore
from tests.engine_runs import across_restart, cfg, in_batches as _run

BLOCKS = "boilerplate blocks left out"
HOUR = 3_600_000


@pytest.fixture(scope="module")
def shorts() -> list:
    """Short Reuters stories (40-80 words) the engine calls unique among themselves."""
    found = [s for s in load_reuters() if S.SHORT_WORDS[0] <= len(s.body.split()) <= S.SHORT_WORDS[1]][:400]
    decided = Deduplicator(cfg(), MemoryStore()).process([Document(str(k), S.under_block(s, ""), 0)
                                                           for k, s in enumerate(found)])
    return [s for s, d in zip(found, decided) if d.status == "unique"]


def _feed(shorts: list, outlets: bool = True) -> tuple[list[Document], list[str], list[str]]:
    """Two outlets publish stories under a disclaimer and a footer, an hour apart; 20 stories
    of the first are resent by the second (its footer instead of the disclaimer), and 20 others
    of the first are followed by another story under the same disclaimer. Returns the feed, the
    resends' ids and the near misses' ids."""
    disclaimer, footer = S.DISCLAIMERS[0], S.FOOTERS[0]
    docs: list[Document] = []
    t = 0
    if outlets:  # each outlet's other stories: the stream shows both blocks in many stories
        for k, s in enumerate(shorts[100:140]):
            docs.append(Document(f"o{k}", S.under_block(s, disclaimer if k % 2 else footer), t))
            t += HOUR // 10
    resends, misses = [], []
    for k in range(20):
        docs.append(Document(f"s{k}", S.under_block(shorts[k], disclaimer), t))
        docs.append(Document(f"s{k}-resend", S.under_block(shorts[k], footer), t + HOUR // 20))
        docs.append(Document(f"m{k}", S.under_block(shorts[40 + k], disclaimer), t + HOUR // 15))
        resends.append(f"s{k}-resend")
        misses.append(f"m{k}")
        t += HOUR // 5
    return docs, resends, misses


def _key(d):
    return d.id, d.status, d.duplicate_of, d.relation, d.reason, d.changed


def test_a_resend_under_other_boilerplate_is_a_copy_and_a_story_sharing_a_block_is_not(shorts) -> None:
    docs, resends, misses = _feed(shorts)
    out = {d.id: d for d in _run(Deduplicator(cfg(), MemoryStore()), docs, 16)}
    caught = [i for i in resends if out[i].status == "duplicate" and out[i].duplicate_of == i.removesuffix("-resend")]
    assert len(caught) >= 19, [(i, out[i].status, out[i].reason) for i in resends]
    assert any(BLOCKS in (out[i].reason or "") for i in resends)  # the blocks decided some of them
    assert all(out[i].status == "unique" for i in misses), [out[i] for i in misses if out[i].status != "unique"]
    assert all(out[f"s{k}"].status == "unique" for k in range(20))


def test_the_stream_teaches_the_blocks(shorts) -> None:
    """Without the outlets' other stories neither block is known: the resends are revisions (a
    paragraph changed) or unique, never duplicates on left-out blocks."""
    docs, resends, _ = _feed(shorts, outlets=False)
    out = {d.id: d for d in _run(Deduplicator(cfg(), MemoryStore()), docs[:6], 16)}
    for i in resends[:2]:
        assert out[i].status != "duplicate" or BLOCKS not in (out[i].reason or ""), out[i]


def test_a_changed_figure_under_other_boilerplate_is_still_a_revision(shorts) -> None:
    docs, _, _ = _feed(shorts)
    story = next(s for s in shorts[:20] if any(w.isdigit() for w in s.body.split()))
    k = shorts.index(story)
    figure = next(w for w in story.body.split() if w.isdigit())
    changed = S.under_block(story, S.FOOTERS[0]).replace(f" {figure} ", f" {int(figure) + 7} ", 1)
    docs = [d if d.id != f"s{k}-resend" else Document(d.id, changed, d.event_time_ms) for d in docs]
    out = {d.id: d for d in _run(Deduplicator(cfg(), MemoryStore()), docs, 16)}
    assert out[f"s{k}-resend"].status == "revision", out[f"s{k}-resend"]
    assert any(figure in c for c in out[f"s{k}-resend"].changed), out[f"s{k}-resend"].changed


def test_any_batching_and_a_restart_give_the_same_decisions(shorts, tmp_path) -> None:
    docs, _, _ = _feed(shorts)
    whole = [_key(d) for d in _run(Deduplicator(cfg(), MemoryStore()), docs, 64)]
    assert [_key(d) for d in _run(Deduplicator(cfg(), MemoryStore()), docs, 1)] == whole
    part, _ = across_restart(cfg(), docs, str(tmp_path / "state"), 61, (7, 5), _key)
    assert part == whole


def test_replayed_decisions_keep_the_reason(shorts) -> None:
    docs, _, _ = _feed(shorts)
    engine = Deduplicator(cfg(), MemoryStore(), explicit_confirm=True)
    live = {d.id: d for d in _run(engine, docs, 16) if BLOCKS in (d.reason or "")}
    stored = stored_decisions(engine, [d.seq for d in live.values()])
    assert live and {d.id: d for d in stored.values()} == live


def test_exact_evidence_off_asks_nothing_about_blocks(shorts) -> None:
    docs, _, _ = _feed(shorts)
    out = _run(Deduplicator(cfg(VERIFY__EXACT_EVIDENCE="false"), MemoryStore()), docs, 16)
    assert not any(BLOCKS in (d.reason or "") for d in out)
