"""Hold a revision test implementation to the reference on the captured calls.

Run: ``.venv/bin/python benchmarks/revision-kernel/compare.py CANDIDATE [--sets a,b,...]
[--dir DIR] [--limit N] [--timing [--batch N]] [--report FILE]``.

``CANDIDATE`` is ``module:function``, called as ``function(earlier, later, earlier_head,
later_head)`` like :func:`streamdedup.engine.revisions.detect` and returning an object with
``revised``, ``kinds``, ``changed`` and ``typos``. Every call captured by ``capture.py`` (in
``DIR``, by default where it writes) is run through both; per set this prints the calls, how
many results are identical and how many differ (of those, how many in ``revised``), and writes
up to 50 differing calls a set to a JSON report (both results, the texts' lengths, and the
texts from just before the first place they differ). ``compare.py
streamdedup.engine.revisions:detect`` is the self-test: everything identical.

``--timing``: each implementation timed on every call of a set, three passes in this process
with the two taking turns to go first; a call's time is its best of the three. Per set: mean,
median, p99 and max microseconds a call, and the reference's mean over the candidate's.
``--batch N`` adds the compiled test's mean a pair as the engine calls it (UTF-8 texts, ``N``
pairs a ``detect_many`` call, best of three passes).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture import all_sets, default_dir, load, set_path  # noqa: E402

REFERENCE = "streamdedup.engine.revisions:detect"
#: differing calls a set keeps for the report
EXAMPLES = 50
#: characters of each text shown, from a third of them before the first difference
EXCERPT_CHARS = 400


def resolve(spec: str) -> Callable:
    """``module:function`` (the function may be a dotted attribute path)."""
    module, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise SystemExit(f"CANDIDATE must be module:function, got {spec!r}")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def outcome(r) -> tuple[bool, tuple[str, ...], tuple[str, ...], int]:
    """What the two implementations must agree on (sequences compared as tuples, so a list is
    no difference)."""
    return bool(r.revised), tuple(r.kinds), tuple(r.changed), int(r.typos)


def _safe(fn: Callable, call: tuple) -> tuple | str:
    try:
        return outcome(fn(*call))
    except Exception as exc:  # a candidate's crash is a difference like any other, reported
        return f"{type(exc).__name__}: {exc}"


def _as_dict(o: tuple | str) -> dict | str:
    if isinstance(o, str):
        return o
    return {"revised": o[0], "kinds": list(o[1]), "changed": list(o[2]), "typos": o[3]}


def _excerpts(earlier: str, later: str) -> dict:
    """The two texts from a little before the first character where they differ (a word
    boundary; Han text has few spaces, so this is by characters, not tokens)."""
    c = next((i for i, (x, y) in enumerate(zip(earlier, later)) if x != y), min(len(earlier), len(later)))
    lo = earlier.rfind(" ", 0, max(0, c - EXCERPT_CHARS // 3)) + 1
    token = len(earlier[:c].split()) - (c > 0 and not earlier[c - 1].isspace())
    return {"first_differing_char": c, "first_differing_word": token,
            "earlier": earlier[lo:lo + EXCERPT_CHARS], "later": later[lo:lo + EXCERPT_CHARS]}


def compare_set(calls: list, reference: Callable, candidate: Callable) -> tuple[dict, list[dict]]:
    """Counts and up to :data:`EXAMPLES` differing calls."""
    same = differ = differ_revised = 0
    examples = []
    for n, call in enumerate(calls):
        ref, cand = _safe(reference, call), _safe(candidate, call)
        if ref == cand:
            same += 1
            continue
        differ += 1
        revised_differs = isinstance(ref, str) or isinstance(cand, str) or ref[0] != cand[0]
        differ_revised += revised_differs
        if len(examples) < EXAMPLES:
            earlier, later, eh, lh = call
            fields = ["error"] if isinstance(ref, str) or isinstance(cand, str) else \
                [f for f, x, y in zip(("revised", "kinds", "changed", "typos"), ref, cand) if x != y]
            examples.append({"index": n, "earlier_head": eh, "later_head": lh, "earlier_chars": len(earlier),
                             "later_chars": len(later), "differs_in": fields, "reference": _as_dict(ref),
                             "candidate": _as_dict(cand), **_excerpts(earlier, later)})
    return {"calls": len(calls), "identical": same, "differing": differ, "differing_revised": differ_revised}, examples


def _pass(fn: Callable, calls: list) -> np.ndarray:
    """Seconds of each call, the collector off as ``timeit`` has it (its pauses land on
    whichever call happens to allocate, not on the one that made the garbage)."""
    out = np.empty(len(calls))
    clock = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        for n, call in enumerate(calls):
            t = clock()
            fn(*call)
            out[n] = clock() - t
    finally:
        gc.enable()
    return out


def time_set(calls: list, reference: Callable, candidate: Callable, passes: int = 3) -> dict[str, np.ndarray]:
    """Each call's best time of ``passes`` for both, the two taking turns to go first."""
    best = {"reference": np.full(len(calls), np.inf), "candidate": np.full(len(calls), np.inf)}
    order = [("reference", reference), ("candidate", candidate)]
    for p in range(passes):
        for name, fn in order if p % 2 == 0 else order[::-1]:
            np.minimum(best[name], _pass(fn, calls), out=best[name])
    return best


