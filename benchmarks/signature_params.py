"""Sweep Coates' C (compression) and N (neighbourhood) on Reuters: why the defaults are C=16, N=4.

Prints, per (C, N), the median error of the raw and the calibrated LD estimate per edit kind
(|est - true| / length of the longer text). Run: .venv/bin/python benchmarks/signature_params.py
(about a minute). The calibration constants were fitted for the defaults; the calibrated
column for other settings shows how far they carry.
"""

from __future__ import annotations

import random
import statistics

from streamdedup import load_config
from streamdedup.bench import estimates

KINDS = ("scattered 1%", "scattered 3%", "block 1x200", "block 1x500", "block 3x300", "unrelated")


def main() -> None:
    docs = estimates.documents()
    random.Random(5).shuffle(docs)
    docs = docs[: len(docs) // 2]
    print(f"{'C':>3} {'N':>2} " + " ".join(f"{k:>15}" for k in KINDS) + "   (raw/calibrated median |err|/len)")
    for c, n in ((8, 4), (16, 3), (16, 4), (16, 6), (16, 8), (24, 4), (32, 4), (32, 6)):
        cfg = load_config(environ={
            "STREAMDEDUP_FINGERPRINT__SIGNATURE__COMPRESSION": str(c),
            "STREAMDEDUP_FINGERPRINT__SIGNATURE__NEIGHBOURHOOD": str(n),
        })
        rows = {r["kind"]: r for r in estimates.ld_report(cfg, docs, 120, random.Random(11))}
        cells = [f"{rows[k]['raw_median_abs']:.3f}/{rows[k]['calibrated_median_abs']:.3f}".rjust(15) for k in KINDS]
        print(f"{c:>3} {n:>2} " + " ".join(cells), flush=True)
    print(f"(mean canonical length {statistics.mean(len(d) for d in docs):.0f} bytes)")


if __name__ == "__main__":
    main()
