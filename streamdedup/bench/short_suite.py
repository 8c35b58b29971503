"""``streamdedup bench accuracy --suite short``: short copies wherever they come from.

Two streams, each a natural corpus in order with labelled items placed 1 minute to 6 hours after
their source (:class:`.hard_suite._Placer`), decided by the engine as one stream:

- Reuters-21578 (dated stories, in date order). Copies (must be flagged), ``per_kind`` of each,
  every one from a source of its own: a teaser (headline and one or two sentences) of a story
  that the stream carries as a web page with a header block (standfirst, byline, dateline); one
  or two paragraphs from the middle of a story; a "Key points" box of three to five sentences
  from across it; a 20-40-word card of headline and lead; a 40-80-word story carrying a
  ~60-word disclaimer, resent with a ~25-word footer instead. The long sources have 400-800
  words of body. Near misses (must stay unique), ``per_kind`` of each, made from held-out
  stories that overlap no story of the corpus: a story quoting one paragraph of an earlier
  story; a briefing listing five recent headlines with their first sentences; a short story
  with the same section line under its headline as an earlier one; another short story under
  the same disclaimer as an earlier one. Outlets publish a fifth of the other stories under one
  of the disclaimers or footers (``_outlets``), as a feed shows its blocks in many stories.
- People's Daily (January 1998): the first 76-127 characters of 5,000-7,000-character features
  (consecutive articles joined; the stream carries the feature in place of its articles).

Per kind: the share flagged, the share matched to the source's cluster, and for every missed
copy where it was lost, judged on the pair alone (``engine.verify.judge_pair``): never a
candidate, or verified and refused with the relation it got.
"""

from __future__ import annotations

import random
import time
from collections import Counter

from streamdedup.bench import hard_edits as H
from streamdedup.bench import short_edits as S
from streamdedup.bench.corpus import Story, load_reuters
from streamdedup.bench.hard_suite import COPY_MIN_CHARS, _Placer, _related_negative, _slug
from streamdedup.bench.revision_suite import run_engine
from streamdedup.bench.truth import HARD_NEGATIVE_MIN_BODY, Item, isolated_texts
from streamdedup.config import Config
from streamdedup.engine.verify import judge_pair
from streamdedup.errors import StreamdedupError
from streamdedup.sketch.fingerprint import Fingerprinter

TEASER = "teaser after standfirst/byline/dateline"
EXCERPT = "mid-story excerpt"
KEY_POINTS = "key points"
CARD = "very short teaser (en)"
BOILERPLATE = "short story under disclaimer -> other footer"
ZH_TEASER = "very short teaser (zh, 5-7k-character story)"
COPY_KINDS = (TEASER, EXCERPT, KEY_POINTS, CARD, BOILERPLATE, ZH_TEASER)
QUOTES = "NEG quotes a paragraph"
ROUND_UP = "NEG round-up of five headlines"
SHARED_LINE = "NEG shares a section line"
SAME_DISCLAIMER = "NEG same disclaimer, other story"
NEGATIVE_KINDS = (QUOTES, ROUND_UP, SHARED_LINE, SAME_DISCLAIMER)
#: copies taken from a long story -> how the copy is made
LONG_COPIES = {TEASER: S.teaser_after_header, EXCERPT: S.mid_excerpt, KEY_POINTS: S.key_points, CARD: S.very_short_teaser}
ZH_T0_MS = 883_612_800_000  # 1998-01-01 (the People's Daily month)
ZH_SPACING_MS = 10 * 60 * 1000


def _words(st: Story) -> int:
    return len(st.body.split())


class _Builder:
    """The Reuters stream under construction: natural items, the placer, the sources used."""

    def __init__(self, base: list[Story], rng: random.Random):
        self.base, self.rng = base, rng
        self.items = [Item(f"r{s.id}", s.text, int(s.date.timestamp() * 1000), "natural") for s in base]
        self.placer = _Placer(self.items, rng)
        self.used: set[int] = set()  # a source takes one edit: its text may change for it

    def pool(self, lo: int, hi: int) -> list[int]:
        out = [i for i, s in enumerate(self.base) if lo <= _words(s) <= hi and i not in self.used]
        self.rng.shuffle(out)
        return out

    def add(self, pos: int, text: str, kind: str, n: int, truth: bool) -> None:
        self.used.add(pos)
        src, prefix = self.items[pos].id, "short" if truth else "near"
        self.placer.after_source(pos, lambda t: Item(f"{prefix}-{_slug(kind)}-{n}", text, t, kind, src, truth))


