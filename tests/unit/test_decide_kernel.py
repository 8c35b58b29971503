"""The decide kernel's ``insert`` flag: a document decided against the index without entering
it (what a shard of a sharded index does for documents another shard holds, see
benchmarks/shard_simulation.py). The engine itself inserts every document."""

from __future__ import annotations

import numpy as np

from streamdedup._kernels import decide as KD
from streamdedup._kernels.verify import REL_EXACT
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state import MemoryStore
from tests.unit.test_engine import cfg, story, typo


def _decide(engine: Deduplicator, texts: list[str], insert: list[bool]) -> KD.Outputs:
    """One batch through the kernel with the engine's index, arena and settings."""
    batch = Fingerprinter(engine.cfg.fingerprint).fingerprint_batch(texts)
    n = len(texts)
    keys32 = batch.index_keys
    docs = KD.BatchPrints(batch.digest_words, keys32, np.zeros(n, np.int64), batch.empty, batch.minhash, batch.n_shingles,
                          batch.lengths, batch.chars, batch.fine_buf, batch.fine_start, batch.fine_len, np.array(insert, dtype=np.bool_),
                          batch.anchors, batch.anchor_n)
    params = KD.DecideParams(engine.bands, engine.rows, engine.index.hot_threshold, engine.window_ms,
                             engine.cfg.engine.max_verified, engine.bits, engine._params)
    scratch = KD.Scratch(engine._informative, engine._runs, engine._scratch, engine._cmp)
    meta, ix = engine.meta, engine.index
    state = np.array([meta.next_seq, meta.seq_lo, meta.watermark], dtype=np.int64)
    engine.arena.reserve(int(batch.fine_len.sum()), ix.slot_seq, ix.slot_time, meta.seq_lo, meta.watermark - engine.window_ms,
                         meta.next_seq)
    out = KD.outputs(n, engine.index_bands)
    assert KD.decide_batch(0, ix.grow_at, docs, params, state, ix.arrays(), engine.arena.arrays(), ix.probe, scratch, out) == n
    meta.next_seq, meta.seq_lo, meta.watermark = (int(x) for x in state)
    return out


def test_a_probed_document_is_decided_like_an_inserted_one_but_not_indexed() -> None:
    a, other = story(1), story(2)
    engine = Deduplicator(cfg(), MemoryStore())
    engine.process([Document("a", a, 0)])  # seq 0
    copy, probe = typo(a, 3), story(4)
    out = _decide(engine, [copy, a, probe, other], [False, False, False, True])
    assert out.seq.tolist() == [-1, -1, -1, 1]  # only the inserted one took a seq
    assert out.rel[0] > 0 and out.match[0] == 0 and out.root[0] == 0  # a near-duplicate of a
    assert out.rel[1] == REL_EXACT and out.match[1] == 0
    assert out.rel[2] == 0 and out.match[2] == -1 and out.root[2] == -1  # nothing found, nothing stored
    assert engine.meta.next_seq == 2
    # the probed texts are not in the index: sent again, they match only what was inserted
    again = _decide(engine, [probe, copy], [True, True])
    assert again.rel[0] == 0 and again.seq[0] == 2
    assert again.rel[1] > 0 and again.match[1] == 0


def test_inserting_every_document_decides_as_the_engine_does() -> None:
    texts = [story(10), typo(story(10), 11), story(12), story(10), typo(story(12), 13, 8)]
    engine = Deduplicator(cfg(), MemoryStore())
    mine = _decide(engine, texts, [True] * len(texts))
    theirs = Deduplicator(cfg(), MemoryStore()).process([Document(str(k), t, 0) for k, t in enumerate(texts)])
    assert [int(r) > 0 for r in mine.rel] == [d.status == "duplicate" for d in theirs] == [False, True, False, True, True]
    assert mine.seq.tolist() == [d.seq for d in theirs]
