"""Capture the revision test's real calls, to hold a port of it to the reference.

Run: ``.venv/bin/python benchmarks/revision-kernel/capture.py [--out DIR] [--sets a,b,...]
[--wire-records N] [--config FILE]``.

Every call of the revision test that the engine and the revisions suite make is recorded as
``(earlier, later, earlier_head, later_head)`` (canonical texts as ``str``) while the original
runs as usual, and each set is written to ``DIR/<set>.pkl.gz`` (a gzip-compressed pickle of a
list of 4-tuples; ``DIR`` defaults to ``<cache>/revision-pairs``, the cache being
``$STREAMDEDUP_CACHE`` or ``~/.cache/streamdedup``). ``DIR/manifest.json`` says what each set
is, how many calls it has and how long capturing took. Sets:

- ``wire``: the wire feed (``feeds.mixed_records``) through the fingerprint workers and the
  decider (``bench.decider``'s ``worker_pass`` and ``decider_round``): the pairs the engine links;
- ``pages``: the same with 20-50 KB pages (``feeds.long_records(3000)``);
- ``revisions-seed1`` .. ``revisions-seed5``: ``bench accuracy --suite revisions`` (its default
  ``--per-kind``): the engine's linked pairs and the suite's own calls with headline lengths;
- ``standard``, ``hard``, ``zh``, ``ja``, ``th``, ``short``: the other accuracy suites (seed 11,
  the command's default sizes): the pairs the engine links.

The texts are what the caller passed: the engine hands UTF-8 bytes to the compiled test
(``revised.detect_many``, ``revised.detect_bytes``), which are decoded here; the suites pass
``str``. Only the call sites' names are patched, so the test itself and its results are those
of an ordinary run.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import inspect
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from streamdedup.bench.corpus import cache_dir

#: the repository (this file is ``benchmarks/revision-kernel/capture.py``): never written to
REPO = Path(__file__).resolve().parents[2]
#: the names through which the engine and the revisions suite call the test
ENGINE_SITE = "streamdedup.engine.revised"
SUITE_SITE = "streamdedup.bench.revision_suite"
#: what ``bench accuracy --suite X`` makes by default (the command line's own defaults)
SUITE_PER_KIND = {"standard": 150, "hard": 200, "zh": 100, "ja": 6, "th": 6, "short": 100}
SUITE_SEED = 11
REVISION_SEEDS = (1, 2, 3, 4, 5)
REVISIONS_PER_KIND = 100
PAGES = 3000

Call = tuple[str, str, int, "int | None"]


def default_dir() -> Path:
    return cache_dir() / "revision-pairs"


def _text(x) -> str:
    """A canonical text as ``str``, from ``str``, ``bytes`` or a ``uint8`` array."""
    if isinstance(x, str):
        return x
    if isinstance(x, np.ndarray):
        return x.tobytes().decode("utf-8")
    return bytes(x).decode("utf-8")


class Recorder:
    """Wraps the test's call sites while active and keeps every call's arguments, by origin."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.by_site: dict[str, int] = {}

    def _keep(self, site: str, earlier, later, earlier_head: int, later_head: int | None) -> None:
        self.calls.append((_text(earlier), _text(later), earlier_head, later_head))
        self.by_site[site] = self.by_site.get(site, 0) + 1

    def _one(self, site: str, orig: Callable) -> Callable:
        """A wrapper of ``orig(earlier, later, earlier_head=..., later_head=..., ...)``; the
        defaults are read off ``orig`` so that a call without heads records the ones it ran with."""
        sig = inspect.signature(orig)

        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            self._keep(site, a["earlier"], a["later"], a["earlier_head"], a["later_head"])
            return orig(*args, **kwargs)

        return wrapper

    def _many(self, site: str, orig: Callable) -> Callable:
        """A wrapper of ``orig(pairs, earlier_head=..., later_head=..., ...)``: one call a pair."""
        sig = inspect.signature(orig)

        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            for earlier, later in a["pairs"]:
                self._keep(site, earlier, later, a["earlier_head"], a["later_head"])
            return orig(*args, **kwargs)

        return wrapper

    @contextlib.contextmanager
    def active(self) -> Iterator[Recorder]:
        """Patch the call sites for the duration; they are restored on exit, even on an error."""
        import importlib

        engine, suite = importlib.import_module(ENGINE_SITE), importlib.import_module(SUITE_SITE)
        # the engine's call site has been a str detect and the compiled bytes entry points:
        # whichever of them the module calls now is wrapped
        plan = [(engine, name, kind) for name, kind in (("detect", self._one), ("detect_bytes", self._one),
                                                         ("detect_many", self._many)) if hasattr(engine, name)]
        plan.append((suite, "detect", self._one))
        if len(plan) == 1:
            raise RuntimeError(f"{ENGINE_SITE} has none of detect, detect_bytes, detect_many: the call site moved")
        saved = [(mod, name, getattr(mod, name)) for mod, name, _ in plan]
        try:
            for mod, name, wrap in plan:
                setattr(mod, name, wrap(f"{mod.__name__.rsplit('.', 1)[1]}.{name}", getattr(mod, name)))
            yield self
        finally:
            for mod, name, orig in saved:
                setattr(mod, name, orig)


# --- the sets ------------------------------------------------------------------------------