def time_batched(calls: list, batch: int, passes: int = 3) -> float:
    """Seconds a pair of the compiled test as the engine calls it: texts as UTF-8 bytes, pairs
    of the same headline lengths through ``detect_many`` ``batch`` at a time; best of ``passes``."""
    from streamdedup.engine.revision_kernel import detect_many

    groups: dict[tuple, list] = {}
    for earlier, later, eh, lh in calls:
        groups.setdefault((eh, lh), []).append((earlier.encode(), later.encode()))
    best = np.inf
    for _ in range(passes):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            for (eh, lh), pairs in groups.items():
                for k in range(0, len(pairs), batch):
                    detect_many(pairs[k:k + batch], eh, lh)
            best = min(best, time.perf_counter() - t)
        finally:
            gc.enable()
    return best / len(calls)


def _stats(sec: np.ndarray) -> str:
    us = sec * 1e6
    return (f"mean {us.mean():10.1f}  median {np.median(us):9.1f}  p99 {np.percentile(us, 99):10.1f}  "
            f"max {us.max():11.1f} us")


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("candidate", help="module:function with detect's signature")
    p.add_argument("--sets", default=None, help="comma-separated sets  [default: every set found in DIR]")
    p.add_argument("--dir", type=Path, default=None, help="where capture.py wrote the sets  [default: its default]")
    p.add_argument("--limit", type=int, default=None, help="the first N calls of each set only")
    p.add_argument("--timing", action="store_true", help="also time both (best of 3 passes, per call)")
    p.add_argument("--batch", type=int, default=0,
                   help="with --timing: also time the compiled test in batches of N pairs, as the engine calls it")
    p.add_argument("--report", type=Path, default=None, help="the JSON report  [default: DIR/compare-CANDIDATE.json]")
    args = p.parse_args(argv)

    folder = (args.dir or default_dir()).expanduser()
    names = [s.strip() for s in args.sets.split(",") if s.strip()] if args.sets else \
        [n for n in all_sets() if set_path(folder, n).exists()]
    missing = [n for n in names if not set_path(folder, n).exists()]
    if missing or not names:
        raise SystemExit(f"no captured set {missing or ''} in {folder}: run capture.py first")
    reference, candidate = resolve(REFERENCE), resolve(args.candidate)
    report_path = args.report or folder / f"compare-{_slug(args.candidate)}.json"
    report: dict = {"candidate": args.candidate, "reference": REFERENCE, "sets": {}}
    all_same = True
    for name in names:
        calls = load(folder, name)[:args.limit]
        t0 = time.perf_counter()
        counts, examples = compare_set(calls, reference, candidate)
        all_same &= counts["differing"] == 0
        print(f"{name:18s} calls {counts['calls']:8,d}  identical {counts['identical']:8,d}  "
              f"differing {counts['differing']:6,d} (revised {counts['differing_revised']:,d})  "
              f"[{time.perf_counter() - t0:.1f} s]", flush=True)
        entry = {**counts, "examples": examples}
        if args.timing and calls:
            best = time_set(calls, reference, candidate)
            for who in ("reference", "candidate"):
                print(f"  {who:10s} {_stats(best[who])}", flush=True)
            print(f"  reference / candidate (means): {best['reference'].mean() / best['candidate'].mean():.2f}x",
                  flush=True)
            if args.batch:
                per = time_batched(calls, args.batch) * 1e6
                print(f"  batched    mean {per:10.1f} us a pair (detect_many, {args.batch} pairs a call)", flush=True)
                entry["batched_us"] = per
            entry["timing_us"] = {who: {"mean": float(s.mean() * 1e6), "median": float(np.median(s) * 1e6),
                                        "p99": float(np.percentile(s, 99) * 1e6), "max": float(s.max() * 1e6)}
                                  for who, s in best.items()}
        report["sets"][name] = entry
    report_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"report: {report_path}")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
