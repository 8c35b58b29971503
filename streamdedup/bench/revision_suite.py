"""``streamdedup bench accuracy --suite revisions``: are revisions told from copies?

Two streams, each the natural corpus in order with labelled synthetic items placed 1 minute to
6 hours after their source (:class:`.hard_suite._Placer`):

- Reuters-21578 with the English kinds of :mod:`.revision_edits`: revisions (a number changed, a
  negation flipped, a name changed, a CORRECTED slug plus one word, a paragraph with new
  figures) and cosmetic copies (typos, character noise, reformatting, hyphenated wraps, a
  footer, a new headline from the lead, teasers);
- People's Daily (January 1998) with a figure changed, and character noise as its cosmetic kind.

The engine decides every stream (``verify.revisions`` as configured: the engine runs the revision
test, :func:`streamdedup.engine.revision_kernel.detect`, on every pair it links). Per kind: the share
linked (status duplicate or revision), and among the linked the share whose status is the label
(revision for a revision kind, duplicate for a cosmetic one). The test is also run on every
(source, item) pair directly, with the headline lengths the corpora give, whether the engine
linked it or not (``pair``), and timed on every linked pair as the engine runs it.

Reuters' own corrections: every story whose headline says CORRECTED, with what the engine does
today on the natural stream alone and what the test says about the link it makes.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict

from streamdedup.bench import revision_edits as R
from streamdedup.bench.corpus import Story, load_reuters
from streamdedup.bench.hard_suite import COPY_MIN_CHARS, _Placer, _slug
from streamdedup.bench.truth import Item
from streamdedup.config import Config
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.revision_kernel import detect
from streamdedup.state import MemoryStore
from streamdedup.text.canonical import canonicalize

ZH_KINDS = {
    "zh figures changed": R.zh_figures_changed,
    "zh magnitude changed": R.zh_magnitude_changed,
    "zh noise 1%": lambda t, b, d, rng: R.H.char_noise(f"{t}\n{b}", 0.01, rng),
}
ZH_REVISIONS = ("zh figures changed", "zh magnitude changed")


def run_engine(cfg: Config, stream: list[Item]) -> tuple[dict, float]:
    """The engine's decision for every item (by id), and its seconds."""
    engine = Deduplicator(cfg, MemoryStore())
    decisions = {}
    t0 = time.perf_counter()
    bs = cfg.engine.batch_size
    for i in range(0, len(stream), bs):
        chunk = stream[i:i + bs]
        for it, d in zip(chunk, engine.process([Document(it.id, it.text, it.time_ms) for it in chunk])):
            decisions[it.id] = d
    return decisions, time.perf_counter() - t0


def headline_chars(text: str) -> int:
    """The canonical length of a text's first line (its headline: the corpora put it there)."""
    return len(canonicalize(text.split("\n", 1)[0]))


def _detect(a: tuple[str, int], b: tuple[str, int]):
    return detect(a[0], b[0], a[1], b[1])


def _add(placer: _Placer, base: list[Story], kinds: dict, per_kind: int, rng: random.Random, min_chars: int) -> None:
    """``per_kind`` items of every kind, each from a source of its own: two edits of one story
    would be judged against each other when the engine links the later to the earlier."""
    items = placer.items
    pool = [i for i, it in enumerate(items) if len(it.text) >= min_chars]
    used: set[int] = set()
    for kind, edit in kinds.items():
        order = list(pool)
        rng.shuffle(order)
        n = 0
        for pos in order:
            if n == per_kind:
                break
            if pos in used:
                continue
            donor = base[rng.choice(pool)].body
            text = edit(base[pos].title, base[pos].body, donor, rng)
            if text is None or text == items[pos].text:
                continue
            src = items[pos].id
            used.add(pos)
            placer.after_source(pos, lambda t, text=text, n=n, kind=kind, src=src:
                                Item(f"rev-{_slug(kind)}-{n}", text, t, kind, src, truth=True))
            n += 1


def reuters_stream(per_kind: int, seed: int, stories: int | None = None) -> list[Item]:
    rng = random.Random(seed)
    base = sorted((s for s in load_reuters() if s.date is not None), key=lambda s: s.date)[:stories]
    items = [Item(f"r{s.id}", s.text, int(s.date.timestamp() * 1000), "natural") for s in base]
    placer = _Placer(items, rng)
    _add(placer, base, {**R.REVISION_KINDS, **R.COSMETIC_KINDS}, per_kind, rng, COPY_MIN_CHARS)
    return placer.stream()


