"""Accuracy of the estimators on Reuters: Jaccard (MinHash) and LD (Coates signatures).

``streamdedup bench estimates`` prints, for held-out documents:
- MinHash Jaccard estimate vs exact word-shingle Jaccard, pairs spanning J in [0.2, 1];
- raw and calibrated LD estimates vs true Levenshtein (rapidfuzz) per edit kind;
- the unrelated-pair model behind "related".
``--fit`` also fits the calibration constants on the other half of the corpus and prints them
(they live in ``streamdedup/sketch/calibration.py``).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

import numpy as np

from streamdedup.sketch import calibration
from streamdedup._optional import require
from streamdedup.text.canonical import canonicalize
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters
from streamdedup.sketch.estimate import jaccard
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.bench.edits import blocks, exact_jaccard, scattered, word_shingles

EDIT_KINDS = {
    "scattered 0.5%": lambda t, d, r: scattered(t, 0.005, r),
    "scattered 1%": lambda t, d, r: scattered(t, 0.01, r),
    "scattered 3%": lambda t, d, r: scattered(t, 0.03, r),
    "scattered 10%": lambda t, d, r: scattered(t, 0.10, r),
    "block 1x100": lambda t, d, r: blocks(t, 1, 100, d, r),
    "block 1x200": lambda t, d, r: blocks(t, 1, 200, d, r),
    "block 1x500": lambda t, d, r: blocks(t, 1, 500, d, r),
    "block 3x300": lambda t, d, r: blocks(t, 3, 300, d, r),
    "mixed 1% + 1x300": lambda t, d, r: blocks(scattered(t, 0.01, r), 1, 300, d, r),
}


@dataclass
class Pair:
    kind: str
    a: str
    b: str
    true_ld: int


def documents(min_len: int = 600, max_len: int = 6000) -> list[str]:
    docs = [canonicalize(s.text) for s in load_reuters()]
    return [d for d in docs if min_len <= len(d) <= max_len]


def make_pairs(docs: list[str], per_kind: int, rng: random.Random) -> list[Pair]:
    Levenshtein = require("rapidfuzz.distance", "bench", "streamdedup bench estimates").Levenshtein

    pairs = []
    for kind, edit in EDIT_KINDS.items():
        for _ in range(per_kind):
            a, donor = rng.sample(docs, 2)
            b = edit(a, donor, rng)
            pairs.append(Pair(kind, a, b, Levenshtein.distance(a, b)))
    for _ in range(per_kind):
        a, b = rng.sample(docs, 2)
        pairs.append(Pair("unrelated", a, b, Levenshtein.distance(a, b)))
    return pairs


def _sig_rows(fp: Fingerprinter, pairs: list[Pair]):
    ba = fp.fingerprint_batch([p.a for p in pairs])
    bb = fp.fingerprint_batch([p.b for p in pairs])
    rows = []
    for i, p in enumerate(pairs):
        d, runs = calibration.run_lengths(ba.signatures[i], bb.signatures[i])
        rows.append((p, d, runs, int(ba.lengths[i]), int(bb.lengths[i]), len(ba.signatures[i]), len(bb.signatures[i])))
    return rows


def fit(cfg: Config, docs: list[str], per_kind: int, rng: random.Random) -> dict[str, float]:
    """Fit SHORT_RUN_FACTOR (least squares), UNRELATED_MATCH_RATE and RELATED_FRACTION."""
    sig = cfg.fingerprint.signature
    fp = Fingerprinter(cfg.fingerprint)
    rows = _sig_rows(fp, make_pairs(docs, per_kind, rng))
    # true - long-run part = factor * (n_short * C / N): one-parameter least squares
    x, y = [], []
    for p, d, runs, la, lb, na, nb in rows:
        if p.kind == "unrelated":
            continue
        long_part = runs[runs >= calibration.LONG_RUN].sum() * sig.compression
        n_short = int((runs < calibration.LONG_RUN).sum())
        x.append(n_short * sig.compression / sig.neighbourhood)
        y.append(p.true_ld - long_part)
    xa, ya = np.array(x, float), np.array(y, float)
    factor = float((xa @ ya) / (xa @ xa)) if (xa @ xa) > 0 else calibration.SHORT_RUN_FACTOR
    # unrelated: d ~= long - rate * short (in symbols)
    num = den = 0.0
    for p, d, runs, la, lb, na, nb in rows:
        if p.kind == "unrelated":
            short, long_ = sorted((na, nb))
            num += (long_ - d) * short
            den += short * short
    rate = num / den if den else calibration.UNRELATED_MATCH_RATE
    ratios = []
    for p, d, runs, la, lb, na, nb in rows:
        if p.kind == "unrelated":
            short, long_ = sorted((la, lb))
            ratios.append(d * sig.compression / (long_ - rate * short))
    related_fraction = float(np.percentile(ratios, 1)) if ratios else calibration.RELATED_FRACTION
    return {
        "SHORT_RUN_FACTOR": round(factor, 3),
        "UNRELATED_MATCH_RATE": round(rate, 3),
        "RELATED_FRACTION": round(related_fraction, 3),
    }


def ld_report(cfg: Config, docs: list[str], per_kind: int, rng: random.Random) -> list[dict]:
    sig = cfg.fingerprint.signature
    fp = Fingerprinter(cfg.fingerprint)
    rows = _sig_rows(fp, make_pairs(docs, per_kind, rng))
    out = []
    for kind in list(EDIT_KINDS) + ["unrelated"]:
        raw_err, cal_err, related = [], [], []
        for p, d, runs, la, lb, na, nb in rows:
            if p.kind != kind:
                continue
            longest = max(la, lb)
            raw_err.append((d * sig.compression - p.true_ld) / longest)
            cal_err.append((calibration.calibrated_from_runs(runs, sig) - p.true_ld) / longest)
            related.append(d * sig.compression < calibration.RELATED_FRACTION * calibration.expected_unrelated_ld(la, lb, sig))
        out.append({
            "kind": kind,
            "pairs": len(raw_err),
            "raw_median_abs": statistics.median(abs(e) for e in raw_err),
            "raw_median_signed": statistics.median(raw_err),
            "calibrated_median_abs": statistics.median(abs(e) for e in cal_err),
            "calibrated_median_signed": statistics.median(cal_err),
            "calibrated_p90_abs": float(np.percentile(np.abs(cal_err), 90)),
            "related_rate": sum(related) / len(related),
        })
    return out


def jaccard_report(cfg: Config, docs: list[str], n_pairs: int, rng: random.Random) -> dict:
    """MinHash estimate vs exact word-shingle Jaccard over pairs spanning J in [0.2, 1]."""
    fp = Fingerprinter(cfg.fingerprint)
    w = cfg.fingerprint.shingle.size
    # Variants made by dropping/replacing a random fraction of sentences-sized chunks give a
    # spread of Jaccard values; pairs are then bucketed so that every tenth of [0.2, 1] counts.
    buckets: dict[int, list[tuple[str, str, float]]] = {k: [] for k in range(2, 10)}
    want = max(1, n_pairs // 8)
    tries = 0
    while min(len(v) for v in buckets.values()) < want and tries < n_pairs * 200:
        tries += 1
        a, donor = rng.sample(docs, 2)
        words = a.split()
        if len(words) < 60:
            continue
        keep = rng.uniform(0.15, 1.0)
        cut = int(len(words) * keep)
        start = rng.randrange(0, len(words) - cut + 1)
        b_words = words[start:start + cut]
        if rng.random() < 0.5:
            b_words = b_words + donor.split()[: rng.randrange(0, len(words) - cut + 1)]
        b = " ".join(b_words)
        j = exact_jaccard(word_shingles(a, w), word_shingles(b, w))
        k = min(9, int(j * 10))
        if k >= 2 and len(buckets[k]) < want:
            buckets[k].append((a, b, j))
    flat = [p for v in buckets.values() for p in v]
    ba = fp.fingerprint_batch([p[0] for p in flat])
    bb = fp.fingerprint_batch([p[1] for p in flat])
    errs = np.array([jaccard(ba.minhash[i], bb.minhash[i]) - flat[i][2] for i in range(len(flat))])
    per_bucket = {}
    idx = 0
    for k, v in buckets.items():
        e = errs[idx: idx + len(v)]
        idx += len(v)
        per_bucket[f"{k / 10:.1f}-{(k + 1) / 10:.1f}"] = float(np.mean(np.abs(e))) if len(e) else float("nan")
    return {"pairs": len(flat), "mae": float(np.mean(np.abs(errs))), "bias": float(np.mean(errs)), "per_bucket": per_bucket}
