"""Reuters-derived record streams for the Kafka tests and benchmarks."""

from __future__ import annotations

import random

import orjson

from ..corpus import load_reuters
from .synthetic import EDIT_KINDS


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
