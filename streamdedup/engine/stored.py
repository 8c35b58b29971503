"""Questions about decisions already in the state (pure): what a runtime asks besides deciding.

A runtime that crashed between its state commit and its outputs re-emits the stored decisions
(:func:`unconfirmed_decisions`); the staged decider answers a re-sent fingerprint from the
state (:func:`stored_decisions`) and remembers where recent documents came from
(:func:`recent_positions`). Each reads the engine's store; none changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from streamdedup._kernels.records import F_REVISION
from streamdedup.engine import decisions as D
from streamdedup.engine import matches
from streamdedup.engine import record as engine_record
from streamdedup.engine.checkpoint import Source
from streamdedup.engine.decisions import Decision

if TYPE_CHECKING:
    from streamdedup.engine.deduplicator import Deduplicator


def _decode(engine: "Deduplicator", seq: int, raw: bytes) -> engine_record.StoredDocument:
    return engine_record.decode(seq, raw, engine.index_bands, engine.num_perm)


def _decisions(engine: "Deduplicator", stored: list[engine_record.StoredDocument]) -> list[Decision]:
    """The decisions of stored documents, with their root's and matched document's positions."""
    where = matches.stored_positions(engine.store, engine.meta.sources,
                                     {s for st in stored if st.relation for s in (st.root_seq, st.matched_seq)})
    verify = engine.cfg.verify
    return [Decision(st.id, "unique", seq=st.seq) if st.relation == 0 else
            D.duplicate(st.id, st.seq, st.root_id, st.matched_id or "", st.relation, st.numbers, int(st.flags),
                        verify, where.get(st.root_seq), where.get(st.matched_seq),
                        st.changed if st.flags & F_REVISION else None)
            for st in stored]


def unconfirmed_decisions(engine: "Deduplicator") -> dict[tuple[Source, int], Decision]:
    """Decisions of the batches whose outputs are not confirmed, by (source, offset).

    A runtime that committed the state but crashed (or failed) before its outputs became
    durable re-reads those records; it must re-emit the same decisions, not decide again
    against a state that already contains them.
    """
    meta = engine.meta
    sources = meta.sources
    held = [st for st in (_decode(engine, seq, raw) for seq, raw in engine.store.iter_from(max(meta.last_batch_seq, meta.seq_lo)))
            if 0 <= st.source_id < len(sources)]
    return {(sources[st.source_id], st.offset): d for st, d in zip(held, _decisions(engine, held))}


def stored_decisions(engine: "Deduplicator", seqs: Sequence[int]) -> dict[int, Decision]:
    """The decisions stored for documents ``seqs`` (those still held): a re-sent record's answer."""
    want = sorted(set(int(s) for s in seqs if s >= 0))
    held = [_decode(engine, seq, raw) for seq, raw in zip(want, engine.store.get_many(want)) if raw is not None]
    return {st.seq: d for st, d in zip(held, _decisions(engine, held))}


def recent_positions(engine: "Deduplicator", limit: int) -> tuple[list[Source], list[int], list[int]]:
    """Source, offset and seq of the last ``limit`` documents held (oldest first)."""
    meta = engine.meta
    sources = meta.sources
    out: tuple[list[Source], list[int], list[int]] = ([], [], [])
    for seq, raw in engine.store.iter_from(max(meta.seq_lo, meta.next_seq - limit)):
        st = _decode(engine, seq, raw)
        if 0 <= st.source_id < len(sources):
            out[0].append(sources[st.source_id])
            out[1].append(st.offset)
            out[2].append(seq)
    return out
