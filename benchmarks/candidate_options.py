"""Issue 11, step 1: which extra candidate generator finds noisy copies and teasers, at what cost.

For each option (a feature set per document, OPH MinHash of K slots, b bands of r rows):

- the exact set Jaccard of each hard-suite copy with its source (median, 10th percentile);
- recall of candidate generation: the copy shares at least one band key with its source
  (the option alone, and the union with today's main + lead bands);
- candidates per document: distinct earlier documents met in the option's bands with the
  engine's index rule (per band, the most recent document per key), over the whole stream,
  and how many of those today's bands did not already propose (the extra verification cost);
- bytes per indexed document the option's bands add (RAM: two 4-byte cells, a 4-byte key and
  a 1-byte hot count per band; disk: the 4-byte key per band in the record).

Run: ``python benchmarks/candidate_options.py [--stories N] [--per-kind N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np

from streamdedup import load_config
from streamdedup._kernels.fingerprint import band_keys, oph_minhash
from streamdedup._kernels.hashing import fmix64
from streamdedup.bench import hard_suite
from streamdedup.sketch.fingerprint import Fingerprinter

KINDS = ("noise 1%", "noise 1.5%", "noise 2%", "noise 3%", "teaser +1 sentence", "teaser +2 sentences", "compound")


def _sig_ngrams(sig: bytes, n: int) -> np.ndarray:
    if len(sig) < n:
        return np.array([int.from_bytes(sig, "little") | (1 << 60)] if sig else [], dtype=np.uint64)
    return np.array([int.from_bytes(sig[i:i + n], "little") for i in range(len(sig) - n + 1)], dtype=np.uint64)


def _words(canon: bytes, w: int) -> np.ndarray:
    ws = canon.split()
    k = min(w, len(ws))
    return np.array([hash(b" ".join(ws[i:i + k])) & 0xFFFFFFFFFFFFFFFF for i in range(len(ws) - k + 1)], dtype=np.uint64)


def _chars(canon: bytes, k: int) -> np.ndarray:
    k = min(k, len(canon))
    return np.array([hash(canon[i:i + k]) & 0xFFFFFFFFFFFFFFFF for i in range(len(canon) - k + 1)], dtype=np.uint64)


def _sampled(feats: np.ndarray, m: int) -> np.ndarray:
    """Broder's MOD_m: the features whose hash is 0 mod m (an unbiased sample of the set)."""
    return feats[(fmix_np(feats) % np.uint64(m)) == 0]


def fmix_np(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xFF51AFD7ED558CCD)
    x = x ^ (x >> np.uint64(33))
    return x


def options(canon: bytes, sig: bytes) -> dict[str, np.ndarray]:
    return {
        "word 2-shingles": _words(canon, 2),
        "word 3-shingles": _words(canon, 3),
        "char 5-grams": _chars(canon, 5),
        "char 8-grams": (c8 := _chars(canon, 8)),
        "char 8-grams 1/4": _sampled(c8, 4),
        "char 8-grams 1/8": _sampled(c8, 8),
        "signature 2-grams": _sig_ngrams(sig, 2),
        "signature 3-grams": _sig_ngrams(sig, 3),
        "signature 4-grams": _sig_ngrams(sig, 4),
    }


def sketch(feats: np.ndarray, k: int, bands: int, rows: int) -> np.ndarray:
    mh = np.empty(k, dtype=np.uint32)
    oph_minhash(feats, feats.shape[0], k, k.bit_length() - 1, np.uint64(3), mh)
    out = np.empty(bands, dtype=np.uint64)
    band_keys(mh, bands, rows, np.uint64(3), out)
    return out


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = set(a.tolist()), set(b.tolist())
    return len(sa & sb) / len(sa | sb) if sa or sb else 0.0


def containment(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = set(a.tolist()), set(b.tolist())
    return len(sa & sb) / len(sa) if sa else 0.0


def candidates(keys: list[np.ndarray]) -> list[set[int]]:
    """Per document, the earlier documents the engine's index rule proposes (latest per key)."""
    tables: list[dict[int, int]] = [dict() for _ in range(keys[0].shape[0])] if keys else []
    out = []
    for d, ks in enumerate(keys):
        found = set()
        for b, key in enumerate(ks.tolist()):
            prev = tables[b].get(key)
            if prev is not None:
                found.add(prev)
            tables[b][key] = d
        out.append(found)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stories", type=int, default=None)
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--banding", default="21x3,16x4")
    args = ap.parse_args()
    t0 = time.time()
    stream = hard_suite.build_stream(args.per_kind, 11, args.stories)
    cfg = load_config()
    fp = Fingerprinter(cfg.fingerprint)
    batch = fp.fingerprint_batch([it.text for it in stream])
    today = [np.concatenate((batch.band_keys[i], batch.lead_keys[i])) for i in range(len(stream))]
    today_cands = candidates(today)
    print(f"{len(stream)} documents, built in {time.time() - t0:.0f} s")
    pos = {it.id: i for i, it in enumerate(stream)}
    pairs = [(it.kind, pos[it.source], i) for i, it in enumerate(stream) if it.kind in KINDS]
    feats = [options(batch.canonical[i], batch.signatures[i]) for i in range(len(stream))]
    names = list(feats[0])
    sizes = {nm: statistics.mean(f[nm].shape[0] for f in feats) for nm in names}
    print(f"features per document (mean): " + ", ".join(f"{nm} {sizes[nm]:.0f}" for nm in names))
    print("\nexact set Jaccard of copy with source (median / 10th percentile); teasers: containment")
    for kind in KINDS:
        row = []
        for nm in names:
            vals = sorted((containment if kind.startswith("teaser") else jaccard)(feats[c][nm], feats[s][nm])
                          for k, s, c in pairs if k == kind)
            row.append(f"{nm} {statistics.median(vals):.2f}/{vals[len(vals) // 10]:.2f}")
        print(f"  {kind:20s} " + " | ".join(row))
    for banding in args.banding.split(","):
        b, r = map(int, banding.split("x"))
        print(f"\nK={args.k}, {b} bands x {r} rows: recall of candidate generation (option alone / with today's bands)")
        print(f"  {'option':18s} " + " ".join(f"{k:>14s}" for k in KINDS) + "  cand/doc  new cand/doc  RAM B  disk B")
        for nm in ["today (main + lead)"] + names:
            if nm.startswith("today"):
                keys, cands = today, today_cands
            else:
                keys = [sketch(f[nm], args.k, b, r) for f in feats]
                cands = candidates(keys)
            per = defaultdict(lambda: [0, 0, 0])
            for kind, s, c in pairs:
                alone = bool((keys[s] == keys[c]).any())
                union = alone or bool((today[s] == today[c]).any())
                per[kind][0] += alone
                per[kind][1] += union
                per[kind][2] += 1
            cand = statistics.mean(len(x) for x in cands)
            new = statistics.mean(len(x - y) for x, y in zip(cands, today_cands))
            cells = "".join(f"{per[k][0] / per[k][2]:>7.3f}/{per[k][1] / per[k][2]:.3f}" for k in KINDS)
            nb = keys[0].shape[0]
            print(f"  {nm:18s} {cells}  {cand:8.2f}  {new:12.2f}  {13 * nb:5d}  {4 * nb:6d}")
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
