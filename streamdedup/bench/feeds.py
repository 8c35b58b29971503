"""Reuters-derived record streams for the Kafka tests and benchmarks."""

from __future__ import annotations

import random

import orjson

from streamdedup.bench.corpus import load_reuters
from streamdedup.bench.synthetic import EDIT_KINDS


def news_records(n: int, seed: int = 1, variant_every: int = 7) -> list[tuple[bytes, bytes]]:
    """``n`` (key, JSON value) records: Reuters stories in order, cycling, with wire variants of
    earlier ones mixed in; ids ``n0..`` are unique."""
    rng = random.Random(seed)
    stories = [s for s in load_reuters() if len(s.body) > 300]
    kinds = list(EDIT_KINDS.values())
    out = []
    k = 0
    while len(out) < n:
        s = stories[k % len(stories)]
        rec = {"id": f"n{len(out)}", "title": s.title, "text": s.body}
        if k % variant_every == 3 and k > 10:
            src = stories[rng.randrange(max(1, k % len(stories)))]
            text = rng.choice(kinds)(src.title, src.body, s.body, rng)
            if text is not None:
                rec = {"id": f"n{len(out)}", "title": "", "text": text}
        out.append((rec["id"].encode(), orjson.dumps(rec)))
        k += 1
    return out


def mixed_records(n: int, duplicate_share: float = 0.2, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """``n`` records like a live wire: new stories plus ``duplicate_share`` resends and variants.

    Reuters has only ~19k stories, so a long stream of *new* stories is made by recombining its
    sentences (4-9 sentences drawn from random stories, titles likewise): vocabulary, lengths and
    phrasing stay those of real news while the texts are distinct. Duplicates re-send an earlier
    record, exact or through one of the synthetic edit kinds.
    """
    return mixed_stream(n, duplicate_share, seed)[0]


def mixed_stream(n: int, duplicate_share: float = 0.2, seed: int = 1) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """:func:`mixed_records` and, per record, the index of the record it re-sends (-1 for a new
    story): the truth a benchmark scores decisions against."""
    import re

    rng = random.Random(seed)
    stories = [s for s in load_reuters() if len(s.body) > 300]
    sentences = [x.strip() for s in stories for x in re.split(r"(?<=[.!?])\s+", s.body) if len(x.strip()) > 40]
    titles = [s.title for s in stories if s.title]
    kinds = list(EDIT_KINDS.values())
    out: list[tuple[bytes, bytes]] = []
    made: list[tuple[str, str, int]] = []
    sources: list[int] = []
    while len(out) < n:
        rid = f"n{len(out)}"
        if made and rng.random() < duplicate_share:
            title, body, source = rng.choice(made[-5000:])
            text = None if rng.random() < 0.3 else rng.choice(kinds)(title, body, rng.choice(sentences), rng)
            rec = {"id": rid, "title": title, "text": body} if text is None else {"id": rid, "title": "", "text": text}
            sources.append(source)
        else:
            title = rng.choice(titles)
            body = "\n    ".join(rng.sample(sentences, rng.randint(4, 9)))
            made.append((title, body, len(out)))
            rec = {"id": rid, "title": title, "text": body}
            sources.append(-1)
        out.append((rid.encode(), orjson.dumps(rec)))
    return out, sources


def long_records(n: int, min_bytes: int = 20_000, max_bytes: int = 50_000, duplicate_share: float = 0.2,
                 seed: int = 1) -> list[tuple[bytes, bytes]]:
    """``n`` records of web-page size (``min_bytes..max_bytes`` of text): Reuters stories
    concatenated; ``duplicate_share`` of them re-send an earlier page with one ~500-character
    block replaced (a changed teaser or footer), so the decisions are not all unique."""
    rng = random.Random(seed)
    bodies = [s.body for s in load_reuters() if len(s.body) > 300]
    out: list[tuple[bytes, bytes]] = []
    made: list[str] = []
    while len(out) < n:
        rid = f"l{len(out)}"
        if made and rng.random() < duplicate_share:
            page = rng.choice(made[-500:])
            at = rng.randrange(max(1, len(page) - 500))
            text = page[:at] + rng.choice(bodies)[:500] + page[at + 500:]
        else:
            target = rng.randint(min_bytes, max_bytes)
            parts: list[str] = []
            size = 0
            while size < target:
                parts.append(rng.choice(bodies))
                size += len(parts[-1]) + 2
            text = "\n\n".join(parts)[:max_bytes]
            made.append(text)
        out.append((rid.encode(), orjson.dumps({"id": rid, "title": "", "text": text})))
    return out
