import random, sys, statistics as st
import numpy as np
sys.argv += ["100"]
exec(open("benchmarks/ld_experiment.py").read().split("for C, N in")[0])
from streamdedup import _kernels
C, N = 16, 4
cfg = load_config(environ={"STREAMDEDUP_FINGERPRINT__SIGNATURE__COMPRESSION": str(C), "STREAMDEDUP_FINGERPRINT__SIGNATURE__NEIGHBOURHOOD": str(N)})
fp = Fingerprinter(cfg.fingerprint)
data = {}
for kind, ps in pairs.items():
    ba = fp.fingerprint_batch([p[0] for p in ps]); bb = fp.fingerprint_batch([p[1] for p in ps])
    rows = []
    for i, (a, b, true) in enumerate(ps):
        sa = np.frombuffer(ba.signatures[i], np.uint8); sb = np.frombuffer(bb.signatures[i], np.uint8)
        out = np.zeros(len(sa) + len(sb) + 1, np.int64)
        for g in (0, 1, 2, 3):
            d, nr = _kernels.edit_runs(sa, sb, g, out)
            rows.append((g, d, out[:nr].copy(), true, max(len(a), len(b))))
    data[kind] = rows
for g in (0, 1, 2, 3):
  for small, f1 in ((1, 2.0), (1, 3.0), (2, 3.0), (2, 4.0)):
    line = [f"g={g} small<={small} f={f1}"]
    for kind, rows in data.items():
        errs = []
        for (gg, d, runs, true, L) in rows:
            if gg != g: continue
            est = sum((k * f1 if k <= small else k * C) for k in runs)
            errs.append((est - true) / L)
        line.append(f"{kind} {st.median(errs):+.3f}/{np.percentile(np.abs(errs), 90):.3f}")
    print(" | ".join(line))
print("--- least squares per-run-length weights (g=0), k>=K uses k*C")
from scipy.optimize import nnls
for K in (3, 4, 5, 6):
    X, y, kinds_ = [], [], []
    for kind, rows in data.items():
        if kind == "unrelated": continue
        for (gg, d, runs, true, L) in rows:
            if gg != 0: continue
            feats = [float(np.sum(runs == k)) / L for k in range(1, K)]
            big = float(sum(k * C for k in runs if k >= K)) / L
            X.append(feats); y.append(true / L - big); kinds_.append(kind)
    w, _ = nnls(np.array(X), np.array(y))
    line = [f"K={K} w={np.round(w,1)}"]
    for kind in data:
        if kind == "unrelated": continue
        errs = [float(np.dot(X[i], w) - y[i]) for i in range(len(y)) if kinds_[i] == kind]
        line.append(f"{kind} {st.median(errs):+.3f}/{np.percentile(np.abs(errs), 90):.3f}")
    print(" | ".join(line))
