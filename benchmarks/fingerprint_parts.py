"""Where a document's fingerprint time goes: the fingerprint kernel with one part left out at a time.

The kernel (``streamdedup._kernels.fingerprint.fingerprint_batch``) is recompiled here from its
own source with a switch before each part; a part's cost is the whole kernel's time less the
time without it (medians of rounds that alternate every variant, so machine noise hits them
alike). Parts: anchor keys, the pass over the canonical bytes (word hashes, LD signature
symbols, sampled byte grams) with everything that reads its words, the digest, word shingles,
the main one-permutation MinHash, its band keys, the lead's MinHash and bands, the character
MinHash and bands; "canonical form only" leaves every part out. Also the whole call as a user
makes it (``Fingerprinter.fingerprint_batch``: input checks, HTML stripping, the batch buffer,
output arrays) against the kernel alone.

Corpora: Reuters-21578 bodies (English, ASCII) and People's Daily articles (Simplified Chinese),
fetched into the cache on first use; ``zh-hant``: the same articles in Traditional characters
(OpenCC's s2t), which the default configuration folds back to Simplified before fingerprinting.

    python benchmarks/fingerprint_parts.py [--rounds 7] [--corpus reuters|zh|zh-hant|both]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import textwrap
import time

from numba import njit

import streamdedup._kernels.fingerprint as F
import streamdedup.sketch.fingerprint as SF
from streamdedup.bench.corpus import load_reuters
from streamdedup.bench.corpus_cjk import load_peoples_daily
from streamdedup.config import load_config
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.text.canonical import prepare_batch

#: (the kernel's line, the same line behind a switch bit)
SWITCHES = [
    ("        anchor_n[d] = anchor_keys(", "        anchor_n[d] = 0 if skip & 1 else anchor_keys("),
    ("        _words_and_signature(canon,", "        if not skip & 2: _words_and_signature(canon,"),
    ("        _digest_keyed(canon, start, pos, digest_out[d], key0, key1, keyed)",
     "        if not skip & 4: _digest_keyed(canon, start, pos, digest_out[d], key0, key1, keyed)"),
    ("            n = combine_words(words, counts[0], w, hashes)", "            n = 0 if skip & 8 else combine_words(words, counts[0], w, hashes)"),
    ("            _oph(hashes, n, num_perm, log2k, mh_seed, minhash_out[d], filled)",
     "            if not skip & 16: _oph(hashes, n, num_perm, log2k, mh_seed, minhash_out[d], filled)"),
    ("        _band_keys(minhash_out[d], bands, rows, main_seeds, band_out[d])",
     "        if not skip & 32: _band_keys(minhash_out[d], bands, rows, main_seeds, band_out[d])"),
    ("        if lead_bands > 0:", "        if lead_bands > 0 and not skip & 64:"),
    ("        if char_bands > 0:", "        if char_bands > 0 and not skip & 128:"),
]
#: (row, the parts it leaves out); a pass left out takes what reads its words with it
ROWS = [
    ("whole kernel", 0),
    ("anchor keys", 1),
    ("byte pass + all that reads its words", 2 | 8 | 16 | 32 | 64),
    ("digest", 4),
    ("word shingles (+ the MinHash loops over them)", 8),
    ("main MinHash (OPH, 128 slots)", 16),
    ("main band keys", 32),
    ("lead MinHash and bands", 64),
    ("character MinHash and bands", 128),
    ("canonical form only", 255),
]


def switched_kernel():
    """``fingerprint_batch`` with a leading ``skip`` bit mask, compiled from the module's source."""
    src = inspect.getsource(F.fingerprint_batch.py_func).replace("@njit(cache=True, nogil=True)\n", "")
    src = src.replace("def fingerprint_batch(", "def fingerprint_switched(skip, ")
    for line, switched in SWITCHES:
        if line not in src:
            raise SystemExit(f"the kernel changed: no line {line.strip()!r} to switch")
        src = src.replace(line, switched)
    scope = dict(vars(F))
    exec(textwrap.dedent(src), scope)  # noqa: S102 - the package's own kernel source, edited above
    return njit(nogil=True)(scope["fingerprint_switched"])


def measure(name: str, texts: list[str], rounds: int) -> None:
    cfg = load_config(None)
    fp = Fingerprinter(cfg.fingerprint)
    fp.fingerprint_batch(texts[:8])  # tables and kernels loaded
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    batches = [prepare_batch(texts[i:i + 512], cfg.fingerprint.canonical) for i in range(0, len(texts), 512)]
    kernel = switched_kernel()
    skip = [0]
    real = SF._kernels.fingerprint_batch

    def switched(*args):
        return kernel(skip[0], *args)

    SF._kernels.fingerprint_batch = switched
    tables = fp._unicode or SF._NO_TABLES
    try:
        def kernel_pass() -> None:
            for raw, offsets in batches:
                fp._kernel(raw, offsets, tables)

        kernel_pass()  # compiles the switched kernel
        times: dict[str, list[float]] = {row: [] for row, _ in ROWS}
        calls: list[float] = []
        for _ in range(rounds):
            for row, bits in ROWS:
                skip[0] = bits
                t0 = time.perf_counter()
                kernel_pass()
                times[row].append(time.perf_counter() - t0)
            SF._kernels.fingerprint_batch = real
            t0 = time.perf_counter()
            for i in range(0, len(texts), 512):
                fp.fingerprint_batch(texts[i:i + 512])
            calls.append(time.perf_counter() - t0)
            SF._kernels.fingerprint_batch = switched
    finally:
        SF._kernels.fingerprint_batch = real
    n = len(texts)
    whole = statistics.median(times["whole kernel"])
    call = statistics.median(calls)
    print(f"\n{name}: {n} texts, mean {n_bytes / n:.0f} bytes, medians of {rounds} rounds")
    print(f"  fingerprint_batch (as a user calls it): {call / n * 1e6:6.2f} us a text, {n_bytes / call / 1e6:6.1f} MB/s")
    print(f"  {'kernel alone':46s} {whole / n * 1e6:6.2f} us a text, {n_bytes / whole / 1e6:6.1f} MB/s, "
          f"{whole / n_bytes * 1e9:5.2f} ns a byte")
    for row, bits in ROWS[1:]:
        m = statistics.median(times[row])
        label = f"without: {row}" if bits != 255 else row
        print(f"  {label:46s} {m / n * 1e6:6.2f} us a text; the part {(whole - m) / n * 1e6:5.2f} us "
              f"({(whole - m) / n_bytes * 1e9:4.2f} ns a byte)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--corpus", choices=["reuters", "zh", "zh-hant", "both"], default="both")
    args = ap.parse_args()
    if args.corpus in ("reuters", "both"):
        measure("Reuters-21578 bodies", [s.body for s in load_reuters()], args.rounds)
    if args.corpus in ("zh", "both"):
        measure("People's Daily (Simplified Chinese)", [s.body for s in load_peoples_daily()], args.rounds)
    if args.corpus == "zh-hant":
        import opencc

        s2t = opencc.OpenCC("s2t.json")
        measure("People's Daily in Traditional characters", [s2t.convert(s.body) for s in load_peoples_daily()],
                args.rounds)


if __name__ == "__main__":
    main()