def _through_decider(cfg, values: list[bytes]) -> Recorder:
    """``values`` through the fingerprint workers and a decider round, its linked pairs recorded."""
    from streamdedup.bench import decider
    from streamdedup.pipeline.decide import warm_up

    batches, _ = decider.worker_pass(cfg, values)
    warm_up(cfg)  # loaded here, unrecorded: the round's own warm-up links a pair of its made-up texts
    rec = Recorder()
    with rec.active(), _replaced(decider, "warm_up", lambda cfg: None):
        decider.decider_round(cfg, batches)
    return rec


@contextlib.contextmanager
def _replaced(mod, name: str, value) -> Iterator[None]:
    old = getattr(mod, name)
    setattr(mod, name, value)
    try:
        yield
    finally:
        setattr(mod, name, old)


def capture_wire(cfg, records: int) -> tuple[Recorder, dict]:
    from streamdedup.bench.feeds import mixed_records

    return _through_decider(cfg, [v for _, v in mixed_records(records)]), {"records": records}


def capture_pages(cfg, records: int = PAGES) -> tuple[Recorder, dict]:
    from streamdedup.bench.feeds import long_records

    return _through_decider(cfg, [v for _, v in long_records(records)]), {"records": records}


def capture_revisions(cfg, seed: int) -> tuple[Recorder, dict]:
    from streamdedup.bench import revision_suite

    rec = Recorder()
    with rec.active():
        revision_suite.run(cfg, REVISIONS_PER_KIND, seed)
    return rec, {"per_kind": REVISIONS_PER_KIND, "seed": seed}


def capture_suite(cfg, suite: str) -> tuple[Recorder, dict]:
    """``bench accuracy --suite <suite>`` as the command runs it, without the datasketch
    baseline (which never calls the test)."""
    from streamdedup.bench.accuracy import run

    rec = Recorder()
    with rec.active():
        run(cfg, per_kind=SUITE_PER_KIND[suite], hard_negatives=300, seed=SUITE_SEED, with_datasketch=False,
            suite=suite)
    return rec, {"per_kind": SUITE_PER_KIND[suite], "seed": SUITE_SEED}


def all_sets() -> list[str]:
    return ["wire", "pages", *(f"revisions-seed{s}" for s in REVISION_SEEDS), *SUITE_PER_KIND]


def capture(name: str, cfg, wire_records: int) -> tuple[Recorder, dict]:
    if name == "wire":
        return capture_wire(cfg, wire_records)
    if name == "pages":
        return capture_pages(cfg)
    if name.startswith("revisions-seed"):
        return capture_revisions(cfg, int(name.removeprefix("revisions-seed")))
    if name in SUITE_PER_KIND:
        return capture_suite(cfg, name)
    raise SystemExit(f"unknown set {name!r} (have {', '.join(all_sets())})")


# --- files ---------------------------------------------------------------------------------


def set_path(out: Path, name: str) -> Path:
    return out / f"{name}.pkl.gz"


def save(out: Path, name: str, calls: list[Call]) -> Path:
    """Written to a temporary name first: an interrupted run leaves no truncated set behind."""
    path = set_path(out, name)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wb", compresslevel=6) as f:
        pickle.dump(calls, f, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    return path


def load(out: Path, name: str) -> list[Call]:
    with gzip.open(set_path(out, name), "rb") as f:
        return pickle.load(f)


def _outside_repo(out: Path) -> Path:
    out = out.expanduser().resolve()
    if out == REPO or REPO in out.parents:
        raise SystemExit(f"--out {out} is inside the repository; captured texts stay out of it")
    return out


def _manifest(out: Path, name: str, entry: dict) -> None:
    path = out / "manifest.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = entry
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _commit() -> str | None:
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=None, help="directory of the sets  [default: <cache>/revision-pairs]")
    p.add_argument("--sets", default=",".join(all_sets()), help="comma-separated sets to capture  [default: all]")
    p.add_argument("--wire-records", type=int, default=200_000, help="records of the wire feed  [default: 200000]")
    p.add_argument("--config", default=None, help="a configuration file  [default: the built-in defaults]")
    args = p.parse_args(argv)

    from streamdedup.config import load_config

    out = _outside_repo(args.out or default_dir())
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(args.config)
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = sorted(set(names) - set(all_sets()))
    if unknown:
        raise SystemExit(f"unknown sets {unknown} (have {', '.join(all_sets())})")
    commit = _commit()
    print(f"capturing into {out}", flush=True)
    for name in names:
        t0 = time.perf_counter()
        try:
            rec, params = capture(name, cfg, args.wire_records)
        except Exception as exc:  # a corpus that cannot be fetched: said, and the other sets go on
            print(f"{name:18s} FAILED after {time.perf_counter() - t0:.0f} s: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            continue
        seconds = time.perf_counter() - t0
        path = save(out, name, rec.calls)
        distinct = len(set(rec.calls))
        sites = ", ".join(f"{k} {v}" for k, v in sorted(rec.by_site.items()))
        print(f"{name:18s} {len(rec.calls):8,d} calls ({distinct:,d} distinct; {sites or 'none'}) "
              f"in {seconds:6.1f} s -> {path}", flush=True)
        _manifest(out, name, {"calls": len(rec.calls), "distinct": distinct, "by_site": rec.by_site,
                              "seconds": round(seconds, 1), "params": params, "commit": commit,
                              "captured": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


if __name__ == "__main__":
    main()
