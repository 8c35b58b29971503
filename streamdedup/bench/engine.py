"""``streamdedup bench engine``: file mode end to end, a datasketch streaming baseline, index size.

1. File mode on Reuters (JSONL written to a temp dir, RocksDB state): docs/s over the whole
   run, and per-micro-batch cost per document (p50, p99), median of ``rounds`` runs.
2. datasketch in the same run: ``MinHash.update_batch`` over Python word 5-shingles of the
   canonical text plus ``MinHashLSH`` query-then-insert, the streaming filter of the accuracy
   harness, on the same stories.
3. Index size: synthetic documents (random news-vocabulary sentences) fill the index; the
   throughput of a probe of fresh synthetic documents is measured at 100k and at N indexed
   documents, with the process RSS and the state directory's bytes per indexed document.
"""

from __future__ import annotations

import gc
import os
import statistics
import tempfile
import time

import numpy as np
import orjson

from streamdedup._optional import require
from streamdedup.text.canonical import canonicalize
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.pipeline.decide import FingerprintAndDecide
from streamdedup.runtime.filemode import run_file
from streamdedup.state.pipelined import PipelinedStore
from streamdedup.state.rocks import RocksStore


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _write_reuters(path: str) -> int:
    stories = load_reuters()
    with open(path, "wb") as f:
        for s in stories:
            f.write(orjson.dumps({"id": s.id, "title": s.title, "text": s.body}) + b"\n")
    return len(stories)


def file_mode(cfg: Config, rounds: int = 3) -> dict:
    runs = []
    per_doc_us: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "reuters.jsonl")
        n = _write_reuters(inp)
        run_file(cfg, inp, os.path.join(tmp, "warm"))  # compile / load kernels outside the timing
        for r in range(rounds):
            batch_times: list[float] = []
            last = [time.perf_counter(), 0]

            def tick(lines: int) -> None:
                now = time.perf_counter()
                if lines > last[1]:
                    batch_times.append((now - last[0]) / (lines - last[1]) * 1e6)
                last[0], last[1] = now, lines

            s = run_file(cfg, inp, os.path.join(tmp, f"out{r}"), progress=tick)
            runs.append(s.docs_per_s)
            per_doc_us.extend(batch_times)
    return {"documents": n, "docs_per_s": statistics.median(runs), "runs": runs,
            "us_per_doc_p50": float(np.percentile(per_doc_us, 50)), "us_per_doc_p99": float(np.percentile(per_doc_us, 99))}


def datasketch_stream(cfg: Config, limit: int = 5000) -> dict:
    ds = require("datasketch", "bench", "streamdedup bench engine")
    MinHash, MinHashLSH = ds.MinHash, ds.MinHashLSH

    texts = [s.text for s in load_reuters()][:limit]
    k = cfg.fingerprint.minhash.num_perm
    w = cfg.fingerprint.shingle.size
    t0 = time.perf_counter()
    lsh = MinHashLSH(threshold=0.5, num_perm=k)
    for n, t in enumerate(texts):
        words = canonicalize(t).split()
        m = MinHash(num_perm=k)
        ww = min(w, len(words))
        if words:
            m.update_batch([" ".join(words[i:i + ww]).encode() for i in range(len(words) - ww + 1)])
        if not lsh.query(m):
            lsh.insert(str(n), m)
    dt = time.perf_counter() - t0
    return {"documents": len(texts), "docs_per_s": len(texts) / dt}


_VOCAB = None


def _synthetic_texts(rng: np.random.Generator, n: int) -> list[str]:
    global _VOCAB
    if _VOCAB is None:
        words: set[str] = set()
        for s in load_reuters()[:3000]:
            words.update(canonicalize(s.body).split())
        _VOCAB = np.array(sorted(words))
    lengths = rng.integers(40, 90, size=n)
    idx = rng.integers(0, len(_VOCAB), size=int(lengths.sum()))
    out = []
    pos = 0
    for ln in lengths:
        out.append(" ".join(_VOCAB[idx[pos:pos + ln]]))
        pos += ln
    return out


def index_size(cfg: Config, documents: int = 5_000_000, checkpoint: int = 100_000, probe: int = 30_000) -> dict:
    """Throughput on ``probe`` fresh documents with ``checkpoint`` and with ``documents`` indexed.

    The index is filled with synthetic stories (random news-vocabulary sentences: distinct
    texts, so every document is indexed); each probe is new synthetic stories of the same kind,
    timed per micro-batch (docs/s over the probe, and the median batch). RAM is the process
    RSS growth per indexed document; disk is the state directory after close (memtable flushed).
    """
    eng_cfg = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"max_documents": documents + 2 * probe})})
    rng = np.random.default_rng(5)
    bs = cfg.engine.batch_size
    out: dict = {"documents": documents, "checkpoint": checkpoint, "probe": probe}
    with tempfile.TemporaryDirectory() as tmp:
        _synthetic_texts(rng, 10)  # the vocabulary, outside the RSS figure
        gc.collect()
        rss0 = _rss_bytes()
        # the store as file mode and Kafka use it: commits on a worker thread
        engine = Deduplicator(eng_cfg, PipelinedStore(RocksStore(os.path.join(tmp, "state"))))
        step = FingerprintAndDecide(engine)
        seq = 0

        def process(texts: list[str]) -> list[float]:
            nonlocal seq
            per_batch = []
            for i in range(0, len(texts), bs):
                chunk = texts[i:i + bs]
                n = len(chunk)
                t0 = time.perf_counter()
                step([f"s{seq + j}" for j in range(n)], chunk, np.zeros(n, np.int64), np.full(n, -1, np.int64),
                     np.arange(seq, seq + n, dtype=np.int64))
                per_batch.append((time.perf_counter() - t0) / n)
                seq += n
            return per_batch

        def fill_to(target: int) -> None:
            while seq < target:
                process(_synthetic_texts(rng, min(50_000, target - seq)))

        def probe_rate() -> tuple[float, float]:
            texts = _synthetic_texts(rng, probe)
            gc.collect()
            t0 = time.perf_counter()
            per_batch = process(texts)
            return probe / (time.perf_counter() - t0), statistics.median(per_batch) * 1e6

        t_fill = time.perf_counter()
        fill_to(checkpoint)
        out["docs_per_s_at_checkpoint"], out["us_per_doc_median_at_checkpoint"] = probe_rate()
        fill_to(documents)
        out["fill_docs_per_s"] = seq / (time.perf_counter() - t_fill)
        out["docs_per_s_at_full"], out["us_per_doc_median_at_full"] = probe_rate()
        indexed = engine.indexed_documents
        out["indexed"] = indexed
        out["rss_bytes_per_doc"] = (_rss_bytes() - rss0) / indexed
        out["index_array_bytes_per_doc"] = (engine.index.bytes_used + engine.arena.bytes_used) / indexed
        store = engine.store.inner
        engine.close()
        out["disk_bytes_per_doc"] = store.disk_bytes() / indexed
    out["ratio_full_vs_checkpoint"] = out["docs_per_s_at_full"] / out["docs_per_s_at_checkpoint"]
    return out
