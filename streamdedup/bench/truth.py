"""The ground truth of the accuracy suites: a stream item, and which texts overlap which (exact
word or character shingles, brute force with an inverted index). The suites
(:mod:`.accuracy`, :mod:`.hard_suite`, :mod:`.lang_suite`) and the report (:mod:`.hard_report`)
share them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable

from streamdedup.text.canonical import canonicalize

DUP_J, DUP_C = 0.6, 0.8
UNIQUE_J, UNIQUE_C = 0.4, 0.5
#: shingles in more stories than this are skipped by the brute-force truth (they are phrases
#: like "said in a statement"; a pair sharing only those has tiny Jaccard anyway)
MAX_POSTING = 400
HARD_NEGATIVE_MIN_BODY = 500


@dataclass
class Item:
    id: str
    text: str
    time_ms: int
    kind: str  # natural | <edit kind> | hard negative
    source: str | None = None
    truth: bool | None = None


def shingle_set(text: str, w: int) -> set[int]:
    words = canonicalize(text).split()
    if not words:
        return set()
    w = min(w, len(words))
    return {hash(" ".join(words[i:i + w])) for i in range(len(words) - w + 1)}


def isolated_texts(texts: list[str], w: int, shingles: Callable[[str], set[int]] | None = None) -> list[bool]:
    """True for texts with Jaccard < UNIQUE_J and containment < UNIQUE_C against every other
    (exact word ``w``-shingles, or the sets ``shingles`` gives)."""
    sets = [shingles(t) if shingles else shingle_set(t, w) for t in texts]
    postings: dict[int, list[int]] = defaultdict(list)
    for i, sh in enumerate(sets):
        for h in sh:
            postings[h].append(i)
    out = []
    for i, sh in enumerate(sets):
        counts: Counter = Counter()
        for h in sh:
            plist = postings[h]
            if len(plist) <= MAX_POSTING:
                counts.update(plist)
        counts.pop(i, None)
        ok = True
        for j, inter in counts.items():
            jac = inter / (len(sh) + len(sets[j]) - inter)
            if jac >= UNIQUE_J or inter / len(sh) >= UNIQUE_C or inter / len(sets[j]) >= UNIQUE_C:
                ok = False
                break
        out.append(ok and bool(sh))
    return out
