"""``streamdedup bench fingerprint``: streamdedup vs rensa vs datasketch on Reuters bodies.

All three run in the same process, single core, interleaved round by round so that machine
noise hits them alike; figures are medians over rounds and the ratios are taken per round.
Baselines get Python word 5-shingles (lower-cased, whitespace split), the way rensa's README
feeds text; datasketch gets the same shingles as bytes through ``MinHash.update_batch``.
streamdedup does all of canonicalisation + digest + MinHash + band keys + LD signatures.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from streamdedup._optional import require
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.sketch import record


def python_shingles(text: str, w: int) -> list[str]:
    words = text.lower().split()
    if len(words) <= w:
        return [" ".join(words)]
    return [" ".join(words[i:i + w]) for i in range(len(words) - w + 1)]


def _timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(cfg: Config, rounds: int = 5, batch_size: int = 512, datasketch_docs: int = 2000) -> dict:
    datasketch = require("datasketch", "bench", "streamdedup bench fingerprint")
    rensa = require("rensa", "bench", "streamdedup bench fingerprint")

    texts = [s.body for s in load_reuters()]
    n = len(texts)
    total_bytes = sum(len(t.encode("utf-8")) for t in texts)
    k = cfg.fingerprint.minhash.num_perm
    w = cfg.fingerprint.shingle.size
    fp = Fingerprinter(cfg.fingerprint)
    fp.fingerprint_batch(texts[:8])  # compile (or load cached) kernels outside the timing
    ds_texts = texts[:datasketch_docs]
    ds_bytes = sum(len(t.encode("utf-8")) for t in ds_texts)

    def ours() -> None:
        for i in range(0, n, batch_size):
            fp.fingerprint_batch(texts[i:i + batch_size])

    def with_rensa() -> None:
        for t in texts:
            m = rensa.RMinHash(num_perm=k, seed=42)
            m.update(python_shingles(t, w))
            m.digest()

    def with_datasketch() -> None:
        for t in ds_texts:
            m = datasketch.MinHash(num_perm=k)
            m.update_batch([s.encode("utf-8") for s in python_shingles(t, w)])

    rows: dict[str, list[float]] = {"streamdedup": [], "rensa": [], "datasketch": []}
    for _ in range(rounds):
        rows["streamdedup"].append(n / _timed(ours))
        rows["rensa"].append(n / _timed(with_rensa))
        rows["datasketch"].append(len(ds_texts) / _timed(with_datasketch))
    ratio_rensa = [a / b for a, b in zip(rows["streamdedup"], rows["rensa"])]
    ratio_ds = [a / b for a, b in zip(rows["streamdedup"], rows["datasketch"])]
    med = {name: statistics.median(v) for name, v in rows.items()}
    mb_per_doc = {"streamdedup": total_bytes / n / 1e6, "rensa": total_bytes / n / 1e6, "datasketch": ds_bytes / len(ds_texts) / 1e6}

    batch = fp.fingerprint_batch(texts)
    sizes = np.array([len(record.encode(batch, i, cfg.fingerprint.minhash.storage_bits)) for i in range(len(batch))])
    return {
        "documents": n,
        "mean_doc_bytes": total_bytes / n,
        "rounds": rounds,
        "batch_size": batch_size,
        "docs_per_s": med,
        "mb_per_s": {name: med[name] * mb_per_doc[name] for name in med},
        "ratio_vs_rensa_median": statistics.median(ratio_rensa),
        "ratio_vs_datasketch_median": statistics.median(ratio_ds),
        "ratio_vs_rensa_per_round": ratio_rensa,
        "record_bytes": {
            "mean": float(sizes.mean()),
            "p50": float(np.median(sizes)),
            "p99": float(np.percentile(sizes, 99)),
            "max": int(sizes.max()),
            "share_le_600": float((sizes <= 600).mean()),
        },
    }
