"""Issue 31: what the revision test says about the pairs the engine links in the existing
``bench accuracy`` suites (standard, hard, zh; seed 11, their default sizes).

The engine's decisions are unchanged by the test; this counts, per item kind, how many items
the engine links (status duplicate) and how many of those links the test reads as revisions
(against the document the engine matched). It is the baseline for routing revisions by policy:
the "duplicates only" figure of a kind is its linked share minus its revisions.

    python benchmarks/revisions_existing_suites.py
"""

from __future__ import annotations

from collections import defaultdict

from streamdedup.bench import accuracy, hard_suite, lang_suite
from streamdedup.bench.revision_suite import headline_chars, run_engine
from streamdedup.config import Config
from streamdedup.engine.revisions import detect
from streamdedup.text.canonical import canonicalize


def main() -> None:
    cfg = Config()
    streams = {
        "standard": lambda: accuracy.build_stream(150, 300, 11),
        "hard": lambda: hard_suite.build_stream(200, 11),
        "zh": lambda: lang_suite.build_stream("zh", 100, 11),
    }
    for suite, build in streams.items():
        stream = build()
        decisions, _ = run_engine(cfg, stream)
        texts = {it.id: it.text for it in stream}
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for it in stream:
            d = decisions[it.id]
            counts = per[it.kind]
            counts[0] += 1
            if d.status != "duplicate":
                continue
            counts[1] += 1
            r = detect(canonicalize(texts[d.matched]), canonicalize(it.text),
                       headline_chars(texts[d.matched]), headline_chars(it.text))
            counts[2] += r.revised
        print(suite)
        for kind, (n, linked, revised) in sorted(per.items()):
            print(f"  {kind:30s} n={n:6d} linked={linked:6d} revisions={revised:5d} ({revised / max(linked, 1):.3f} of linked)")


if __name__ == "__main__":
    main()
