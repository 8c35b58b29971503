"""The hard suite of ``streamdedup bench accuracy``: harder copy kinds and near-miss negatives.

The stream is built like the standard one (Reuters-21578 in date order, natural truth by brute
force, see :mod:`.accuracy`), but the synthetic items are those of :mod:`.hard_edits`:

- copies (duplicates by construction), ``per_kind`` of each kind, from distinct sources within a
  kind, placed 1 minute to 6 hours after their source:
  character noise at 0.5-3% (sources of >= 400 characters, as the standard suite's edits);
  teasers of headline + 1 or 2 sentences, 30-60 words, of stories whose body has 400-800 words
  (the long stories of the corpus; about 1,000 of them, ~890 give a 1-sentence teaser in range and
  ~290 a 2-sentence one); a compound re-issue of a story of >= 150 words and >= 6 sentences
  (shorter items would be mostly new header, footer and replaced sentence); hyphenated narrow
  columns; HTML-escaped and typographic copies (sources of >= 400 characters);
- near-miss negatives (must stay unique), ``per_kind`` of each kind, each made from a held-out
  story that is unrelated to every story of the corpus (as the standard suite's hard negatives):
  the story quoting one paragraph (25-80 words) of an earlier story, or opening with it, placed
  1 minute to 6 hours after that story; and stories sharing a long footer, at random positions.
  A quoting/lead negative is kept only if its exact word-shingle Jaccard with the earlier story is
  below ``UNIQUE_J`` and both containments below ``UNIQUE_C`` (the truth's "unique" bounds), and
  at least ``NEAR_MISS_MIN_SHARE`` of its shingles come from the earlier story.
"""

from __future__ import annotations

import bisect
import random
import statistics
from collections import defaultdict
from typing import Callable

from streamdedup.bench.corpus import Story, load_reuters
from streamdedup.errors import StreamdedupError
from streamdedup.bench import hard_edits as H
from streamdedup.bench.truth import HARD_NEGATIVE_MIN_BODY, UNIQUE_C, UNIQUE_J, Item, isolated_texts, shingle_set
from streamdedup.bench.synthetic import LONG_FOOTERS, with_footer

NOISE_RATES = (0.005, 0.01, 0.015, 0.02, 0.03)
TEASER_BODY_WORDS = (400, 800)
#: words of body for a compound copy's source (see :func:`.hard_edits.compound`)
COMPOUND_MIN_WORDS = 150
#: a quoting/lead negative takes at least this share of its word shingles from the earlier story
#: (in a long new story one borrowed paragraph would be no near miss)
NEAR_MISS_MIN_SHARE = 0.1
COPY_MIN_CHARS = 400

Copy = Callable[[Story, str, random.Random], "str | None"]


def _noise(rate: float) -> Copy:
    return lambda st, donor, rng: H.char_noise(st.text, rate, rng)


#: copy kind -> generator (story, donor text, rng) -> text or None
COPY_KINDS: dict[str, Copy] = {
    **{f"noise {r * 100:g}%": _noise(r) for r in NOISE_RATES},
    "teaser +1 sentence": lambda st, donor, rng: H.teaser(st.title, st.body, 1),
    "teaser +2 sentences": lambda st, donor, rng: H.teaser(st.title, st.body, 2),
    "compound": lambda st, donor, rng: H.compound(st.title, st.body, donor, rng),
    "hyphenated wraps": lambda st, donor, rng: H.hyphen_wrapped(st.title, st.body, rng),
    "html entities": lambda st, donor, rng: H.html_entities(st.title, st.body, rng),
    "curly quotes": lambda st, donor, rng: H.curly_quotes(st.title, st.body, rng),
}
#: negative kind -> generator (new story, earlier story's body, rng) -> text or None
RELATED_NEGATIVES = {
    "quotes a paragraph": lambda st, earlier, rng: H.quoting_paragraph(st.title, st.body, earlier, rng),
    "background as lead": lambda st, earlier, rng: H.background_lead(st.title, st.body, earlier, rng),
}
FOOTER_NEGATIVE = "shared footer"
NEGATIVE_KINDS = (*RELATED_NEGATIVES, FOOTER_NEGATIVE)


def _slug(kind: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in kind)


def overlap(a: str, b: str, w: int = 5) -> tuple[float, float, float]:
    """Exact word-``w``-shingle (Jaccard, containment of a in b, containment of b in a)."""
    sa, sb = shingle_set(a, w), shingle_set(b, w)
    inter = len(sa & sb)
    union = len(sa | sb)
    return (inter / union if union else 0.0, inter / len(sa) if sa else 0.0, inter / len(sb) if sb else 0.0)


class _Placer:
    """Puts synthetic items into the natural stream by time, never before their source."""

    def __init__(self, items: list[Item], rng: random.Random):
        self.items, self.rng = items, rng
        self.times = [it.time_ms for it in items]
        self.after: dict[int, list[Item]] = defaultdict(list)

    def after_source(self, pos: int, make: Callable[[int], Item]) -> None:
        # a copy arrives 1 minute to 6 hours after its source
        t = self.times[pos] + self.rng.randint(60, 6 * 3600) * 1000
        at = max(bisect.bisect_right(self.times, t) - 1, pos)
        self.after[at].append(make(t))

    def anywhere(self, item: Item) -> None:
        at = self.rng.randrange(len(self.items))
        item.time_ms = self.items[at].time_ms
        self.after[at].append(item)

    def stream(self) -> list[Item]:
        out: list[Item] = []
        for i, it in enumerate(self.items):
            out.append(it)
            out.extend(self.after.get(i, ()))
        return out