def zh_stream(per_kind: int, seed: int, stories: int | None = None) -> list[Item]:
    from streamdedup.bench.lang_suite import STORY_SPACING_MS, T0_MS, _load_zh

    rng = random.Random(seed)
    base = _load_zh()[:stories]
    items = [Item(s.id, s.text, T0_MS + i * STORY_SPACING_MS, "natural") for i, s in enumerate(base)]
    placer = _Placer(items, rng)
    _add(placer, base, ZH_KINDS, per_kind, rng, 300)
    return placer.stream()


def _judge(stream: list[Item], decisions: dict) -> tuple[dict, list[float]]:
    """Per kind: counts of items, linked, revised among linked, revised by pair; and the test's seconds per call."""
    texts = {it.id: it.text for it in stream}
    canon: dict[str, tuple[str, int]] = {}

    def c(doc: str) -> tuple[str, int]:
        if doc not in canon:
            canon[doc] = canonicalize(texts[doc]), headline_chars(texts[doc])
        return canon[doc]

    per: dict[str, dict] = defaultdict(lambda: {"n": 0, "linked": 0, "revised_linked": 0, "revised_pair": 0, "examples": []})
    seconds: list[float] = []
    for it in stream:
        if it.kind == "natural":
            continue
        k = per[it.kind]
        k["n"] += 1
        d = decisions[it.id]
        pair = _detect(c(it.source), c(it.id))
        k["revised_pair"] += pair.revised
        if d.status not in ("duplicate", "revision"):
            continue
        t0 = time.perf_counter()
        detect(c(d.matched)[0], c(it.id)[0])  # as the engine runs it (headline region: HEAD_CHARS)
        seconds.append(time.perf_counter() - t0)
        k["linked"] += 1
        k["revised_linked"] += d.status == "revision"
        wrong = (d.status == "revision") != (it.kind in R.REVISION_KINDS or it.kind in ZH_REVISIONS)
        if wrong and len(k["examples"]) < 3:
            k["examples"].append({"id": it.id, "matched": d.matched, "changed": d.changed})
    return dict(per), seconds


def corrected_stories(stream: list[Item], decisions: dict) -> list[dict]:
    """Reuters' own corrections: the engine's status, what it matched and what changed."""
    out = []
    for it in stream:
        if it.kind != "natural" or "CORRECTED" not in it.text.split("\n", 1)[0]:
            continue
        d = decisions[it.id]
        out.append({"id": it.id, "headline": it.text.split("\n", 1)[0][:60], "engine": d.status, "matched": d.matched,
                    "changed": d.changed})
    return out


def _score(per: dict) -> dict:
    out = {}
    for kind, k in sorted(per.items()):
        revision = kind in R.REVISION_KINDS or kind in ZH_REVISIONS
        linked = k["linked"] or 1
        share = k["revised_linked"] / linked
        out[kind] = {"type": "revision" if revision else "cosmetic", "n": k["n"], "linked": k["linked"] / k["n"],
                     # the target: revisions recognised, copies kept as duplicates (among linked pairs)
                     "as_wanted": share if revision else 1 - share,
                     "pair_as_wanted": (k["revised_pair"] if revision else k["n"] - k["revised_pair"]) / k["n"],
                     "wrong_examples": k["examples"]}
    return out


def run(cfg: Config, per_kind: int, seed: int, stories: int | None = None) -> dict:
    """Both streams through the engine and the revision test (see the module docstring)."""
    res: dict = {"suite": "revisions", "seed": seed, "kinds": {}, "cost_us_per_linked_pair": {}}
    seconds_all: list[float] = []
    for name, build in (("reuters", reuters_stream), ("zh", zh_stream)):
        stream = build(per_kind, seed, stories)
        decisions, secs = run_engine(cfg, stream)
        per, seconds = _judge(stream, decisions)
        res["kinds"].update(_score(per))
        seconds_all += seconds
        res[f"{name}_stream"] = len(stream)
        res[f"{name}_engine_seconds"] = secs
        res["cost_us_per_linked_pair"][name] = 1e6 * sum(seconds) / max(1, len(seconds))
    # the corrections in the natural stream alone (synthetic copies of their sources aside)
    natural = reuters_stream(0, seed, stories)
    decisions, _ = run_engine(cfg, natural)
    res["corrected_stories"] = corrected_stories(natural, decisions)
    return res
