"""The dedup engine: sequential decisions over micro-batches, with durable state (pure core).

For each document, in arrival order (a document may duplicate an earlier one of the same
batch): exact-digest fast path -> LSH band candidates from the in-memory index -> verification
against the candidates' stored fingerprints -> decision -> insertion. ``duplicate_of`` is the
first-seen document of the cluster (every document stores its cluster root), never the
previous copy, so there are no chains.

State: every decided document becomes one record in the store; a micro-batch's records, the
evictions it caused and the metadata (next seq, window bounds, input positions) are committed
as one atomic batch. On start the index is rebuilt by re-inserting the stored records in seq
order, which reproduces the in-memory state exactly, so a restarted engine makes the same
decisions as one that never stopped.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from . import record
from .config import Config
from .errors import IncompatibleFingerprintError
from .fingerprint import FingerprintBatch, Fingerprinter
from .index import CandidateIndex
from .state.base import StateBatch, Store
from .verify import Comparison, Fingerprint, compare

META_VERSION = 1
_HEAD = struct.Struct("<BqHHBffH")
#: relation codes stored with each record, so a replay can re-emit the same decision
RELATIONS = (None, "exact", "near_duplicate", "contains", "contained_in")
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    event_time_ms: int
    partition: int = -1
    offset: int = -1


@dataclass(frozen=True)
class Decision:
    id: str
    status: str  # unique | duplicate | rejected
    duplicate_of: str | None = None
    relation: str | None = None  # exact | near_duplicate | contains | contained_in
    similarity: float | None = None  # estimated Jaccard with the matched document
    ld_similarity: float | None = None  # calibrated LD similarity with the matched document
    matched: str | None = None  # the document that matched (may be a later copy of the root)
    reason: str | None = None  # why a document was rejected, or what decided a duplicate
    seq: int = -1

    def tags(self) -> dict:
        out: dict = {"status": self.status, "duplicate_of": self.duplicate_of, "relation": self.relation,
                     "similarity": None if self.similarity is None else round(self.similarity, 4)}
        if self.status == "duplicate":
            out["ld_similarity"] = None if self.ld_similarity is None else round(self.ld_similarity, 4)
            out["matched"] = self.matched
            out["reason"] = self.reason
        return out


@dataclass
class _Stored:
    """A decoded engine record: who the document is, its cluster, its decision, its fingerprint."""

    seq: int
    id: str
    root_seq: int
    root_id: str
    hot: np.ndarray
    fp: record.FingerprintRecord
    decision: Decision | None = None


def _encode(seq_root: int, doc_id: str, root_id: str, hot: np.ndarray, fp_record: bytes, dec: Decision) -> bytes:
    idb = doc_id.encode("utf-8")
    rb = root_id.encode("utf-8")
    mb = (dec.matched or "").encode("utf-8")
    nan = float("nan")
    head = _HEAD.pack(1, seq_root, len(idb), len(rb), RELATIONS.index(dec.relation),
                      nan if dec.similarity is None else dec.similarity,
                      nan if dec.ld_similarity is None else dec.ld_similarity, len(mb))
    reason = (dec.reason or "").encode("utf-8")[:65535]
    return b"".join((head, idb, rb, mb, struct.pack("<H", len(reason)), reason, hot.tobytes(), fp_record))


def _opt(x: float) -> float | None:
    return None if x != x else float(x)


def _decode(seq: int, data: bytes, bands: int, num_perm: int, params_key: int) -> _Stored:
    version, root, n_id, n_root, rel, sim, ld, n_matched = _HEAD.unpack_from(data, 0)
    pos = _HEAD.size
    doc_id = data[pos:pos + n_id].decode("utf-8")
    pos += n_id
    root_id = data[pos:pos + n_root].decode("utf-8")
    pos += n_root
    matched = data[pos:pos + n_matched].decode("utf-8") or None
    pos += n_matched
    (n_reason,) = struct.unpack_from("<H", data, pos)
    pos += 2
    reason = data[pos:pos + n_reason].decode("utf-8", "replace") or None
    pos += n_reason
    hot = np.frombuffer(data, dtype=np.uint8, count=bands, offset=pos).copy()
    pos += bands
    fp = record.decode(data[pos:], num_perm, params_key)
    if root == seq:
        dec = Decision(doc_id, "unique", seq=seq)
    else:
        dec = Decision(doc_id, "duplicate", root_id, RELATIONS[rel], _opt(sim), _opt(ld), matched, reason, seq)
    return _Stored(seq, doc_id, root, root_id, hot, fp, dec)


@dataclass
class _Meta:
    params_key: int
    next_seq: int = 0
    seq_lo: int = 0
    watermark: int = -(2**62)
    positions: dict = field(default_factory=dict)
    #: first seq of the oldest micro-batch whose outputs were not confirmed (replays look there)
    last_batch_seq: int = 0

    def dumps(self) -> bytes:
        return json.dumps({"version": META_VERSION, "params_key": self.params_key, "next_seq": self.next_seq,
                           "seq_lo": self.seq_lo, "watermark": self.watermark, "positions": self.positions,
                           "last_batch_seq": self.last_batch_seq}).encode()

    @classmethod
    def loads(cls, raw: bytes) -> "_Meta":
        m = json.loads(raw)
        if m.get("version") != META_VERSION:
            raise IncompatibleFingerprintError(f"state metadata version {m.get('version')} is not {META_VERSION}")
        return cls(m["params_key"], m["next_seq"], m["seq_lo"], m["watermark"], m.get("positions", {}), m.get("last_batch_seq", 0))


class Deduplicator:
    """Decides unique/duplicate for documents in arrival order, with state in ``store``."""

    def __init__(self, cfg: Config, store: Store):
        self.cfg = cfg
        self.store = store
        self.fp = Fingerprinter(cfg.fingerprint)
        self.bands = self.fp.lsh.bands
        self.rows = self.fp.lsh.rows
        lead = cfg.fingerprint.lead
        #: index bands: the main LSH bands, then the lead bands
        self.index_bands = self.bands + (lead.bands if lead.shingles > 0 else 0)
        self.num_perm = cfg.fingerprint.minhash.num_perm
        self.bits = cfg.fingerprint.minhash.storage_bits
        eng = cfg.engine
        self.window_ms = int(eng.window_hours * HOUR_MS)
        self.index = CandidateIndex(self.index_bands, eng.max_documents, eng.hot_bucket_clusters, eng.max_candidates,
                                    prefault=eng.prefault_index)
        raw = store.get_meta()
        if raw is None:
            self.meta = _Meta(self.fp.params.key)
        else:
            self.meta = _Meta.loads(raw)
            if self.meta.params_key != self.fp.params.key:
                raise IncompatibleFingerprintError(
                    f"the state was built with fingerprint params {self.meta.params_key:08x} and this "
                    f"configuration has {self.fp.params.key:08x}; use a new state directory"
                )
            self._rebuild()
        self._committed_lo = self.meta.seq_lo
        #: set by callers whose outputs can fail after the state commit (the Kafka processor):
        #: they call confirm_outputs(through) once the outputs of batches are durable
        self.confirm_outputs_explicitly = False
        #: every document below this seq has durable outputs (replays start here)
        self._confirmed_through = self.meta.last_batch_seq

    def warm_up(self) -> None:
        """Load every kernel this engine uses (Numba's cache load is ~1 s on the first call).

        A long-running processor calls this before it consumes, so that the first micro-batch
        does not carry the load time in its latency. Touches no state: a scratch index is used.
        """
        text = "warm up the kernels with a short story about nothing in particular at all"
        batch = self.fp.fingerprint_batch([text, text + " and one more sentence"])
        keys32 = (np.hstack((batch.band_keys, batch.lead_keys)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        digests_lo = np.frombuffer(b"".join(batch.digests), dtype="<u8")[::2].copy()
        scratch = CandidateIndex(self.index_bands, 16, self.cfg.engine.hot_bucket_clusters, self.cfg.engine.max_candidates)
        times = np.zeros(2, dtype=np.int64)
        state = np.array([0, 0, 0], dtype=np.int64)
        seqs, roots = np.full(2, -1, dtype=np.int64), np.zeros(2, dtype=np.int64)
        hots = np.zeros((2, self.index_bands), dtype=np.uint8)
        scratch.run_until_candidate(0, digests_lo, keys32, times, batch.empty, self.window_ms, state, seqs, roots, hots)
        scratch.insert_into(5, 5, 0, int(digests_lo[1]), keys32[1], 0, 0, hots[1])
        scratch.restore(6, 6, 0, int(digests_lo[1]), keys32[1], hots[1])
        stored = record.decode(record.encode(batch, 0, self.bits, 0), self.num_perm)
        compare(Fingerprint.from_record(stored), Fingerprint.from_batch(batch, 1), self.cfg.verify,
                self.cfg.fingerprint.signature, np.ones(self.num_perm, dtype=bool), full=True)

    # ------------------------------------------------------------------ state

    def _rebuild(self) -> None:
        for seq, raw in self.store.iter_from(self.meta.seq_lo):
            st = _decode(seq, raw, self.index_bands, self.num_perm, self.fp.params.key)
            self.index.restore(seq, st.root_seq, st.fp.event_time_ms, _digest_lo(st.fp.digest), st.fp.band_keys, st.hot)

    @property
    def positions(self) -> dict:
        """Input positions committed with the state (where to resume)."""
        return dict(self.meta.positions)

    @property
    def indexed_documents(self) -> int:
        return int(np.count_nonzero(self.index.slot_seq >= self.meta.seq_lo))

    def _min_time(self) -> int:
        return self.meta.watermark - self.window_ms

    def _records(self, seqs: list[int]) -> list[_Stored | None]:
        return [None if raw is None else _decode(s, raw, self.index_bands, self.num_perm, self.fp.params.key)
                for s, raw in zip(seqs, self.store.get_many(seqs))]

    # ------------------------------------------------------------------ deciding

    def _informative(self, hot_bands: np.ndarray) -> np.ndarray | None:
        hot_main = hot_bands[: self.bands]
        if not hot_main.any():
            return None
        mask = np.ones(self.num_perm, dtype=bool)
        for b in np.flatnonzero(hot_main):
            mask[b * self.rows:(b + 1) * self.rows] = False
        return mask

    def _verify(self, batch: FingerprintBatch, i: int, cands, in_batch: dict[int, int], docs: Sequence[Document],
                roots: np.ndarray, keys32: np.ndarray, found: dict) -> tuple[_Stored, Comparison | None] | None:
        """The best duplicate among the candidates of document ``i``, or None.

        Candidates decided earlier in this batch are not stored yet; they are read from the
        batch itself (``in_batch`` maps their seqs to batch positions).
        """
        def load(seq_list: list[int]) -> list[_Stored | None]:
            out: list[_Stored | None] = [None] * len(seq_list)
            missing = []
            for k, sq in enumerate(seq_list):
                j = in_batch.get(sq)
                if j is None:
                    missing.append(k)
                    continue
                rec = record.decode(record.encode(batch, j, self.bits, int(docs[j].event_time_ms)), self.num_perm)
                root_id = found[j][0].root_id if j in found else docs[j].id
                out[k] = _Stored(sq, docs[j].id, int(roots[j]), root_id, np.zeros(0, np.uint8), rec)
            fetched = self._records([seq_list[k] for k in missing])
            for k, st in zip(missing, fetched):
                out[k] = st
            return out

        if cands.exact_slot >= 0:
            seq = self.index.seq_of_slot(cands.exact_slot)
            (st,) = load([seq])
            if st is not None and st.fp.digest == batch.digests[i]:
                return st, None
        if len(cands) == 0:
            return None
        order = np.argsort(-cands.shared_bands, kind="stable")[: self.cfg.engine.max_verified]
        seq_list = [self.index.seq_of_slot(int(cands.slots[j])) for j in order]
        new = Fingerprint.from_batch(batch, i)
        informative = self._informative(cands.hot_bands)
        best: tuple[_Stored, Comparison] | None = None
        hot_main = cands.hot_bands[: self.bands]
        for st in load(seq_list):
            if st is None:
                continue
            shared_bp = bool(informative is not None and (hot_main & (st.fp.band_keys[: self.bands] == keys32[: self.bands])).any())
            cmp = compare(Fingerprint.from_record(st.fp), new, self.cfg.verify, self.cfg.fingerprint.signature, informative,
                          shared_boilerplate=shared_bp)
            if cmp.is_duplicate and (best is None or cmp.jaccard > best[1].jaccard):
                best = (st, cmp)
        return best

    def process(
        self,
        docs: Sequence[Document],
        positions: dict | None = None,
        before_commit: Callable[[list[Decision]], None] | None = None,
    ) -> list[Decision]:
        """Decide a micro-batch in order and commit it (with ``positions``) atomically.

        Texts must be valid (``Fingerprinter.check_text``); a text that is empty after
        canonicalisation is rejected (status ``rejected``) and not indexed. ``before_commit``
        receives the decisions before the state is committed: a caller that writes its
        outputs there gets at-least-once output (a crash before the commit replays the batch).
        """
        if not docs:
            if before_commit:
                before_commit([])
            if positions:
                self.meta.positions.update(positions)
                self.store.commit(StateBatch(meta=self.meta.dumps()))
            return []
        n = len(docs)
        batch = self.fp.fingerprint_batch([d.text for d in docs])
        keys32 = (np.hstack((batch.band_keys, batch.lead_keys)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        digests_lo = np.frombuffer(b"".join(batch.digests), dtype="<u8")[::2].copy()
        times = np.fromiter((d.event_time_ms for d in docs), dtype=np.int64, count=n)
        seqs = np.full(n, -1, dtype=np.int64)
        roots = np.zeros(n, dtype=np.int64)
        hots = np.zeros((n, self.index_bands), dtype=np.uint8)
        meta = self.meta
        # replays after a crash start at the first document whose outputs are not confirmed:
        # this batch's first one, or an earlier one the caller has not confirmed yet
        meta.last_batch_seq = self._confirmed_through if self.confirm_outputs_explicitly else meta.next_seq
        state = np.array([meta.next_seq, meta.seq_lo, meta.watermark], dtype=np.int64)
        found: dict[int, tuple[_Stored, Comparison | None]] = {}
        i = 0
        in_batch: dict[int, int] = {}
        while True:
            start = i
            i, cands = self.index.run_until_candidate(i, digests_lo, keys32, times, batch.empty, self.window_ms, state, seqs, roots, hots)
            for j in range(start, i):
                if seqs[j] >= 0:
                    in_batch[int(seqs[j])] = j
            if cands is None:
                break
            seq = int(state[0])
            hit = self._verify(batch, i, cands, in_batch, docs, roots, keys32[i], found)
            root = seq
            if hit is not None:
                found[i] = hit
                root = hit[0].root_seq
            self.index.insert_into(seq, root, int(times[i]), int(digests_lo[i]), keys32[i], int(state[1]), int(state[2]) - self.window_ms, hots[i])
            seqs[i], roots[i] = seq, root
            in_batch[seq] = i
            state[0] = seq + 1
            i += 1
        meta.next_seq, meta.seq_lo, meta.watermark = int(state[0]), int(state[1]), int(state[2])
        parts = np.fromiter((d.partition for d in docs), dtype=np.int32, count=n)
        offsets = np.fromiter((d.offset for d in docs), dtype=np.int64, count=n)
        fp_records = record.encode_batch(batch, self.bits, times, parts, offsets)
        decisions: list[Decision] = []
        puts: list[tuple[int, bytes]] = []
        for i, doc in enumerate(docs):
            seq = int(seqs[i])
            if seq < 0:
                decisions.append(Decision(doc.id, "rejected", reason="no words left after canonicalisation"))
                continue
            hit = found.get(i)
            if hit is None:
                root_id = doc.id
                decisions.append(Decision(doc.id, "unique", seq=seq))
            else:
                st, cmp = hit
                root_id = st.root_id
                if cmp is None:
                    decisions.append(Decision(doc.id, "duplicate", root_id, "exact", 1.0, 1.0, st.id, "equal canonical digests", seq))
                else:
                    decisions.append(Decision(doc.id, "duplicate", root_id, cmp.relation, cmp.jaccard, cmp.ld_similarity,
                                              st.id, "; ".join(cmp.reasons), seq))
            puts.append((seq, _encode(int(roots[i]), doc.id, root_id, hots[i], fp_records[i], decisions[-1])))
        if before_commit:
            before_commit(decisions)
        old_lo = self._committed_lo
        if positions:
            meta.positions.update(positions)
        self.store.commit(StateBatch(puts=puts, delete_range=(old_lo, meta.seq_lo) if meta.seq_lo > old_lo else None,
                                     meta=meta.dumps()))
        self._committed_lo = meta.seq_lo
        return decisions

    def confirm_outputs(self, through: int | None = None) -> None:
        """The outputs of every document below seq ``through`` are durable (default: all so far).

        A caller that overlaps a batch's output commit with deciding the next batch confirms
        only up to the batch whose commit it saw succeed.
        """
        through = self.meta.next_seq if through is None else through
        self._confirmed_through = max(self._confirmed_through, min(through, self.meta.next_seq))

    def last_batch_decisions(self) -> dict[tuple[int, int], Decision]:
        """Decisions of the batches whose outputs are not confirmed, by (partition, offset) of their source.

        A Kafka processor that committed its state but crashed before committing the output
        transaction re-reads those records; it must re-emit the same decisions, not decide
        again against a state that already contains them.
        """
        out = {}
        for seq, raw in self.store.iter_from(max(self.meta.last_batch_seq, self.meta.seq_lo)):
            st = _decode(seq, raw, self.index_bands, self.num_perm, self.fp.params.key)
            out[(st.fp.partition, st.fp.offset)] = st.decision
        return out

    def delete(self, doc_id: str) -> int:
        """Remove every stored document with this id from index and store; returns how many.

        An operator action: it scans the stored records (ids are not indexed, which saves a
        write per document on the hot path).
        """
        seqs = []
        for seq, raw in self.store.iter_from(self.meta.seq_lo):
            if _decode(seq, raw, self.index_bands, self.num_perm, self.fp.params.key).id == doc_id:
                seqs.append(seq)
        for seq in seqs:
            self.index.forget(seq)
        if seqs:
            self.store.commit(StateBatch(deletes=seqs, meta=self.meta.dumps()))
        return len(seqs)

    def close(self) -> None:
        self.store.close()


def _digest_lo(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "little")


__all__ = ["Decision", "Deduplicator", "Document"]