def _copies(b: _Builder, per_kind: int) -> dict[int, list[int]]:
    """The copy kinds; returns the sources carrying each disclaimer (for the near misses)."""
    for kind, make in LONG_COPIES.items():
        n = 0
        for pos in b.pool(*S.LONG_WORDS):
            if n == per_kind:
                break
            page = S.web_page(b.base[pos], b.rng) if kind == TEASER else b.items[pos].text
            text = make(b.base[pos], b.rng)
            if page is None or text is None:
                continue
            b.items[pos].text = page
            b.add(pos, text, kind, n, truth=True)
            n += 1
    under: dict[int, list[int]] = {0: [], 1: []}
    for n, pos in enumerate(b.pool(*S.SHORT_WORDS)[:per_kind]):
        d = n % len(S.DISCLAIMERS)
        b.items[pos].text = S.under_block(b.base[pos], S.DISCLAIMERS[d])
        b.add(pos, S.under_block(b.base[pos], S.FOOTERS[n % len(S.FOOTERS)]), BOILERPLATE, n, truth=True)
        under[d].append(pos)
    return under


def _negatives(b: _Builder, held_long: list[Story], held_short: list[Story], under: dict[int, list[int]],
               per_kind: int) -> None:
    rng = b.rng
    fresh = iter(held_long)
    candidates = [i for i, it in enumerate(b.items) if len(it.text) >= COPY_MIN_CHARS]
    quote = lambda st, earlier, r: H.quoting_paragraph(st.title, st.body, earlier, r)  # noqa: E731
    for n in range(per_kind):
        while (found := _related_negative(quote, next(fresh, None), b.base, b.items, candidates, rng)) is None:
            pass
        b.add(found[1], found[0], QUOTES, n, truth=False)
    for n in range(per_kind):  # five stories of the last few hours, the briefing after the latest
        pos = rng.randrange(50, len(b.base))
        picks = sorted(rng.sample(range(pos - 50, pos + 1), 5))
        b.placer.after_source(picks[-1], lambda t, n=n, picks=picks: Item(
            f"near-{_slug(ROUND_UP)}-{n}", S.round_up([b.base[i] for i in picks]), t, ROUND_UP, b.items[picks[-1]].id, truth=False))
    shorts = iter(held_short)
    for n, pos in enumerate(b.pool(*S.SHORT_WORDS)[:per_kind]):
        line = S.SECTION_LINES[n % len(S.SECTION_LINES)]
        b.items[pos].text = S.with_line(b.base[pos], line)
        b.add(pos, S.with_line(_next(shorts), line), SHARED_LINE, n, truth=False)
    for n in range(per_kind):
        d = n % len(S.DISCLAIMERS)
        pos = under[d][n // len(S.DISCLAIMERS) % len(under[d])]
        b.placer.after_source(pos, lambda t, n=n, text=S.under_block(_next(shorts), S.DISCLAIMERS[d]), src=b.items[pos].id:
                              Item(f"near-{_slug(SAME_DISCLAIMER)}-{n}", text, t, SAME_DISCLAIMER, src, truth=False))


def _next(it) -> Story:
    st = next(it, None)
    if st is None:
        raise StreamdedupError("the held-out stories ran out: lower --per-kind (or use more stories)")
    return st


def reuters_stream(per_kind: int, seed: int, stories: int | None = None) -> list[Item]:
    """The Reuters stream of the module docstring (``stories``: the first that many dated stories)."""
    rng = random.Random(seed)
    corpus = sorted((s for s in load_reuters() if s.date is not None), key=lambda s: s.date)[:stories]
    isolated = isolated_texts([s.text for s in corpus], 5)
    long_ok = [i for i, s in enumerate(corpus) if isolated[i] and len(s.body) >= HARD_NEGATIVE_MIN_BODY]
    short_ok = [i for i, s in enumerate(corpus) if isolated[i] and S.SHORT_WORDS[0] <= _words(s) <= S.SHORT_WORDS[1]]
    # quoting negatives reject stories (no second paragraph): hold out a margin
    held_long = rng.sample(long_ok, min(len(long_ok), 4 * per_kind))
    held_short = rng.sample(sorted(set(short_ok) - set(held_long)), min(len(short_ok), 2 * per_kind))
    held = set(held_long) | set(held_short)
    b = _Builder([s for i, s in enumerate(corpus) if i not in held], rng)
    under = _copies(b, per_kind)
    _negatives(b, [corpus[i] for i in held_long], [corpus[i] for i in held_short], under, per_kind)
    _outlets(b)
    return b.placer.stream()


#: the share of the other stories that outlets publish under one of the suite's blocks
OUTLET_SHARE = 0.2


def _outlets(b: _Builder) -> None:
    """Outlets attach their block to every story they publish, not only to the suite's: of the
    stories no kind uses, :data:`OUTLET_SHARE` carry one of the disclaimers or footers (one
    outlet each), so the stream shows each block in many stories within a window, as a feed does."""
    blocks = S.DISCLAIMERS + S.FOOTERS
    for pos, it in enumerate(b.items):
        if pos not in b.used and b.rng.random() < OUTLET_SHARE:
            it.text = f"{it.text.rstrip()}\n{b.rng.choice(blocks)}"


def zh_stream(per_kind: int, seed: int, stories: int | None = None) -> list[Item]:
    """People's Daily with ``per_kind`` long features (in place of the articles they join) and
    a very short teaser of each."""
    from streamdedup.bench.lang_suite import _load_zh

    rng = random.Random(seed)
    base = _load_zh()[:stories]
    features = S.zh_features(base)
    chosen = sorted(rng.sample(features, min(per_kind, len(features))), key=lambda f: f[0][0])
    first = {parts[0]: st for parts, st in chosen}
    joined = {i for parts, _ in chosen for i in parts}
    stream_stories = [first.get(i, s) for i, s in enumerate(base) if i in first or i not in joined]
    items = [Item(s.id, s.text, ZH_T0_MS + i * ZH_SPACING_MS, "natural") for i, s in enumerate(stream_stories)]
    placer = _Placer(items, rng)
    n = 0
    for pos, st in enumerate(stream_stories):
        if st.id.endswith("-feature"):
            text, src = S.zh_short_teaser(st, rng), items[pos].id
            placer.after_source(pos, lambda t, text=text, n=n, src=src:
                                Item(f"short-{_slug(ZH_TEASER)}-{n}", text, t, ZH_TEASER, src, truth=True))
            n += 1
    return placer.stream()


def _score(cfg: Config, stream: list[Item], decisions: dict, fp: Fingerprinter) -> dict:
    """Per labelled kind: n, flagged, matched the source's cluster, and where the misses were lost."""
    texts = {it.id: it.text for it in stream}
    out: dict[str, dict] = {}
    for it in stream:
        if it.kind == "natural":
            continue
        k = out.setdefault(it.kind, {"type": "copy" if it.truth else "near miss", "n": 0, "flagged": 0, "source_cluster": 0,
                                     "missed_at": Counter(), "examples": []})
        d = decisions[it.id]
        k["n"] += 1
        if d.status == "duplicate":
            k["flagged"] += 1
            src = decisions[it.source]
            k["source_cluster"] += d.duplicate_of == (src.duplicate_of if src.status == "duplicate" else src.id)
            if not it.truth and len(k["examples"]) < 3:
                k["examples"].append({"id": it.id, "matched": d.matched, "relation": d.relation, "reason": d.reason})
        elif it.truth:
            j = judge_pair(fp.fingerprint_batch([texts[it.source], it.text]), 0, 1, cfg, full=False)
            k["missed_at"]["never a candidate" if not j.proposed else f"verified: {j.comparison.relation}"] += 1
            if len(k["examples"]) < 3:
                c = j.comparison
                k["examples"].append({"id": it.id, "source": it.source, "shared_keys": j.shared_keys, "relation": c.relation,
                                      "containment": round(c.containment_b_in_a, 3), "embedding": round(c.embedding_similarity, 3)})
    for k in out.values():
        k["missed_at"] = dict(k["missed_at"])
        k["flagged_share"] = k["flagged"] / k["n"] if k["n"] else 0.0
    return out


def run(cfg: Config, per_kind: int, seed: int, stories: int | None = None) -> dict:
    """Both streams through the engine, scored per kind (see the module docstring)."""
    res: dict = {"suite": "short", "seed": seed, "per_kind": per_kind, "kinds": {}}
    fp = Fingerprinter(cfg.fingerprint)
    for name, build in (("reuters", reuters_stream), ("zh", zh_stream)):
        t0 = time.perf_counter()
        stream = build(per_kind, seed, stories)
        res[f"{name}_build_seconds"] = time.perf_counter() - t0
        decisions, secs = run_engine(cfg, stream)
        res[f"{name}_stream"] = len(stream)
        res[f"{name}_engine_seconds"] = secs
        res["kinds"].update(_score(cfg, stream, decisions, fp))
    order = {k: i for i, k in enumerate(COPY_KINDS + NEGATIVE_KINDS)}
    res["kinds"] = dict(sorted(res["kinds"].items(), key=lambda kv: order.get(kv[0], 99)))
    negatives = [k for k in res["kinds"].values() if k["type"] == "near miss"]
    res["near_misses_flagged"] = sum(k["flagged"] for k in negatives) / max(1, sum(k["n"] for k in negatives))
    return res
