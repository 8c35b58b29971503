"""Synthetic edits with known ground truth, shared by the estimate benchmarks and the tests."""

from __future__ import annotations

import random

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def scattered(text: str, rate: float, rng: random.Random) -> str:
    """Substitute, delete or insert single characters at ``rate`` per character."""
    out: list[str] = []
    for ch in text:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(rng.choice(ALPHABET))
        elif r < rate:
            out.append(ch)
            out.append(rng.choice(ALPHABET))
        else:
            out.append(ch)
    return "".join(out)


def blocks(text: str, count: int, size: int, donor: str, rng: random.Random) -> str:
    """Insert or replace ``count`` blocks of ``size`` characters taken from ``donor``."""
    chars = list(text)
    for _ in range(count):
        pos = rng.randrange(max(1, len(chars)))
        start = rng.randrange(max(1, len(donor) - size))
        piece = list(donor[start:start + size])
        if rng.random() < 0.5:
            chars[pos:pos] = piece
        else:
            chars[pos:pos + size] = piece
    return "".join(chars)


def word_shingles(text, w: int) -> set[tuple]:
    """Exact word w-shingle set of canonical text, ``str`` or UTF-8 ``bytes`` (short texts give
    one shingle): the reference for the kernels' word shingles."""
    words = text.split()
    if not words:
        return set()
    w = min(w, len(words))
    return {tuple(words[i:i + w]) for i in range(len(words) - w + 1)}


def exact_jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)
