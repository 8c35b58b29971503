"""Queries: is a document, or a modified part of one, in the index? (pure)

A query is a fingerprint decided against the index as a new document would be (the same
candidates, estimates and thresholds), without being indexed: it changes no decision, no
window and no state, and queries in one call do not match each other. A query needs no
text: where the index keeps none either (``state.keep_text: false``), exact evidence is
estimated from the query's and the indexed document's evidence sketches, as that decider
decides; against an index that keeps texts a borderline pair is decided on its estimates alone.

The answer says whether it matched and, for a match, the matched document's id, the
relation and the estimates (Jaccard, LD similarity, containment each way); nothing else of
the index (``policy`` ``yes_no`` leaves out the id and the figures too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

from streamdedup._kernels import decide as KD
from streamdedup._kernels.questions import D_CONTAINMENT_A_IN_B, D_CONTAINMENT_B_IN_A, D_JACCARD, D_LD_SIMILARITY
from streamdedup._kernels.verify import RELATION_NAMES
from streamdedup.engine import record as engine_record
from streamdedup.engine.evidence import BatchTexts
from streamdedup.engine.verify import kernel_params
from streamdedup.errors import StreamdedupError
from streamdedup.sketch import evidence_sketch
from streamdedup.sketch.fingerprint import FingerprintBatch
from streamdedup.text.decode import STREAM_TIME, stream_times

Policy = Literal["ids", "yes_no"]


@dataclass(frozen=True)
class Answer:
    """One query's answer. ``found`` alone under the ``yes_no`` policy."""

    id: str
    found: bool
    matched: str | None = None
    relation: str | None = None
    jaccard: float | None = None
    ld_similarity: float | None = None
    #: estimated share of the query's shingles in the matched document
    query_in_match: float | None = None
    #: estimated share of the matched document's shingles in the query
    match_in_query: float | None = None

    def to_json(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()
                if v is not None or k in ("id", "found")}


def _opt(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def ask(engine: Any, ids: Sequence[str], batch: FingerprintBatch, policy: Policy = "ids") -> list[Answer]:
    """Answer queries ``ids`` (fingerprints ``batch``) against ``engine``'s index (a
    ``Deduplicator``: this module is below it, it calls this), at the index's
    own time (the latest event time it has seen): whatever the window holds now can be found.

    Raises:
        IncompatibleFingerprintError: ``batch`` was made with other fingerprint parameters.
    """
    engine.params.require_same(batch.params)
    n = len(ids)
    engine._check_shapes(n, batch)
    if n == 0:
        return []
    meta = engine.meta
    # a copy: the window and sequence counters the kernel moves are the index's, not the query's
    state = np.array([meta.next_seq, meta.seq_lo, meta.watermark], dtype=np.int64)
    times = stream_times(np.full(n, STREAM_TIME, dtype=np.int64), meta.watermark)
    out = KD.outputs(n, engine.index_bands)
    docs = KD.BatchPrints(batch.digest_words, batch.index_keys, times, batch.empty, batch.minhash, batch.n_shingles,
                          batch.lengths, batch.chars, batch.fine_buf, batch.fine_start, batch.fine_len,
                          np.zeros(n, dtype=np.bool_), batch.anchors, batch.anchor_n)
    ix = engine.index
    params = KD.DecideParams(engine.bands, engine.rows, ix.hot_threshold, engine.window_ms, engine.cfg.engine.max_verified,
                             engine.bits, _params(engine))
    scratch = KD.Scratch(engine._informative, engine._runs, engine._scratch, engine._cmp)
    texts = BatchTexts(batch.canon_buf, batch.canon_start, batch.lengths, batch.anchors, batch.anchor_n, out.anchor_hot,
                       evidence_sketch.of_batch(batch, engine.evidence.key) if engine.sketching else None)
    unindexed = np.full(n, -1, dtype=np.int64)
    done = 0
    while True:
        # nothing is inserted, so no seq reaches the growth point; exact evidence is asked only
        # of an index that keeps sketches
        done = KD.decide_batch(done, np.iinfo(np.int64).max, docs, params, state, ix.arrays(), engine.arena.arrays(),
                               ix.probe, scratch, out)
        if done == n:
            break
        if not (engine.sketching and engine.evidence.respond(out, texts, done, unindexed)):
            raise StreamdedupError(f"a query stopped at {done} of {n}: the decide kernel asked for the texts")
    seqs, relations, numbers = out.match, out.rel, out.num  # seqs: of the matched documents
    found = np.flatnonzero(relations).tolist()
    matched_ids = {}
    if found and policy == "ids":
        want = sorted({int(seqs[i]) for i in found})
        raws = dict(zip(want, engine.store.get_many(want)))
        matched_ids = {s: (engine_record.match_fields(r, s)[0] if r is not None else None) for s, r in raws.items()}
    answers = []
    for i in range(n):
        rel = int(relations[i])
        if rel == 0 or policy == "yes_no":
            answers.append(Answer(str(ids[i]), rel != 0))
            continue
        num = numbers[i]
        answers.append(Answer(str(ids[i]), found=True, matched=matched_ids.get(int(seqs[i])), relation=RELATION_NAMES[rel],
                              jaccard=_opt(num[D_JACCARD]), ld_similarity=_opt(num[D_LD_SIMILARITY]),
                              query_in_match=_opt(num[D_CONTAINMENT_B_IN_A]),
                              match_in_query=_opt(num[D_CONTAINMENT_A_IN_B])))
    return answers


def _params(engine: Any) -> np.ndarray:
    """The engine's verification settings, with exact evidence off unless the index keeps the
    evidence sketches (a query brings no text)."""
    cached = getattr(engine, "_query_params", None)
    if cached is None:
        cfg = engine.cfg
        cached = kernel_params(cfg.verify.model_copy(update={"exact_evidence": engine.sketching}), cfg.fingerprint.signature)
        engine._query_params = cached
    return cached