def _copies(placer: _Placer, base: list[Story], per_kind: int, rng: random.Random) -> None:
    items = placer.items
    pools = {
        "any": [i for i, it in enumerate(items) if len(it.text) >= COPY_MIN_CHARS],
        "teaser": [i for i, s in enumerate(base) if TEASER_BODY_WORDS[0] <= len(s.body.split()) <= TEASER_BODY_WORDS[1]],
        "compound": [i for i, s in enumerate(base) if len(s.body.split()) >= COMPOUND_MIN_WORDS],
    }
    for kind, edit in COPY_KINDS.items():
        pool = list(pools.get(kind.split()[0], pools["any"]))
        rng.shuffle(pool)
        n = 0
        for pos in pool:
            if n == per_kind:
                break
            donor = items[rng.choice(pools["any"])].text
            text = edit(base[pos], donor, rng)
            if text is None:
                continue
            src = items[pos].id
            placer.after_source(pos, lambda t, text=text, n=n, kind=kind, src=src:
                                Item(f"hard-{_slug(kind)}-{n}", text, t, kind, src, truth=True))
            n += 1


def _related_negative(make, story: Story | None, base: list[Story], items: list[Item], candidates: list[int],
                      rng: random.Random) -> tuple[str, int] | None:
    """(text, position of the earlier story) for ``story``, or None if it takes no edit."""
    if story is None:
        raise StreamdedupError("the held-out stories ran out: lower --per-kind (or use more stories)")
    for _ in range(20):
        pos = rng.choice(candidates)
        text = make(story, base[pos].body, rng)
        if text is None:
            continue
        jac, c_new, c_old = overlap(text, items[pos].text)
        if jac < UNIQUE_J and NEAR_MISS_MIN_SHARE <= c_new < UNIQUE_C and c_old < UNIQUE_C:
            return text, pos
    return None


def _negatives(placer: _Placer, base: list[Story], held: list[Story], per_kind: int, rng: random.Random) -> None:
    """Near-miss negatives from the held-out stories (``held`` is consumed in order)."""
    items = placer.items
    fresh = iter(held)
    candidates = [i for i, it in enumerate(items) if len(it.text) >= COPY_MIN_CHARS]
    for kind, make in RELATED_NEGATIVES.items():
        for n in range(per_kind):
            # a held-out story that cannot take the edit (no second paragraph, or too much overlap
            # with each of 20 earlier stories tried) is dropped, never reused: two negatives made
            # from one story would be duplicates of each other
            while (found := _related_negative(make, next(fresh, None), base, items, candidates, rng)) is None:
                pass
            text, pos = found
            related = items[pos].id
            placer.after_source(pos, lambda t, text=text, n=n, kind=kind, related=related:
                                Item(f"near-{_slug(kind)}-{n}", text, t, kind, related, truth=False))
    for n in range(per_kind):
        story = next(fresh, None)
        if story is None:
            raise StreamdedupError("the held-out stories ran out: lower --per-kind (or use more stories)")
        text = with_footer(story.title, story.body, LONG_FOOTERS[n % len(LONG_FOOTERS)])
        placer.anywhere(Item(f"near-{_slug(FOOTER_NEGATIVE)}-{n}", text, 0, FOOTER_NEGATIVE, None, truth=False))


def build_stream(per_kind: int, seed: int, stories: int | None = None) -> list[Item]:
    """Natural stream + ``per_kind`` copies of every copy kind + ``per_kind`` of every negative kind.

    ``stories``: only the first that many dated stories of the corpus (quick checks and tests).

    ``source`` is the copied story for a copy and the earlier story a near-miss negative
    borrows from (None for shared-footer negatives); ``truth`` is True for copies, False for
    negatives, and set later for natural stories (:func:`.accuracy.natural_truth`).
    """
    rng = random.Random(seed)
    stories = sorted((s for s in load_reuters() if s.date is not None), key=lambda s: s.date)[:stories]
    isolated = isolated_texts([s.text for s in stories], 5)
    long_enough = [i for i, s in enumerate(stories) if len(s.body) >= HARD_NEGATIVE_MIN_BODY and isolated[i]]
    # quoting/lead negatives may reject stories (no second paragraph): hold out a margin
    held_idx = rng.sample(long_enough, min(len(long_enough), 6 * per_kind))
    held_set = set(held_idx)
    base = [s for i, s in enumerate(stories) if i not in held_set]
    items = [Item(f"r{s.id}", s.text, int(s.date.timestamp() * 1000), "natural") for s in base]
    placer = _Placer(items, rng)
    _copies(placer, base, per_kind, rng)
    _negatives(placer, base, [stories[i] for i in held_idx], per_kind, rng)
    return placer.stream()


def overlap_summary(stream: list[Item], measure: Callable[[str, str], tuple[float, float, float]] = overlap) -> dict[str, dict]:
    """Per synthetic kind: how many, and the median Jaccard and containment (the copy's or
    negative's shingles found in its source) against its source, by ``measure`` (default: exact
    word 5-shingles; ``lang_suite`` passes its character n-grams)."""
    by_id = {it.id: it for it in stream if it.kind == "natural"}
    per: dict[str, list[tuple[float, float]]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for it in stream:
        if it.kind == "natural":
            continue
        counts[it.kind] += 1
        if it.source in by_id:
            jac, c_new, _ = measure(it.text, by_id[it.source].text)
            per[it.kind].append((jac, c_new))
    return {k: {"n": counts[k],
                "median_jaccard": statistics.median(j for j, _ in per[k]) if per[k] else None,
                "median_containment": statistics.median(c for _, c in per[k]) if per[k] else None}
            for k in counts}
