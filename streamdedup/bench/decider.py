"""``streamdedup bench decider``: the staged topology's decider alone, on pre-computed
fingerprint records (its ceiling), and what the fingerprint workers spend per record.

1. Worker side, once: Reuters-derived records (``feeds.mixed_records``) in micro-batches of
   ``engine.batch_size`` through prepare (JSON scan and decode), fingerprinting and the
   fingerprint-record encoder, each step timed per record: the work the fingerprint workers
   parallelise. The record sizes against the input values' sizes.
2. Decider, ``rounds`` times on a fresh RocksDB state (as a processor uses it: commits on the
   store's thread): decode each batch of records and ``run_fingerprinted`` it, the state
   committed with the fingerprints-topic position. Fingerprints/s over the whole stream
   (median of the rounds), and the decode's share.
3. The same for web-page-sized texts (``feeds.long_records``, 20-50 KB).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

from streamdedup.config import Config
from streamdedup.engine.decisions import DUPLICATE, REJECTED, UNIQUE
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.engine.checkpoint import Source
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.fingerprints import FingerprintCodec, decide
from streamdedup.pipeline.decide import warm_up
from streamdedup.state.pipelined import PipelinedStore
from streamdedup.state.rocks import RocksStore
from streamdedup.bench.feeds import long_records, mixed_records

INPUT = Source("news", 0)
FINGERPRINTS = Source("fingerprints", 0)


def worker_pass(cfg: Config, values: list[bytes]) -> tuple[list[list[bytes]], dict]:
    """The fingerprint workers' output for ``values`` (one list per micro-batch) and their cost."""
    preparer = Preparer(cfg)
    codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
    bs = cfg.engine.batch_size
    spent = {"prepare": 0.0, "fingerprint": 0.0, "encode": 0.0}
    batches = []
    for lo in range(0, len(values), bs):
        chunk = values[lo:lo + bs]
        n = len(chunk)
        t0 = time.perf_counter()
        data, scan = preparer.scan_values(chunk)
        prep = preparer.prepare(data, scan, 0, n, lambda k, lo=lo: f"{INPUT}:{lo + k}", 1_700_000_000_000)
        ids, texts, times = prep.gather()
        t1 = time.perf_counter()
        fps = codec.fp.fingerprint_prepared(texts)
        t2 = time.perf_counter()
        docs = prep.docs
        out: list = [None] * n
        for k, v in zip(docs.tolist(), codec.encode(fps, ids, times, [INPUT], np.zeros(len(docs), np.int64), docs + lo)):
            out[k] = v
        for k, why in prep.dead.items():
            out[k] = codec.encode_dead(INPUT, lo + k, why.stage, why.reason)
        t3 = time.perf_counter()
        spent["prepare"] += t1 - t0
        spent["fingerprint"] += t2 - t1
        spent["encode"] += t3 - t2
        batches.append(out)
    us = {f"{k}_us_per_record": v / len(values) * 1e6 for k, v in spent.items()}
    us["worker_us_per_record"] = sum(spent.values()) / len(values) * 1e6
    return batches, us


def decider_round(cfg: Config, batches: list[list[bytes]]) -> dict:
    """Decode + decide every batch on a fresh RocksDB state; the last commit is waited for."""
    codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
    n = sum(len(b) for b in batches)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Deduplicator(cfg, PipelinedStore(RocksStore(os.path.join(tmp, "state"))), auto_sizing="full")
        warm_up(cfg)
        decode_s = 0.0
        position = 0
        counts = np.zeros(3, dtype=np.int64)
        dead = 0
        t0 = time.perf_counter()
        for values in batches:
            t = time.perf_counter()
            dec = codec.decode(values)
            decode_s += time.perf_counter() - t
            position += len(values)
            cp = decide(engine, dec, {FINGERPRINTS: position})
            dead += len(dec.dead)
            counts += np.bincount(cp.decisions.codes, minlength=3)
        cp.wait_durable()
        elapsed = time.perf_counter() - t0
        engine.close()
    statuses = {"unique": int(counts[UNIQUE]), "duplicate": int(counts[DUPLICATE]), "rejected": int(counts[REJECTED]),
                "dead_letter": dead}
    return {"fingerprints_per_s": n / elapsed, "decode_us_per_record": decode_s / n * 1e6, "counts": statuses}


def _sizes(values: list[bytes], batches: list[list[bytes]]) -> dict:
    fp = np.array([len(v) for b in batches for v in b], dtype=np.float64)
    raw = np.array([len(v) for v in values], dtype=np.float64)
    return {"record_bytes_mean": fp.mean(), "record_bytes_p50": float(np.median(fp)),
            "record_bytes_p99": float(np.percentile(fp, 99)), "record_bytes_max": int(fp.max()),
            "value_bytes_mean": raw.mean(), "record_to_value": fp.sum() / raw.sum()}


def measure(cfg: Config, values: list[bytes], rounds: int) -> dict:
    worker_pass(cfg, values[:cfg.engine.batch_size])  # load the kernels outside the timing
    batches, worker = worker_pass(cfg, values)
    out: dict = {"documents": len(values), **_sizes(values, batches), **worker}
    runs = [decider_round(cfg, batches) for _ in range(rounds)]
    out["decider_runs"] = [r["fingerprints_per_s"] for r in runs]
    out["decider_fingerprints_per_s"] = statistics.median(out["decider_runs"])
    out["decode_us_per_record"] = statistics.median(r["decode_us_per_record"] for r in runs)
    out["decider_us_per_record"] = 1e6 / out["decider_fingerprints_per_s"]
    out["counts"] = runs[0]["counts"]
    return out


def run(cfg: Config, documents: int = 200_000, long_documents: int = 2000, rounds: int = 3) -> dict:
    res: dict = {"batch_size": cfg.engine.batch_size, "rounds": rounds}
    values = [v for _, v in mixed_records(documents)]
    res["reuters"] = measure(cfg, values, rounds)
    del values
    if long_documents:
        res["long"] = measure(cfg, [v for _, v in long_records(long_documents)], rounds)
    return res
