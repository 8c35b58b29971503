"""The dedup engine: sequential decisions over micro-batches, with durable state (pure core).

For each document, in arrival order (a document may duplicate an earlier one of the same
batch): exact-digest fast path -> LSH band candidates from the in-memory index -> verification
against the candidates' fingerprints in the in-memory arena -> decision -> insertion.
``duplicate_of`` is the first-seen document of the cluster (every document stores its cluster
root), never the previous copy, so there are no chains. One micro-batch is one Numba call
(``_kernels.decide``): Python touches a document only to read its text and id and to write
its record.

State: every decided document becomes one record in the store (``engine_record``); a
micro-batch's records, the evictions it caused (by the ring's max-documents bound and by the
event-time window) and the metadata (next seq, window bounds, input positions) are committed
as one atomic batch. On start the index and the arena are
rebuilt by re-inserting the stored records in seq order, which reproduces the in-memory state
exactly, so a restarted engine makes the same decisions as one that never stopped. The
metadata, the checkpoint handed to a runtime and that restore are ``engine_state``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from streamdedup.engine import matches, query, revised
from streamdedup.engine import record as engine_record
from streamdedup._kernels import decide as KD
from streamdedup._kernels import records as KR
from streamdedup._kernels.verify import N_OUT
from streamdedup.engine.arena import Arena
from streamdedup.config import Config
from streamdedup.engine.decisions import BatchDecisions, Decision
from streamdedup.engine.query import Answer
from streamdedup.engine.evidence import BatchTexts, Evidence
from streamdedup.text.decode import stream_times
from streamdedup.engine.checkpoint import Checkpoint, Source, StateMeta, StopsOnFailure, restore
from streamdedup.errors import EngineStoppedError
from streamdedup.sketch import evidence_sketch
from streamdedup.sketch.fingerprint import MAX_SIGNATURE_SYMBOLS, FingerprintBatch, Fingerprinter, FingerprintParams, hash_key
from streamdedup.text.ids import Ids, id_arrays, sparse_utf8
from streamdedup.engine.sizing import check_fits, machine_memory
from streamdedup.engine.index import CandidateIndex
from streamdedup.state.base import StateBatch, Store
from streamdedup.engine.verify import kernel_params

HOUR_MS = 3_600_000
#: receives a batch's decisions before its state commit; may return an action the store runs
#: right before it applies the batch (see :meth:`Deduplicator.process`)
BeforeCommit = Callable[[BatchDecisions], Callable[[], None] | None]


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    event_time_ms: int
    #: where it came from (kept with the document: replays and the operator tools find it there)
    source: Source | None = None
    #: its offset in ``source`` (a line number for files)
    offset: int = -1


class Deduplicator:
    """Decides unique/duplicate for documents in arrival order, with state in ``store``."""

    def __init__(self, cfg: Config, store: Store, *, auto_sizing: Literal["grow", "full"] = "grow",
                 explicit_confirm: bool = False):
        """
        Args:
            auto_sizing: what ``engine.index_sizing: auto`` means for this caller: ``full``
                tables for a long-running processor (no growth pauses), ``grow`` for a file or
                library use (a short stream does not pay for max_documents).
            explicit_confirm: the caller's outputs can fail after the state commit (a Kafka
                transaction): it calls :meth:`confirm_outputs` once they are durable, and the
                decisions of unconfirmed batches stay available for a replay. Otherwise a
                batch's outputs count as durable with its state commit.
        """
        self.cfg = cfg
        self.store = store
        #: the fingerprints this engine decides on must be made with these
        self.params = FingerprintParams.of(cfg.fingerprint)
        self.bands = self.params.bands
        self.rows = self.params.rows
        self._fp: Fingerprinter | None = None  # process()'s, made on its first call
        lead = cfg.fingerprint.lead
        #: index bands: the main LSH bands, then the lead bands, then the character bands
        self.index_bands = self.bands + (lead.bands if lead.shingles > 0 else 0) + cfg.fingerprint.chars.bands
        self.num_perm = cfg.fingerprint.minhash.num_perm
        self.bits = cfg.fingerprint.minhash.storage_bits
        eng = cfg.engine
        self.window_ms = int(eng.window_hours * HOUR_MS)
        raw = store.get_meta()
        self.meta = StateMeta.open(raw, self.params.key)
        full = eng.index_sizing == "full" or (eng.index_sizing == "auto" and auto_sizing == "full")
        check_fits(eng.max_documents, self.index_bands, self.num_perm, self.bits, machine_memory())
        self.index = CandidateIndex(self.index_bands, eng.max_documents, eng.hot_bucket_clusters, eng.max_candidates,
                                    full=full, next_seq=self.meta.next_seq)
        self.arena = Arena(eng.max_documents, self.num_perm, self.bits)
        self._params = kernel_params(cfg.verify, cfg.fingerprint.signature)
        self._informative = np.ones(self.num_perm, dtype=np.bool_)
        self._runs = np.zeros(2 * MAX_SIGNATURE_SYMBOLS + 1, dtype=np.int64)
        self._scratch = np.zeros(MAX_SIGNATURE_SYMBOLS, dtype=np.uint8)
        self._cmp = np.zeros(N_OUT, dtype=np.float64)
        #: no texts kept: exact evidence is estimated from the texts' evidence sketches, which the
        #: records keep instead
        self.sketching = not cfg.state.keep_text and cfg.verify.exact_evidence
        self.recent_documents = matches.RecentDocuments()
        self.evidence = Evidence(store, self.index_bands, self.num_perm, eng.hot_bucket_clusters,
                                 key=hash_key(cfg.fingerprint), sketches=self.sketching)
        if raw is not None:
            restore(store, self.meta, self.index, self.arena, self.bits, self.window_ms)
        self._committed_lo = self.meta.seq_lo
        self._explicit_confirm = explicit_confirm
        self._source_ids = {src: i for i, src in enumerate(self.meta.sources)}
        #: every document below this seq has durable outputs (replays start here)
        self._confirmed_through = self.meta.last_batch_seq
        #: ``with engine.stops_on_failure():`` a step of a batch that raises stops this engine:
        #: every later batch is refused, so no state commit moves the positions past the failed
        #: batch (the runtime restarts from the state)
        self.stops_on_failure = StopsOnFailure()

    # ------------------------------------------------------------------ state

    def resume_positions(self) -> dict[Source, int]:
        """Next offset to read per source, as committed with the state (where to resume)."""
        return dict(self.meta.positions)

    def source_id(self, source: Source) -> int:
        """The id records of ``source`` carry (registered on first use; kept in the state)."""
        sid = self._source_ids.get(source)
        if sid is None:
            sid = self._source_ids[source] = len(self.meta.sources)
            self.meta.sources.append(source)
        return sid

    @property
    def indexed_documents(self) -> int:
        """Documents in the index ring (those left by event time or deleted count until the ring
        evicts them: a metric that costs nothing per batch)."""
        return self.meta.next_seq - self.meta.seq_lo

    @property
    def evidence_counts(self) -> tuple[int, int]:
        """Exact-evidence questions the decide loop asked so far, and how many of them read the
        earlier text from its stored record (the rest came from recent batches in memory)."""
        return self.evidence.asked, self.evidence.read

    # ------------------------------------------------------------------ deciding

    def process(
        self,
        docs: Sequence[Document],
        positions: dict | None = None,
        before_commit: BeforeCommit | None = None,
    ) -> BatchDecisions:
        """Fingerprint and decide a micro-batch in order and commit it (with ``positions``) atomically:
        a convenience for library users (the runtimes run the pipeline's steps, ``streamdedup.pipeline``).

        A text that is empty after canonicalisation is rejected (status ``rejected``) and not
        indexed; a text that is not a string, not UTF-8 or too large raises
        :class:`~streamdedup.InputError` (callers that must keep going check texts first,
        see :class:`streamdedup.text.decode.RecordDecoder`). ``before_commit`` receives the decisions
        before the state is committed and may return an action that the store runs right
        before it applies the batch (on the store's thread, see ``state.pipelined``): a
        caller that writes its outputs there gets at-least-once output (a crash before the
        commit replays the batch).
        """
        n = len(docs)
        if n == 0:
            return self.commit_positions(positions, before_commit).decisions
        if self._fp is None:
            self._fp = Fingerprinter(self.cfg.fingerprint)
        with self.stops_on_failure():
            batch = self._fp.fingerprint_batch([d.text for d in docs])
        return self.run_fingerprinted(
            [d.id for d in docs], batch, np.fromiter((d.event_time_ms for d in docs), np.int64, n),
            np.fromiter((-1 if d.source is None else self.source_id(d.source) for d in docs), np.int64, n),
            np.fromiter((d.offset for d in docs), np.int64, n), positions, before_commit).decisions

    def commit_positions(self, positions: dict[Source, int] | None,
                         before_commit: BeforeCommit | None = None) -> Checkpoint:
        """A batch without documents: its positions (and the caller's action) are still committed."""
        with self.stops_on_failure():
            out = BatchDecisions.empty(self.cfg.verify)
            action = before_commit(out) if before_commit else None
            commit = None
            if positions or action:
                self._advance(positions or {})
                commit = self.store.commit(StateBatch(meta=self.meta.dumps(), before=action))
            return Checkpoint(out, dict(positions or {}), None, commit)

    def run_fingerprinted(
        self,
        ids: Sequence[str],
        batch: FingerprintBatch,
        times: np.ndarray,
        sources: np.ndarray,
        offsets: np.ndarray,
        positions: dict[Source, int] | None = None,
        before_commit: BeforeCommit | None = None,
    ) -> Checkpoint:
        """Decide a micro-batch in order, given as its fingerprints and columns, and submit its
        state commit with ``positions`` (next offset per source it covers).

        The fingerprints come from the pipeline's fingerprint step (``pipeline.decide``), a
        fingerprint worker's records (``pipeline.fingerprints``) or a replay's store.
        ``sources`` are :meth:`source_id` values (-1: none) and ``offsets`` positions in them;
        ``ids`` may be an :class:`Ids` (made without a Python object per document).

        ``batch`` row i is document ``ids[i]``. The engine reads its digests, the low 32 bits
        of its band, lead and character keys, the low ``minhash.storage_bits`` of its MinHash slots, the
        fine signatures, shingle counts, lengths (bytes and characters) and empty flags; nothing else.

        Raises:
            IncompatibleFingerprintError: ``batch`` was made with other fingerprint parameters.
            EngineStoppedError: an earlier batch failed.
        """
        # a batch refused for its arguments changed nothing: the engine goes on
        self.params.require_same(batch.params)
        self._check_shapes(len(ids), batch)
        with self.stops_on_failure():
            return self._run_fingerprinted(ids, batch, times, sources, offsets, positions, before_commit)

    def _run_fingerprinted(self, ids: Sequence[str], batch: FingerprintBatch, times: np.ndarray, sources: np.ndarray,
                           offsets: np.ndarray, positions: dict[Source, int] | None,
                           before_commit: BeforeCommit | None) -> Checkpoint:
        n = len(ids)
        if n == 0:
            return self.commit_positions(positions, before_commit)
        meta = self.meta
        times = stream_times(np.asarray(times, dtype=np.int64), meta.watermark)
        ids_buf, ids_off = id_arrays(ids)
        keys32 = batch.index_keys
        first_seq = meta.next_seq
        self.arena.reserve(int(batch.fine_len[~batch.empty].sum()), self.index.slot_seq, self.index.slot_time, meta.seq_lo,
                           meta.watermark - self.window_ms, first_seq)
        # replays after a crash start at the first document whose outputs are not confirmed:
        # this batch's first one, or an earlier one the caller has not confirmed yet
        meta.last_batch_seq = self._confirmed_through if self._explicit_confirm else first_seq
        state = np.array([meta.next_seq, meta.seq_lo, meta.watermark], dtype=np.int64)
        out = KD.outputs(n, self.index_bands)
        seqs, roots, matched, relations, numbers, flags, hots = out[:7]
        ix = self.index
        times = np.ascontiguousarray(times, dtype=np.int64)
        docs = KD.BatchPrints(batch.digest_words, keys32, times, batch.empty, batch.minhash, batch.n_shingles, batch.lengths,
                              batch.chars, batch.fine_buf, batch.fine_start, batch.fine_len, np.ones(n, dtype=np.bool_),
                              batch.anchors, batch.anchor_n)
        params = KD.DecideParams(self.bands, self.rows, ix.hot_threshold, self.window_ms, self.cfg.engine.max_verified, self.bits,
                                 self._params)
        scratch = KD.Scratch(self._informative, self._runs, self._scratch, self._cmp)
        sketch = evidence_sketch.of_batch(batch, self.evidence.key) if self.sketching else None
        texts = BatchTexts(batch.canon_buf, batch.canon_start, batch.lengths, batch.anchors, batch.anchor_n, out.anchor_hot,
                           sketch)
        i = 0
        while True:
            i = KD.decide_batch(i, ix.grow_at, docs, params, state, ix.arrays(), self.arena.arrays(), ix.probe, scratch, out)
            if i == n:
                break
            if self.evidence.respond(out, texts, i, seqs):  # document i needed exact evidence
                continue
            ix.grow(int(state[0]), int(state[1]))
        self.evidence.remember(seqs, texts)
        meta.next_seq, meta.seq_lo, meta.watermark = int(state[0]), int(state[1]), int(state[2])
        sources = np.ascontiguousarray(sources, dtype=np.int64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        found = matches.resolve(ids, seqs, roots, matched, relations, first_seq, sources, offsets, self.meta.sources, self.store,
                                self.recent_documents, self._committed_lo)
        self.recent_documents.remember(seqs, ids, found.root_ids, sources, offsets)
        changed = {} if self.cfg.verify.revisions == "off" else revised.mark(
            self.evidence, texts, seqs, matched, relations, flags, roots, self.cfg.verify.revision_threads)
        roots_buf, roots_off = sparse_utf8(found.root_ids, n)
        matched_buf, matched_off = sparse_utf8(found.matched_ids, n)
        changed_buf, changed_off = sparse_utf8({i: engine_record.CHANGED_SEP.join(c) for i, c in changed.items()}, n)
        buf, off = KR.encode_batch(
            seqs, roots, matched, relations, numbers, flags, hots, ids_buf, ids_off, roots_buf, roots_off, matched_buf,
            matched_off, changed_buf, changed_off, batch.digest_words, batch.lengths, batch.chars, batch.n_shingles, times,
            sources, offsets, batch.minhash, self.bits, keys32, batch.fine_buf, batch.fine_start, batch.fine_len,
            batch.canon_buf, batch.canon_start, self.cfg.state.keep_text, batch.anchors, batch.anchor_n, out.anchor_hot,
            evidence_sketch.NO_SKETCH if sketch is None else sketch,
        )
        raw = buf.tobytes()
        bounds = off.tolist()
        puts = [(s, raw[bounds[i]:bounds[i + 1]]) for i, s in enumerate(seqs.tolist()) if s >= 0]
        decisions = BatchDecisions(ids, seqs, relations, numbers, flags, found.root_ids, found.matched_ids, self.cfg.verify,
                                   (found.originals, found.matched_sources), changed)
        action = before_commit(decisions) if before_commit else None
        old_lo = self._committed_lo
        new_lo = self._evictable_below()
        if positions:
            self._advance(positions)
        commit = self.store.commit(StateBatch(puts=puts, delete_range=(old_lo, new_lo) if new_lo > old_lo else None,
                                              meta=meta.dumps(), before=action))
        self._committed_lo = new_lo
        return Checkpoint(decisions, dict(positions or {}), meta.next_seq, commit)

    def query(self, ids: Sequence[str], batch: FingerprintBatch, policy: Literal["ids", "yes_no"] = "ids") -> list[Answer]:
        """Is each of these documents (or a part of one) in the index now? Decided as new
        documents would be, without indexing them or asking for their texts (``engine.query``)."""
        return query.ask(self, ids, batch, policy)

    def _check_shapes(self, n: int, batch: FingerprintBatch) -> None:
        """The kernels trust their input: a batch assembled by hand is checked here."""
        if len(batch) != n or batch.digest_words.shape != (n, 2) or batch.minhash.shape[1] != self.num_perm \
                or batch.band_keys.shape[1] + batch.lead_keys.shape[1] + batch.char_keys.shape[1] != self.index_bands \
                or not (n == batch.lengths.shape[0] == batch.chars.shape[0] == batch.n_shingles.shape[0] == batch.empty.shape[0]
                        == batch.fine_start.shape[0] == batch.fine_len.shape[0]):
            raise ValueError(f"a fingerprint batch of {len(batch)} rows for {n} ids does not have this engine's shapes "
                             f"({self.num_perm} MinHash slots, {self.index_bands} band keys per row)")

    def _advance(self, positions: dict[Source, int]) -> None:
        """Input positions only move forward. After a crash the state can be a few batches ahead
        of the consumer's committed offsets; the re-read batches are replays, and a replayed
        batch's end must not pull the position back, or the next re-read batch would be decided
        a second time (seen: 512 records decided twice after a SIGKILL)."""
        current = self.meta.positions
        for key, pos in positions.items():
            if pos > current.get(key, -1):
                current[key] = pos

    def _evictable_below(self) -> int:
        """Records below this seq belong to documents that can never be candidates again.

        Those below the ring's ``seq_lo``, and those below the oldest document still inside
        the event-time window (the arena's tail: everything before it left the window, was
        deleted or was evicted), so the state on disk follows the window, not only the ring.
        A record a crash replay may need (from ``last_batch_seq``) is kept.
        """
        return max(self.meta.seq_lo, min(self.arena.tail, self.meta.last_batch_seq))

    def confirm_outputs(self, through: int | None = None) -> None:
        """The outputs of every document below seq ``through`` are durable (default: all so far).

        A caller that overlaps a batch's output commit with deciding the next batch confirms
        only up to the batch whose commit it saw succeed.
        """
        through = self.meta.next_seq if through is None else through
        self._confirmed_through = max(self._confirmed_through, min(through, self.meta.next_seq))

    def delete(self, doc_id: str) -> int:
        """Remove every stored document with this id from index and store; returns how many.

        An operator action: it scans the stored records (ids are not indexed, which saves a
        write per document on the hot path).
        """
        with self.stops_on_failure():  # a half-applied delete leaves the index and the store apart
            seqs = [seq for seq, raw in self.store.iter_from(self.meta.seq_lo) if engine_record.ids(raw, seq)[0] == doc_id]
            for seq in seqs:
                self.index.forget(seq)
            if seqs:
                self.store.commit(StateBatch(deletes=seqs, meta=self.meta.dumps()))
            return len(seqs)

    def close(self) -> None:
        self.store.close()


__all__ = ["BatchDecisions", "Checkpoint", "Decision", "Deduplicator", "Document", "EngineStoppedError", "Ids", "Source"]
