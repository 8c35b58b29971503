"""Sharding the decider's index (issue 13, item 2): a simulation over a recorded fingerprint stream.

Records the fingerprint records a staged topology's workers would write for a Reuters-derived
stream (``feeds.mixed_records``, the real Preparer, Fingerprinter and record codec), decides
them once with the unsharded engine (``Deduplicator.run_fingerprinted`` over a MemoryStore: the
reference), then replays the same records through S shards per scheme and a gather, and
compares every decision (status, duplicate_of, relation; matched doc for information).

Schemes (design and ordering rules: benchmarks/SHARDING.md):

- ``band``: shard s owns the index bands g with g mod S == s (main and lead). Every shard
  stores every document's verification data (arena, digest) but only its own bands' keys, and
  decides every document against the candidates of its bands.
- ``epoch``: shard k stores the documents whose seq (position among indexed documents in the
  fingerprints log) lies in epoch k (``ceil(N / S)`` documents each); every shard decides every
  document against its own documents; only the shard of the document's epoch inserts it.
- ``interleaved``: like ``epoch`` with shard = seq mod S.

Each shard runs the engine's own decide kernel (``_kernels.decide.decide_batch``) on its own
``CandidateIndex`` and ``Arena``, exactly as ``run_fingerprinted`` does, with the kernel's
``insert`` flag (False: decided against the index, not inserted) and, for ``band``, the
band-key columns it owns (MinHash slots reordered so that its bands' rows come first, which
the Jaccard estimate does not see). S = 1 is checked to equal the engine decision for decision.

The gather: per document, the duplicate verdicts of all shards; an exact match (the newest
exact copy) wins, then the highest estimated Jaccard, ties to the newest matched document;
``duplicate_of`` is the gather's cluster root of the matched document (first seen in log order).

Run (2 shared cores: ~2-4 minutes for 200k records; the first run also records the stream into
~/.cache/streamdedup/shard-sim)::

    .venv/bin/python benchmarks/shard_simulation.py --documents 200000 --repeats 2 --json /tmp/shards.json
    .venv/bin/python benchmarks/shard_simulation.py --stream accuracy     # bench accuracy's labelled stream
    .venv/bin/python benchmarks/shard_simulation.py --stream long --documents 2000   # 20-50 KB pages

``STREAMDEDUP_*`` variables override settings as for every command (e.g.
``STREAMDEDUP_ENGINE__HOT_BUCKET_CLUSTERS=255`` switches boilerplate detection off everywhere).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from streamdedup import load_config
from streamdedup._kernels import decide as KD
from streamdedup._kernels.verify import N_OUT, REL_EXACT
from streamdedup.engine.arena import Arena
from streamdedup.config import Config
from streamdedup.pipeline.decide import warm_up
from streamdedup.engine.decisions import DUPLICATE, REJECTED, UNIQUE
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.engine.checkpoint import Source
from streamdedup.sketch.fingerprint import MAX_SIGNATURE_SYMBOLS
from streamdedup.engine.index import CandidateIndex
from streamdedup.pipeline.fingerprints import decide
from streamdedup.state.base import MemoryStore

from shard_streams import FEEDS, Stream, accuracy, load_stream, record_accuracy, record_feed

SCHEMES = ("band", "epoch", "interleaved")
#: bytes of one verdict entry a shard sends the gather for a document it found a duplicate for:
#: position in the batch (varint, 2), relation (1), flags (1), matched seq (varint, 4 up to
#: 268 M), five float32 estimates (20), matched id and root id (length + 36 bytes each, a UUID:
#: the gather cannot read another shard's records); a shard that found nothing sends nothing
VERDICT_ENTRY_BYTES = 28 + 2 * 37
#: per verdict message: codec version, shard, first fingerprint offset, count (varints)
VERDICT_HEAD_BYTES = 16


# ------------------------------------------------------------------------ one shard

class Shard:
    """One shard's index and arena, deciding batches with the engine's kernel (as
    ``Deduplicator.run_fingerprinted`` does, minus the state records nobody reads here)."""

    def __init__(self, ref: Deduplicator, capacity: int, bands: list[int] | None = None):
        cfg = ref.cfg
        main = ref.bands
        self.cols = np.arange(ref.index_bands) if bands is None else np.array(sorted(bands), dtype=np.int64)
        own_main = [int(b) for b in self.cols if b < main]
        rows = ref.rows
        # MinHash slots of the owned main bands first: the kernel's band b covers slots b*rows..
        rest = [s for s in range(ref.num_perm) if s // rows not in own_main]
        self.perm = None if bands is None else np.array([s for b in own_main for s in range(b * rows, (b + 1) * rows)] + rest)
        eng = cfg.engine
        self.index = CandidateIndex(len(self.cols), capacity, eng.hot_bucket_clusters, eng.max_candidates, full=True)
        self.arena = Arena(capacity, ref.num_perm, ref.bits)
        self.state = np.array([0, 0, -(2**62)], dtype=np.int64)  # next seq, seq_lo, watermark
        self.window_ms = ref.window_ms
        self.params = KD.DecideParams(len(own_main), rows, self.index.hot_threshold, ref.window_ms, eng.max_verified,
                                      ref.bits, ref._params)
        self.scratch = KD.Scratch(np.ones(ref.num_perm, dtype=np.bool_), np.zeros(2 * MAX_SIGNATURE_SYMBOLS + 1, np.int64),
                                  np.zeros(MAX_SIGNATURE_SYMBOLS, np.uint8), np.zeros(N_OUT, np.float64))
        self.glob = np.full(capacity, -1, dtype=np.int64)  # local seq -> document index
        self.seconds = 0.0

    def decide(self, dec, keys32: np.ndarray, gidx: np.ndarray, insert: np.ndarray) -> tuple:
        """(relation, estimated Jaccard, matched document index) per document of the batch."""
        b = dec.batch
        keys = keys32 if self.perm is None else np.ascontiguousarray(keys32[:, self.cols])
        minhash = b.minhash if self.perm is None else np.ascontiguousarray(b.minhash[:, self.perm])
        n = len(b)
        t0 = time.perf_counter()
        st, ix = self.state, self.index
        self.arena.reserve(int(b.fine_len[insert & ~b.empty].sum()), ix.slot_seq, ix.slot_time, int(st[1]),
                           int(st[2]) - self.window_ms, int(st[0]))
        out = KD.outputs(n, len(self.cols))
        docs = KD.BatchPrints(b.digest_words, keys, dec.times, b.empty, minhash, b.n_shingles, b.lengths, b.chars,
                              b.fine_buf, b.fine_start, b.fine_len, insert, b.anchors, b.anchor_n)
        i = 0
        while True:
            i = KD.decide_batch(i, ix.grow_at, docs, self.params, st, ix.arrays(), self.arena.arrays(), ix.probe,
                                self.scratch, out)
            if i == n:
                break
            ix.grow(int(st[0]), int(st[1]))
        self.seconds += time.perf_counter() - t0
        new = out.seq >= 0
        self.glob[out.seq[new]] = gidx[new]
        matched = np.where(out.match >= 0, self.glob[np.maximum(out.match, 0)], -1)
        return out.rel.copy(), out.num[:, KD.D_JACCARD].copy(), matched

    @property
    def documents(self) -> int:
        return int(self.state[0])

    @property
    def bytes(self) -> int:
        return self.index.bytes_used + self.arena.bytes_used


# ------------------------------------------------------------------------ schemes

def _shards(scheme: str, s_count: int, ref: Deduplicator, n_docs: int) -> list[Shard]:
    if scheme == "band":
        return [Shard(ref, n_docs, [g for g in range(ref.index_bands) if g % s_count == s]) for s in range(s_count)]
    return [Shard(ref, math.ceil(n_docs / s_count)) for _ in range(s_count)]


def _home(scheme: str, s_count: int, gseq: np.ndarray, n_docs: int) -> np.ndarray:
    """Per document, the shard that inserts it (-1: every shard, the ``band`` scheme)."""
    if scheme == "band":
        return np.full(gseq.shape, -1, dtype=np.int64)
    if scheme == "epoch":
        return np.where(gseq >= 0, gseq // math.ceil(n_docs / s_count), -2)
    return np.where(gseq >= 0, gseq % s_count, -2)


@dataclass
class Run:
    scheme: str
    shards: int
    rel: np.ndarray  # (S, N) per shard and document
    jac: np.ndarray
    matched: np.ndarray
    shard_objs: list = field(repr=False, default_factory=list)


def run_scheme(scheme: str, s_count: int, ref: Deduplicator, stream: Stream, repeats: int = 1) -> Run:
    """The shards' verdicts; each shard's time is the least of ``repeats`` runs (a shared
    machine's noise only ever adds time)."""
    run = _run_once(scheme, s_count, ref, stream)
    for _ in range(repeats - 1):
        again = _run_once(scheme, s_count, ref, stream)
        for mine, other in zip(run.shard_objs, again.shard_objs):
            mine.seconds = min(mine.seconds, other.seconds)
    return run


def _run_once(scheme: str, s_count: int, ref: Deduplicator, stream: Stream) -> Run:
    n = len(stream.ids)
    n_docs = stream.indexed
    shards = _shards(scheme, s_count, ref, n_docs)
    home = _home(scheme, s_count, stream.gseq, n_docs)
    rel = np.zeros((s_count, n), np.uint8)
    jac = np.full((s_count, n), np.nan, np.float32)
    matched = np.full((s_count, n), -1, np.int64)
    for dec, keys32, gidx in zip(stream.batches, stream.keys32, stream.gidx):
        lo, hi = gidx[0], gidx[-1] + 1
        for s, shard in enumerate(shards):
            insert = (home[lo:hi] == s) | (home[lo:hi] == -1)
            rel[s, lo:hi], jac[s, lo:hi], matched[s, lo:hi] = shard.decide(dec, keys32, gidx, insert)
    return Run(scheme, s_count, rel, jac, matched, shards)


def gather(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global (relation, matched, root) per document from the shards' verdicts, in log order."""
    s_count, n = run.rel.shape
    best_rel = np.zeros(n, np.uint8)
    best_j = np.full(n, -np.inf, np.float32)
    best_m = np.full(n, -1, np.int64)
    for s in range(s_count):
        r, j, m = run.rel[s], run.jac[s], run.matched[s]
        ex, best_ex = r == REL_EXACT, best_rel == REL_EXACT
        better = (r > 0) & ((ex & ~best_ex) | ((ex == best_ex) & ((j > best_j) | ((j == best_j) & (m > best_m)))))
        best_rel = np.where(better, r, best_rel)
        best_j = np.where(better, j, best_j)
        best_m = np.where(better, m, best_m)
    root = np.arange(n, dtype=np.int64)
    for d in np.flatnonzero(best_rel).tolist():  # matched < d: its root is final
        root[d] = root[best_m[d]]
    return best_rel, best_m, root


# ------------------------------------------------------------------------ the unsharded engine

@dataclass
class Decisions:
    """Per document: status code, relation (0 = none), matched and root document indices."""

    code: np.ndarray
    rel: np.ndarray
    matched: np.ndarray
    root: np.ndarray
    seconds: float = 0.0


def reference(cfg: Config, stream: Stream, **engine: object) -> Decisions:
    """The unsharded engine's decisions (``engine`` overrides ``cfg.engine`` settings)."""
    n_docs = stream.indexed
    eng = cfg.engine.model_copy(update={"max_documents": n_docs, "index_sizing": "full", **engine})
    dedup = Deduplicator(cfg.model_copy(update={"engine": eng}), MemoryStore(), auto_sizing="full")
    warm_up(dedup.cfg)
    where = {doc_id: k for k, doc_id in enumerate(stream.ids)}
    n = len(stream.ids)
    out = Decisions(np.zeros(n, np.int8), np.zeros(n, np.uint8), np.full(n, -1, np.int64), np.arange(n, dtype=np.int64))
    seconds = 0.0
    for pos, (dec, gidx) in enumerate(zip(stream.batches, stream.gidx)):
        t0 = time.perf_counter()
        d = decide(dedup, dec, {Source("fingerprints", 0): pos + 1}).decisions
        seconds += time.perf_counter() - t0
        out.code[gidx] = d.codes
        out.rel[gidx] = d.relations
        for i in np.flatnonzero(d.relations).tolist():
            out.matched[gidx[i]] = where[d.matched_ids[i]]
            out.root[gidx[i]] = where[d.root_ids[i]]
    out.seconds = seconds
    return out


def sharded_decisions(run: Run, stream: Stream) -> Decisions:
    rel, matched, root = gather(run)
    code = np.where(stream.gseq < 0, REJECTED, np.where(rel > 0, DUPLICATE, UNIQUE)).astype(np.int8)
    return Decisions(code, rel, matched, root)


def compare(ref: Decisions, got: Decisions) -> dict[str, np.ndarray]:
    """Documents whose decision differs, by kind (the first four change what a user sees)."""
    both = (ref.code == DUPLICATE) & (got.code == DUPLICATE)
    return {
        "unique_to_duplicate": np.flatnonzero((ref.code == UNIQUE) & (got.code == DUPLICATE)),
        "duplicate_to_unique": np.flatnonzero((ref.code == DUPLICATE) & (got.code == UNIQUE)),
        "other_root": np.flatnonzero(both & (ref.root != got.root)),
        "other_relation": np.flatnonzero(both & (ref.root == got.root) & (ref.rel != got.rel)),
        "other_matched_only": np.flatnonzero(both & (ref.root == got.root) & (ref.rel == got.rel) & (ref.matched != got.matched)),
    }


# ------------------------------------------------------------------------ costs

def _gather_shard(run: Run, stream: Stream, k: int) -> int:
    """The shard the gather runs beside for batch ``k`` (its verdicts travel no topic): in
    ``epoch`` the active shard (the one inserting the batch's last document), else shard 0."""
    if run.scheme != "epoch":
        return 0
    n_docs = stream.indexed
    g = stream.gseq[stream.gidx[k][-1]]
    return int(max(g, 0) // math.ceil(n_docs / run.shards))


def costs(run: Run, stream: Stream) -> dict:
    n = len(stream.ids)
    entries = messages = 0
    for k, gidx in enumerate(stream.gidx):
        at = _gather_shard(run, stream, k)
        others = [s for s in range(run.shards) if s != at]
        messages += len(others)
        entries += int(np.count_nonzero(run.rel[others][:, gidx[0]:gidx[-1] + 1]))
    per_shard = [{"documents": sh.documents, "mb": sh.bytes / 1e6, "kernel_us": sh.seconds / n * 1e6,
                  "docs_per_s": n / (sh.seconds + stream.decode_us * n / 1e6)} for sh in run.shard_objs]
    return {
        "max_documents_per_shard": max(p["documents"] for p in per_shard),
        "max_mb_per_shard": max(p["mb"] for p in per_shard),
        "min_docs_per_s": min(p["docs_per_s"] for p in per_shard),
        "verdict_messages_per_record": messages / n,
        "verdict_entries_per_record": entries / n,
        "verdict_bytes_per_record": (messages * VERDICT_HEAD_BYTES + entries * VERDICT_ENTRY_BYTES) / n,
        "messages_written_per_record": 3 + messages / n,
        "fingerprint_bytes_read_per_record": run.shards * stream.record_bytes,
        "shards": per_shard,
    }


def exact_epoch_shipping(stream: Stream, s_count: int, bits: int, num_perm: int) -> dict:
    """What the exact epoch variant would ship from the older epochs' shards to the active one
    per record: for each band of the document, each older epoch's newest document with the same
    key (band, seq, hot count, root: 10 bytes) and, once per distinct such document, its
    verification data (MinHash at ``bits``, digest half, lengths, signature). Every epoch is
    taken as live (no eviction in the recorded feed): an upper bound."""
    n_docs = stream.indexed
    e_size = math.ceil(n_docs / s_count)
    epoch = np.where(stream.gseq >= 0, stream.gseq // e_size, -1)
    keys = np.vstack(stream.keys32)
    data = num_perm * bits // 8 + 16 + np.concatenate([d.batch.fine_len for d in stream.batches])
    entries = distinct = data_bytes = docs_with = 0
    for e in range(s_count - 1):
        mine, later = np.flatnonzero(epoch == e), np.flatnonzero(epoch > e)
        writers = np.full((later.shape[0], keys.shape[1]), -1, np.int64)
        for b in range(keys.shape[1]):
            order = np.argsort(keys[mine, b], kind="stable")
            ks = keys[mine, b][order]
            last = np.append(ks[1:] != ks[:-1], True)  # the newest writer of each key in epoch e
            uk, newest = ks[last], mine[order][last]
            q = keys[later, b]
            pos = np.minimum(np.searchsorted(uk, q), uk.shape[0] - 1)
            writers[:, b] = np.where(uk[pos] == q, newest[pos], -1)
        entries += int(np.count_nonzero(writers >= 0))
        w = np.sort(writers, axis=1)
        first = (w >= 0) & np.concatenate([np.ones((w.shape[0], 1), bool), w[:, 1:] != w[:, :-1]], axis=1)
        distinct += int(first.sum())
        data_bytes += int(data[w[first]].sum())
        docs_with += int(np.count_nonzero(first.any(axis=1)))
    n = len(stream.ids)
    head = (s_count - 1) * len(stream.batches) * VERDICT_HEAD_BYTES
    return {"band_entries_per_record": entries / n, "candidates_per_record": distinct / n,
            "bytes_per_record": (head + 10 * entries + 2 * docs_with + data_bytes) / n}


# ------------------------------------------------------------------------ report

KINDS = ("unique_to_duplicate", "duplicate_to_unique", "other_root", "other_relation", "other_matched_only")


def _line(name: str, diff: dict, c: dict | None = None, acc: dict | None = None) -> str:
    out = f"{name:<16} " + " ".join(f"{len(diff[k]):>6}" for k in KINDS)
    if c is not None:
        out += (f" {c['max_documents_per_shard']:>9} {c['max_mb_per_shard']:>8.1f} {c['min_docs_per_s'] / 1e3:>8.1f}k "
                f"{c['messages_written_per_record']:>8.3f} {c['verdict_bytes_per_record']:>7.1f}")
    if acc is not None:
        out += (f"  P {acc['precision']:.4f} R {acc['recall']:.4f} fp {acc['fp']} fn {acc['fn']} "
                f"root ok {acc['duplicate_of_correct']:.4f} hard neg. {acc['hard_negatives_flagged']:.3f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stream", choices=sorted(FEEDS) + ["accuracy"], default="mixed")
    ap.add_argument("--documents", type=int, default=200_000, help="records of a feed")
    ap.add_argument("--shards", default="1,2,4,8")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--repeats", type=int, default=1, help="runs per scheme for the timing (decisions are the same)")
    ap.add_argument("--json", help="write every figure and the first differing documents here")
    args = ap.parse_args()
    cfg = load_config()  # STREAMDEDUP_* variables override settings, as for every command
    if args.stream == "accuracy":
        stream = load_stream(cfg, *record_accuracy(cfg))
    else:
        records, sources = record_feed(cfg, args.stream, args.documents)
        stream = load_stream(cfg, records, sources=sources)
    n = len(stream.ids)
    ref = reference(cfg, stream)
    engine = Deduplicator(cfg, MemoryStore())  # its settings, for the shards
    Shard(engine, 4096).decide(stream.batches[0], stream.keys32[0], stream.gidx[0],
                               np.ones(len(stream.gidx[0]), np.bool_))  # load the kernel outside the timing
    res: dict = {"stream": args.stream, "records": n, "indexed": stream.indexed, "decode_us": stream.decode_us,
                 "record_bytes": stream.record_bytes, "engine_docs_per_s": n / ref.seconds,
                 "duplicates": int(np.count_nonzero(ref.code == DUPLICATE)), "accuracy": accuracy(stream, ref), "runs": {}}
    print(f"{n} fingerprints ({stream.indexed} indexed), {stream.record_bytes:.0f} B each, decode {stream.decode_us:.2f} us each;"
          f" unsharded engine: {res['duplicates']} duplicates, {res['engine_docs_per_s'] / 1e3:.1f}k docs/s (decide + records)")
    print(f"{'':<16}  u->dup  dup->u  o.root  o.rel  o.match  docs/shard  MB/shard  docs/s/sh  msgs/rec  vB/rec")
    print(_line("engine", compare(ref, ref), acc=res["accuracy"]))
    for name, over in (("engine grow", {"index_sizing": "grow"}), ("engine 2N cells", {"max_documents": 2 * stream.indexed})):
        alt = reference(cfg, stream, **over)
        diff = compare(ref, alt)
        res["runs"][name] = {"differences": {k: len(v) for k, v in diff.items()}, "accuracy": accuracy(stream, alt)}
        print(_line(name, diff, acc=res["runs"][name]["accuracy"]), flush=True)
    for scheme in args.schemes.split(","):
        for s_count in (int(x) for x in args.shards.split(",")):
            run = run_scheme(scheme, s_count, engine, stream, args.repeats)
            got = sharded_decisions(run, stream)
            diff, c, acc = compare(ref, got), costs(run, stream), accuracy(stream, got)
            if scheme == "epoch" and s_count > 1 and stream.items is None:
                c["exact_shipping"] = exact_epoch_shipping(stream, s_count, engine.bits, engine.num_perm)
            res["runs"][f"{scheme} S={s_count}"] = {"differences": {k: len(v) for k, v in diff.items()}, "costs": c,
                                                    "accuracy": acc, "examples": {k: v[:50].tolist() for k, v in diff.items()}}
            print(_line(f"{scheme} S={s_count}", diff, c, acc), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
