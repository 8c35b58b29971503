"""Issue 11, step 2: what the verification sees on candidate pairs, positives against negatives.

Every pair an index band proposes (today's main and lead bands and the character bands, with
the engine's rule: per band the most recent document per key) in the standard and the hard
stream is compared as the engine does (the earlier document's MinHash cut to
``minhash.storage_bits``, every estimate computed) and labelled by exact word 5-shingles:
positive = a synthetic copy and its source, or Jaccard >= 0.6 / containment >= 0.8 (the truth's
duplicate bounds); negative = Jaccard < 0.4 and both containments < 0.5 (its unique bounds).
Prints, for the LD path below ``verify.ld_min_jaccard``, how many positives and negatives each
candidate rule would accept, and the negatives nearest to the rule.

Run: ``python benchmarks/verification_pairs.py [--stories N]`` (the hard stream is cut to N stories).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter

import numpy as np

from streamdedup import load_config
from streamdedup.bench import accuracy, hard_suite
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.verify import Fingerprint, compare


def proposed(keys: np.ndarray) -> list[tuple[int, int]]:
    tables: list[dict[int, int]] = [dict() for _ in range(keys.shape[1])]
    out = set()
    for d in range(keys.shape[0]):
        for b, key in enumerate(keys[d].tolist()):
            prev = tables[b].get(key)
            if prev is not None:
                out.add((prev, d))
            tables[b][key] = d
    return sorted(out)


def pairs_of(stream, cfg, fp) -> list[dict]:
    batch = fp.fingerprint_batch([it.text for it in stream])
    keys = np.hstack([batch.band_keys, batch.lead_keys] + ([batch.char_keys] if hasattr(batch, "char_keys") else []))
    keys[batch.empty] = np.arange(int(batch.empty.sum()) * keys.shape[1], dtype=np.uint64).reshape(-1, keys.shape[1]) + 12345
    bits = cfg.fingerprint.minhash.storage_bits
    sh = [hard_suite._shingles(it.text, 5) for it in stream]
    canon = fp.fingerprint_batch([it.text for it in stream]).canonical
    out = []
    for a, b in proposed(keys):
        A, B = stream[a], stream[b]
        if abs(A.time_ms - B.time_ms) > 72 * 3600_000:
            continue
        sa, sb = sh[a], sh[b]
        inter = len(sa & sb)
        jac = inter / max(len(sa | sb), 1)
        c_b, c_a = inter / max(len(sb), 1), inter / max(len(sa), 1)
        if B.source == A.id and B.truth:
            label = "pos " + B.kind
        elif jac >= 0.6 or c_b >= 0.8:
            label = "pos natural"
        elif jac < 0.4 and c_b < 0.5 and c_a < 0.5:
            label = "neg " + (B.kind if B.kind != "natural" or A.kind == "natural" else A.kind)
        else:
            continue
        ca, cb = canon[a], canon[b]
        g8a = {ca[i:i + 8] for i in range(len(ca) - 7)}
        g8b = {cb[i:i + 8] for i in range(len(cb) - 7)}
        c8 = len(g8a & g8b) / max(len(g8a | g8b), 1)
        fa = Fingerprint.from_batch(batch, a)
        fa = dataclasses.replace(fa, minhash=fa.minhash & np.uint32((1 << bits) - 1), minhash_bits=bits)
        cmp = compare(fa, Fingerprint.from_batch(batch, b), cfg.verify, cfg.fingerprint.signature, full=True)
        out.append({"label": label, "a": A.id, "b": B.id, "j": cmp.jaccard, "ld": cmp.ld_similarity or 0.0,
                    "c_ba": cmp.containment_b_in_a, "emb": cmp.embedding_similarity, "rel": cmp.relation,
                    "exact_j": jac, "c8": c8, "c8_in": len(g8a & g8b) / max(len(g8b), 1), "len_a": len(A.text), "len_b": len(B.text)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stories", type=int, default=None)
    args = ap.parse_args()
    t0 = time.time()
    cfg = load_config()
    fp = Fingerprinter(cfg.fingerprint)
    rows = []
    for name, stream in (("standard", accuracy.build_stream(150, 300, 11)),
                         ("hard", hard_suite.build_stream(200, 11, args.stories))):
        got = pairs_of(stream, cfg, fp)
        print(f"{name}: {len(stream)} documents, {len(got)} labelled candidate pairs ({time.time() - t0:.0f} s)")
        rows += got
    dup = set(cfg.verify.duplicate_relations)
    print("\nrejected today, by label (relation):")
    c = Counter((r["label"], r["rel"]) for r in rows if r["rel"] not in dup)
    for (lab, rel), n in sorted(c.items()):
        print(f"  {lab:28s} {rel:14s} {n}")
    print("\nLD path under ld_min_jaccard: pairs with Jaccard in [lo, 0.4) and LD similarity >= t (pos / neg)")
    for lo in (0.0, 0.1, 0.15, 0.2):
        cells = []
        for t in (0.85, 0.9, 0.93, 0.95, 0.96, 0.97):
            sel = [r for r in rows if lo <= r["j"] < 0.4 and r["ld"] >= t and r["rel"] not in dup]
            cells.append(f"{t}: {sum(r['label'].startswith('pos') for r in sel)}/{sum(r['label'].startswith('neg') for r in sel)}")
        print(f"  J >= {lo:4}: " + "  ".join(cells))
    print("\nLD similarity >= 0.65 and Jaccard < 0.4, by exact char-8-gram Jaccard >= t (pos / neg)")
    for t in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7):
        sel = [r for r in rows if r["j"] < 0.4 and r["ld"] >= 0.65 and r["c8"] >= t and r["rel"] not in dup]
        print(f"  {t}: {sum(r['label'].startswith('pos') for r in sel)}/{sum(r['label'].startswith('neg') for r in sel)}  "
              + " ".join(f"{r['label']}:{r['c8']:.2f}/{r['ld']:.2f}" for r in sel if r["label"].startswith("neg"))[:600])
    print("\nnegatives with LD similarity >= 0.85 (highest first):")
    for r in sorted((r for r in rows if r["label"].startswith("neg") and r["ld"] >= 0.85), key=lambda r: -r["ld"])[:25]:
        print(f"  {r['label']:24s} {r['a']:>10s} {r['b']:>28s} J {r['j']:.3f} (exact {r['exact_j']:.3f}) LD {r['ld']:.3f} "
              f"c8 {r['c8']:.3f} emb {r['emb']:.3f} len {r['len_a']}/{r['len_b']} {r['rel']}")
    print("\nteasers rejected today: containment estimate, embedding")
    for r in rows:
        if r["label"].startswith("pos teaser") and r["rel"] not in dup:
            print(f"  {r['b']:>28s} J {r['j']:.3f} c {r['c_ba']:.3f} emb {r['emb']:.3f} len {r['len_a']}/{r['len_b']}")
            break
    emb = sorted(r["emb"] for r in rows if r["label"].startswith("pos teaser"))
    nemb = sorted(r["emb"] for r in rows if r["label"].startswith("neg") and r["len_b"] < r["len_a"])
    for name, v in (("teaser pairs", emb), ("negatives, shorter new", nemb)):
        if v:
            print(f"  {name}: embedding p5 {v[len(v) // 20]:.3f} p50 {v[len(v) // 2]:.3f} max {v[-1]:.3f} (n {len(v)}); "
                  f">= 0.8: {sum(x >= 0.8 for x in v)}, >= 0.7: {sum(x >= 0.7 for x in v)}")
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
