"""Queries against a text-free index: recall and precision on the hard suite's kinds, and the rate.

The index: the hard suite's natural stream (Reuters-21578 in date order), decided by a decider
that keeps no text (``state.keep_text: false``, exact evidence and revisions off), as a
text-free deployment runs. The queries, as text-free fingerprint records
(``streamdedup fingerprint``), decoded as the decider decodes them:

- every copy of the suite (character noise 0.5-3%, teasers, compound re-issues, hyphenated
  wraps, entities, curly quotes): present, so each should be found, its match in its source's
  cluster;
- every near-miss negative (a story quoting or opening with a paragraph of an indexed story,
  stories under a shared footer): absent, so none should be found.

Run: python benchmarks/queries.py [--per-kind 200] [--seed 11] [--stories N] [--bootstrap HOST:PORT]

With ``--bootstrap`` the index is a single processor on that broker (``streamdedup run``, the
natural stories produced to its input topic) and the queries go through its query topic as a
client sends them; the answers are scored against the clusters of the in-process index, which
decides the same stream identically.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from streamdedup import load_config  # noqa: E402
from streamdedup.bench import hard_suite  # noqa: E402
from streamdedup.engine.deduplicator import Deduplicator, Document  # noqa: E402
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter  # noqa: E402
from streamdedup.state import MemoryStore  # noqa: E402

TEXT_OFF = {"STREAMDEDUP_STATE__KEEP_TEXT": "false",
            "STREAMDEDUP_VERIFY__REVISIONS": "off", "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "200000",
            # the corpus spans months: a window over all of it, so every story is present
            "STREAMDEDUP_ENGINE__WINDOW_HOURS": "87600"}
BATCH = 512


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--stories", type=int, default=None)
    ap.add_argument("--bootstrap", default=None, help="answer through a single processor on this broker")
    args = ap.parse_args()
    cfg = load_config(environ=TEXT_OFF)
    stream = hard_suite.build_stream(args.per_kind, args.seed, args.stories)
    naturals = [it for it in stream if it.kind == "natural"]
    engine = Deduplicator(cfg, MemoryStore())
    root: dict[str, str] = {}
    for lo in range(0, len(naturals), BATCH):
        part = naturals[lo:lo + BATCH]
        for it, d in zip(part, engine.process([Document(it.id, it.text, it.time_ms) for it in part])):
            root[it.id] = root.get(d.duplicate_of, d.duplicate_of) if d.duplicate_of else it.id
    queries = [it for it in stream if it.kind != "natural"]
    fp = TextFingerprinter(cfg, "asker")
    records = fp.records([orjson.dumps({"id": it.id, "text": it.text}) for it in queries])
    decoded = [fp.codec.decode(records[lo:lo + BATCH]) for lo in range(0, len(records), BATCH)]
    assert all(d.no_text.all() and len(d.docs) == len(d) for d in decoded), "every query is a text-free fingerprint"
    if args.bootstrap:
        answers, seconds = broker_answers(args.bootstrap, naturals, records)
    else:
        t0 = time.perf_counter()
        answers = [a for d in decoded for a in engine.query(d.ids, d.batch)]
        seconds = time.perf_counter() - t0
    per_kind: dict[str, Counter] = defaultdict(Counter)
    found_right = found_wrong = 0
    for it, a in zip(queries, answers):
        c = per_kind[it.kind]
        c["n"] += 1
        if not a.found:
            continue
        right = bool(it.truth) and root.get(a.matched) == root.get(it.source, it.source)
        c["found"] += 1
        c["right"] += right
        found_right += right
        found_wrong += not right
    print(f"index: {engine.indexed_documents:,} text-free documents; {len(queries):,} text-free queries "
          f"(hard suite, seed {args.seed}, {args.per_kind} a kind)")
    print(f"{'kind':24} {'n':>5} {'found':>7} {'right':>7}")
    for kind in sorted(per_kind, key=lambda k: (k in hard_suite.NEGATIVE_KINDS, k)):
        c = per_kind[kind]
        print(f"{kind:24} {c['n']:5d} {c['found'] / c['n']:7.3f} {c['right'] / c['n']:7.3f}")
    present = [it for it in queries if it.truth]
    recall = sum(per_kind[k]["right"] for k in per_kind if k not in hard_suite.NEGATIVE_KINDS) / len(present)
    precision = found_right / max(1, found_right + found_wrong)
    print(f"copies present: recall {recall:.4f}; precision over all found {precision:.4f} "
          f"({found_wrong} found wrong or absent)")
    if args.bootstrap:
        print(f"through the broker: {len(queries) / seconds:,.0f} queries/s (first query sent to last answer read)")
    else:
        print(f"engine.query: {len(queries) / seconds:,.0f} queries/s in process ({seconds * 1e6 / len(queries):.0f} us a "
              f"query, batches of {BATCH}, decoding not included)")


def broker_answers(bootstrap: str, naturals: list, records: list[bytes]) -> tuple[list, float]:
    """The answers of a single processor on ``bootstrap`` that indexed ``naturals`` (without
    texts) to the query ``records``, in their order (as objects with ``found`` and ``matched``),
    and the seconds from the first query sent to the last answer read."""
    from types import SimpleNamespace

    from queries_kafka import ask, processor_with_index  # this script's folder

    stories = [(it.id.encode(), orjson.dumps({"id": it.id, "text": it.text, "time": it.time_ms})) for it in naturals]
    with processor_with_index(bootstrap, stories, **TEXT_OFF, STREAMDEDUP_INPUT__TIME_FIELD="time") as names:
        answers, seconds = ask(bootstrap, names, records)
    return [SimpleNamespace(found=bool(a.get("found")), matched=a.get("matched")) for a in answers], seconds


if __name__ == "__main__":
    main()
