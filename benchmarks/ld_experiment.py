"""Exploration: how raw Coates estimates relate to true LD per edit kind, for several (C, N)."""
import random, sys, statistics as st
import numpy as np
from rapidfuzz.distance import Levenshtein
from streamdedup import load_config, Fingerprinter
from streamdedup.canonical import canonicalize
from streamdedup.corpus import load_reuters
from streamdedup import signature

rng = random.Random(1)
docs = [canonicalize(s.body) for s in load_reuters()]
docs = [d for d in docs if 800 <= len(d) <= 6000]
rng.shuffle(docs)
ALPH = "abcdefghijklmnopqrstuvwxyz0123456789"

def sparse(t, p):
    out = []
    for ch in t:
        r = rng.random()
        if r < p / 3: continue
        if r < 2 * p / 3: out.append(rng.choice(ALPH)); continue
        if r < p: out.append(ch); out.append(rng.choice(ALPH)); continue
        out.append(ch)
    return "".join(out)

def blocks(t, k, size, donor):
    t = list(t)
    for _ in range(k):
        pos = rng.randrange(len(t))
        s = rng.randrange(max(1, len(donor) - size))
        if rng.random() < 0.5:
            t[pos:pos] = donor[s:s + size]
        else:
            t[pos:pos + size] = donor[s:s + size]
    return "".join(t)

kinds = {
    "sparse1%": lambda t, d: sparse(t, 0.01),
    "sparse3%": lambda t, d: sparse(t, 0.03),
    "sparse10%": lambda t, d: sparse(t, 0.10),
    "block1x200": lambda t, d: blocks(t, 1, 200, d),
    "block3x300": lambda t, d: blocks(t, 3, 300, d),
    "block1x500": lambda t, d: blocks(t, 1, 500, d),
    "unrelated": lambda t, d: d,
}
N_PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 150
pairs = {}
for kind, f in kinds.items():
    pairs[kind] = []
    for i in range(N_PAIRS):
        a = docs[i]; d = docs[(i * 7 + 13) % len(docs)]
        b = f(a, d)
        pairs[kind].append((a, b, Levenshtein.distance(a, b)))

for C, N in [(8, 4), (16, 4), (16, 6), (16, 8), (32, 6), (12, 5)]:
    cfg = load_config(environ={"STREAMDEDUP_FINGERPRINT__SIGNATURE__COMPRESSION": str(C), "STREAMDEDUP_FINGERPRINT__SIGNATURE__NEIGHBOURHOOD": str(N)})
    fp = Fingerprinter(cfg.fingerprint)
    line = [f"C={C:3d} N={N}"]
    for kind, ps in pairs.items():
        ba = fp.fingerprint_batch([p[0] for p in ps]); bb = fp.fingerprint_batch([p[1] for p in ps])
        errs, ratios = [], []
        for i, (a, b, true) in enumerate(ps):
            d = signature.distance(ba.signatures[i], bb.signatures[i]) * C
            L = max(len(a), len(b))
            errs.append((d - true) / L); ratios.append(d / max(true, 1))
        line.append(f"{kind}: err {st.median(errs):+.3f} ratio {st.median(ratios):.2f}")
    print(" | ".join(line), flush=True)
