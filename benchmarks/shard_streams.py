"""Recorded fingerprint streams for ``shard_simulation.py``: what a staged topology's workers
write to the fingerprints topic, kept on disk so every scheme replays the same records.

- a Reuters-derived feed (``feeds.mixed_records`` / ``news_records``), through the workers'
  own steps (``bench.decider.worker_pass``: Preparer, Fingerprinter, record codec);
- the labelled stream of ``streamdedup bench accuracy`` (Reuters in date order with event
  times, synthetic copies, hard negatives sharing long footers), with its ground truth, so a
  scheme's precision and recall can be set beside the unsharded engine's.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass

import numpy as np

from streamdedup.bench import accuracy as bench_accuracy
from streamdedup.bench.decider import worker_pass
from streamdedup.bench.feeds import long_records, mixed_stream, news_records
from streamdedup.config import Config
from streamdedup.engine.decisions import DUPLICATE
from streamdedup.engine.checkpoint import Source
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline.fingerprints import FingerprintCodec

#: feed -> records and, per record, the record it re-sends (-1: new; None: not known)
FEEDS = {"mixed": mixed_stream, "news": lambda n: (news_records(n), None), "long": lambda n: (long_records(n), None)}
CACHE = os.path.expanduser("~/.cache/streamdedup/shard-sim")


@dataclass
class Stream:
    """The decoded fingerprint records, one entry per micro-batch, plus per-document columns."""

    batches: list  # DecodedFingerprints per micro-batch
    keys32: list  # uint32 (n, bands) per batch: main then lead band keys, low halves
    gidx: list  # int64 (n,) per batch: the document's position among all documents
    gseq: np.ndarray  # int64 per document: its seq (position among indexed documents), -1 if empty
    ids: list[str]
    decode_us: float  # per fingerprint record, decoding (every shard pays it)
    record_bytes: float  # mean fingerprint record size
    #: the accuracy stream's items (truth, kind, source), None for a feed
    items: list | None = None
    #: a feed's truth: per record the record it re-sends, -1 for a new story
    sources: np.ndarray | None = None

    @property
    def indexed(self) -> int:
        return int(self.gseq.max()) + 1


def _cached(name: str, make):
    path = os.path.join(CACHE, name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    value = make()
    os.makedirs(CACHE, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".tmp", path)
    return value


def record_feed(cfg: Config, feed: str, n: int) -> tuple[list[list[bytes]], list[int] | None]:
    """The fingerprint records of ``n`` records of ``feed``, one list per micro-batch, and the
    feed's truth (cached)."""
    def make():
        records, sources = FEEDS[feed](n)
        batches, cost = worker_pass(cfg, [v for _, v in records])
        print(f"recorded {n} {feed} records: worker {cost['worker_us_per_record']:.1f} us/record", flush=True)
        return batches, sources
    key = Fingerprinter(cfg.fingerprint).params.key
    return _cached(f"{feed}-{n}-{cfg.engine.batch_size}-{key:08x}.pkl", make)


def record_accuracy(cfg: Config) -> tuple[list[list[bytes]], list]:
    """The accuracy benchmark's stream as fingerprint records (event times kept) and its items."""
    def make():
        t0 = time.perf_counter()
        items = bench_accuracy.build_stream(150, 300, 11)  # the defaults of ``bench accuracy``
        bench_accuracy.natural_truth(items, cfg.fingerprint.shingle.size, int(cfg.engine.window_hours * 3_600_000))
        codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
        bs, out = cfg.engine.batch_size, []
        for lo in range(0, len(items), bs):
            chunk = items[lo:lo + bs]
            batch = codec.fp.fingerprint_batch([it.text for it in chunk])
            out.append(codec.encode(batch, [it.id for it in chunk], np.array([it.time_ms for it in chunk], np.int64),
                                    [Source("news", 0)], np.zeros(len(chunk), np.int64), np.arange(lo, lo + len(chunk))))
        print(f"recorded the accuracy stream ({len(items)} items) in {time.perf_counter() - t0:.0f} s", flush=True)
        for it in items:
            it.text = ""  # the truth is what is kept; the texts are Reuters'
        return out, items
    key = Fingerprinter(cfg.fingerprint).params.key
    return _cached(f"accuracy-{cfg.engine.batch_size}-{key:08x}.pkl", make)


def load_stream(cfg: Config, records: list[list[bytes]], items: list | None = None, sources: list[int] | None = None) -> Stream:
    codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
    codec.decode(records[0])  # load (or compile) the kernels outside the timing
    t0 = time.perf_counter()
    batches = [codec.decode(values) for values in records]
    decode_s = time.perf_counter() - t0
    n_records = sum(len(v) for v in records)
    keys32, gidx, empty, ids = [], [], [], []
    low = np.uint64(0xFFFFFFFF)
    for dec in batches:
        b = dec.batch
        keys32.append(np.ascontiguousarray((np.hstack((b.band_keys, b.lead_keys)) & low).astype(np.uint32)))
        gidx.append(np.arange(len(ids), len(ids) + len(b), dtype=np.int64))
        empty.append(b.empty)
        ids.extend(dec.ids[k] for k in range(len(b)))
    empty_all = np.concatenate(empty)
    gseq = np.where(empty_all, -1, np.cumsum(~empty_all) - 1).astype(np.int64)
    size = sum(len(v) for values in records for v in values) / n_records
    return Stream(batches, keys32, gidx, gseq, ids, decode_s / n_records * 1e6, size, items,
                  None if sources is None else np.asarray(sources, np.int64))


def accuracy(stream: Stream, got) -> dict | None:
    """Precision and recall against the stream's truth (the labelled stream: ``bench accuracy``'s
    scoring; the mixed feed: a resend is a duplicate, a new story is not), and the share of
    flagged copies whose duplicate_of is their source's cluster root."""
    flagged = got.code == DUPLICATE
    if stream.items is not None:
        out = bench_accuracy._scores(stream.items, flagged.tolist())
        where = {doc_id: k for k, doc_id in enumerate(stream.ids)}
        pairs = np.array([(k, where[it.source]) for k, it in enumerate(stream.items) if it.source and flagged[k]])
    elif stream.sources is not None:
        truth = stream.sources >= 0
        tp, fp, fn = int(np.sum(truth & flagged)), int(np.sum(~truth & flagged)), int(np.sum(truth & ~flagged))
        out = {"tp": tp, "fp": fp, "fn": fn, "precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn),
               "hard_negatives_flagged": float("nan")}
        pairs = np.stack([np.flatnonzero(truth & flagged), stream.sources[truth & flagged]], axis=1)
    else:
        return None
    out["duplicate_of_correct"] = float(np.mean(got.root[pairs[:, 0]] == got.root[pairs[:, 1]])) if len(pairs) else float("nan")
    return out
