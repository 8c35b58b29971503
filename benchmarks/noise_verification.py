"""Issue 11, step 2: which pair features could let a character-noise copy through verification
without letting template siblings through, scored per document on both suites.

Verification today needs word Jaccard >= ``verify.ld_min_jaccard`` (0.4) before the LD
similarity counts, and 2-3% noise copies sit at 0.1-0.4. This script takes every pair the index
bands propose (as ``verification_pairs.py``), keeps those below 0.4, and computes per pair:

- what the engine has or could have: estimated word Jaccard and LD similarity (as verified),
  the 64-slot character MinHash estimate (earlier side cut to 8 bits, as an arena would keep
  it), the same sketch of the text with every digit folded to ``0`` ("digit-blind"), the share
  of slots where the plain sketches differ and the digit-blind ones agree (a difference made of
  digits), the Jaccard of the texts' digit-bearing tokens (the proposed number sketch, exact
  here), and the canonical lengths;
- what no sketch in the arena gives, for comparison: exact byte 8-gram Jaccard, plain and
  digit-blind.

A rule "accepts" a document when it accepts one of its candidate pairs; the table counts the
documents the engine does not flag today (``accuracy.run_streamdedup``) that each rule would
add: noise copies per rate (gained / missed today) and natural stories labelled unique (false
positives; both suites share the natural stream, so the figure is per suite). Near-miss negatives
are reported when a rule flags any.

Run: ``PYTHONPATH=. python benchmarks/noise_verification.py`` (about 2 minutes).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter, defaultdict
from typing import Callable

import numpy as np

from streamdedup import load_config
from streamdedup.bench import accuracy, hard_suite
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.verify import Fingerprint, compare
from verification_pairs import proposed

DIGIT = re.compile(r"\d")
FOLD = bytes.maketrans(b"0123456789", b"0000000000")
DUP = {"exact", "near_duplicate", "contained_in"}


def _sketch_estimate(a: np.ndarray, b: np.ndarray, bits: int = 8) -> tuple[float, np.ndarray]:
    """b-bit corrected slot agreement of two MinHash rows, and the per-slot disagreement."""
    mask = (1 << bits) - 1
    differ = (a & mask) != (b & mask)
    chance = 2.0 ** -bits
    return max(0.0, (1.0 - differ.mean() - chance) / (1.0 - chance)), differ


def _grams(c: bytes) -> set[bytes]:
    return {c[i:i + 8] for i in range(len(c) - 7)}


def _jac(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _numbers(c: bytes) -> set[bytes]:
    return {t for t in c.split(b" ") if any(48 <= x <= 57 for x in t)}


def pairs(stream, cfg, fp) -> list[dict]:
    """Features of every proposed pair below ``ld_min_jaccard`` (see the module docstring)."""
    texts = [it.text for it in stream]
    batch = fp.fingerprint_batch(texts)
    blind = fp.fingerprint_batch([DIGIT.sub("0", t) for t in texts]).char_minhash
    keys = np.hstack([batch.band_keys, batch.lead_keys, batch.char_keys])
    keys[batch.empty] = np.arange(int(batch.empty.sum()) * keys.shape[1], dtype=np.uint64).reshape(-1, keys.shape[1]) + 12345
    bits = cfg.fingerprint.minhash.storage_bits
    canon = batch.canonical
    out = []
    for a, b in proposed(keys):
        if abs(stream[a].time_ms - stream[b].time_ms) > cfg.engine.window_hours * 3_600_000:
            continue
        fa = Fingerprint.from_batch(batch, a)
        fa = dataclasses.replace(fa, minhash=fa.minhash & np.uint32((1 << bits) - 1), minhash_bits=bits)
        cmp = compare(fa, Fingerprint.from_batch(batch, b), cfg.verify, cfg.fingerprint.signature, full=True)
        if cmp.relation in DUP or cmp.jaccard >= cfg.verify.ld_min_jaccard:
            continue
        ca, cb = canon[a], canon[b]
        plain, p_diff = _sketch_estimate(batch.char_minhash[a], batch.char_minhash[b])
        folded, f_diff = _sketch_estimate(blind[a], blind[b])
        na, nb = _numbers(ca), _numbers(cb)
        c8 = _jac(_grams(ca), _grams(cb))
        out.append({"a": a, "b": b, "j": cmp.jaccard, "ld": cmp.ld_similarity or 0.0, "chars": plain,
                    "folded_gain": folded - plain, "digit_slots": float((p_diff & ~f_diff).mean()),
                    "numbers": _jac(na, nb), "short": min(len(ca), len(cb)), "c8": c8,
                    "c8_folded_gain": _jac(_grams(ca.translate(FOLD)), _grams(cb.translate(FOLD))) - c8})
    return out


Rule = Callable[[dict], bool]
RULES: dict[str, Rule] = {
    "LD >= 0.9": lambda p: p["ld"] >= 0.9,
    "LD >= 0.9, chars est >= 0.55": lambda p: p["ld"] >= 0.9 and p["chars"] >= 0.55,
    "LD >= 0.9, chars est >= 0.55, numbers J >= 0.7": lambda p: p["ld"] >= 0.9 and p["chars"] >= 0.55 and p["numbers"] >= 0.7,
    "LD >= 0.9, chars est >= 0.5, folded gain <= 0.06": lambda p: p["ld"] >= 0.9 and p["chars"] >= 0.5 and p["folded_gain"] <= 0.06,
    "  same, shorter text >= 340 B (estimates)": lambda p: p["ld"] >= 0.9 and p["chars"] >= 0.5 and p["folded_gain"] <= 0.06 and p["short"] >= 340,
    "LD >= 0.9, chars est >= 0.5, digit slots <= 0.04, numbers J >= 0.5, >= 340 B":
        lambda p: p["ld"] >= 0.9 and p["chars"] >= 0.5 and p["digit_slots"] <= 0.04 and p["numbers"] >= 0.5 and p["short"] >= 340,
    "exact c8 >= 0.58": lambda p: p["ld"] >= 0.9 and p["c8"] >= 0.58,
    "exact c8 >= 0.58, folded gain <= 0.05": lambda p: p["ld"] >= 0.9 and p["c8"] >= 0.58 and p["c8_folded_gain"] <= 0.05,
    "  same, shorter text >= 340 B (exact)": lambda p: p["ld"] >= 0.9 and p["c8"] >= 0.58 and p["c8_folded_gain"] <= 0.05 and p["short"] >= 340,
}


def score(stream, flagged, rows: list[dict], rule: Rule) -> tuple[Counter, Counter, Counter]:
    """(noise copies gained per kind, natural false positives, near-miss negatives flagged)."""
    by_doc = defaultdict(list)
    for p in rows:
        by_doc[p["b"]].append(p)
    gained, natural, near = Counter(), Counter(), Counter()
    for b, ps in by_doc.items():
        it = stream[b]
        if flagged[b] or it.truth is None or not any(rule(p) for p in ps):
            continue
        if it.truth:
            gained[it.kind] += 1
        elif it.kind == "natural":
            natural["fp"] += 1
        else:
            near[it.kind] += 1
    return gained, natural, near


def main() -> None:
    t0 = time.time()
    cfg = load_config()
    fp = Fingerprinter(cfg.fingerprint)
    window_ms = int(cfg.engine.window_hours * 3_600_000)
    runs = {}
    for name, stream in (("standard", accuracy.build_stream(150, 300, 11)), ("hard", hard_suite.build_stream(200, 11, None))):
        accuracy.natural_truth(stream, cfg.fingerprint.shingle.size, window_ms)
        flagged, _, _ = accuracy.run_streamdedup(cfg, stream)
        runs[name] = (stream, flagged, pairs(stream, cfg, fp))
        print(f"{name}: {len(stream)} documents, {len(runs[name][2])} proposed pairs below ld_min_jaccard ({time.time() - t0:.0f} s)")
    stream, flagged, _ = runs["hard"]
    missed = Counter(it.kind for it, f in zip(stream, flagged) if it.truth and not f and it.kind.startswith("noise"))
    kinds = sorted(missed, key=lambda k: float(k.split()[1].rstrip("%")))
    print("\n| rule (pairs with word Jaccard < 0.4) | " + " | ".join(f"{k} (of {missed[k]})" for k in kinds)
          + " | natural FP (standard / hard) | near-miss flagged |")
    print("|---" * (len(kinds) + 3) + "|")
    for name, rule in RULES.items():
        g, _, near = score(*runs["hard"], rule)
        _, nat_std, near_std = score(*runs["standard"], rule)
        _, nat_hard, _ = score(*runs["hard"], rule)
        print(f"| {name} | " + " | ".join(str(g[k]) for k in kinds)
              + f" | {nat_std['fp']} / {nat_hard['fp']} | {sum(near.values()) + sum(near_std.values())} |")
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
