"""Anchor keys (``_kernels.anchors``): the kernel against a plain-Python reference, and what they are for."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamdedup import Fingerprinter, load_config
from streamdedup._kernels import canonical_byte_map
from streamdedup._kernels.anchors import ANCHOR_FIRST, ANCHOR_WINDOW, MAX_ANCHORS, SHORT_LINE, anchor_keys

CMAP = canonical_byte_map(True, True)
FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
SPACE = b" \n\r\t"


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def reference(raw: bytes, cmap=CMAP, window=ANCHOR_WINDOW, first=ANCHOR_FIRST, cap=MAX_ANCHORS) -> list[int]:
    """The kernel's rule, written plainly: anchors, spans, the kept ones, distinct keys."""
    starts, pending = [], True
    line_ends = [p for p, b in enumerate(raw) if b == 10]
    for p, b in enumerate(raw):
        if pending and cmap[b] != 32:
            starts.append(p)
            pending = False
        rest = raw[p + 1:p + 3]
        before = raw[p - 1:p] if p > 0 else b""
        if b == 10:
            k = line_ends.index(p)
            line = raw[(line_ends[k - 1] + 1 if k else 0):p]
            pending = k == 0 or len(line) < SHORT_LINE or raw[p + 1:p + 2] in [bytes([c]) for c in SPACE]
        elif bytes([b]) in b".!?":
            pending = not rest or rest[:1] in [bytes([c]) for c in SPACE] or (
                rest[:1] in (b'"', b"'", b")") and (len(rest) < 2 or rest[1:2] in [bytes([c]) for c in SPACE]))
        elif b == 45 and before == b" " and (rest[:1] in [bytes([c]) for c in SPACE] or (rest[:1] == b"-" and raw[p + 2:p + 3] == b" ")):
            pending = True
        elif raw[p:p + 3] in ("。".encode(), "！".encode(), "？".encode()):
            pending = True
        elif raw[p:p + 3] in ("–".encode(), "—".encode()) and before == b" ":
            pending = True
    if len(starts) > cap:
        step = -(-(len(starts) - first) // (cap - first))
        starts = starts[:first] + starts[first:][::step]
    keys: list[int] = []
    for s in starts:
        span = [cmap[b] for b in raw[s:] if cmap[b] != 32][:window]
        if len(span) < window:
            break
        h = FNV_OFFSET
        for c in span:
            h = ((h ^ int(c)) * FNV_PRIME) & MASK
        k = _fmix64(h) & 0xFFFFFFFF or 1
        if k not in keys:
            keys.append(k)
    return keys[:cap]


def kernel(raw: bytes) -> list[int]:
    buf = np.frombuffer(raw, dtype=np.uint8) if raw else np.zeros(0, np.uint8)
    out = np.zeros(MAX_ANCHORS, dtype=np.uint32)
    n = anchor_keys(buf, 0, len(raw), CMAP, ANCHOR_WINDOW, ANCHOR_FIRST, np.empty(len(raw) + 1, np.int64), out)
    return [int(k) for k in out[:n]]


PIECES = ["word", "Story", "said", "the", "(Reuters)", "-", "--", "—", ".", "!", "?", '."', ".)", "\n", "\n\n", "  ",
          "中国", "经济", "。", "！", "？", "3.5", "U.S.", "e-mail", "–", "\t"]


def _random_text(rng: random.Random, n: int) -> bytes:
    return " ".join(rng.choice(PIECES) for _ in range(n)).encode()


def test_kernel_equals_reference_on_random_texts():
    rng = random.Random(29)
    for n in [0, 1, 3, 10, 40, 200, 2000]:
        for _ in range(30):
            raw = _random_text(rng, n)
            assert kernel(raw) == reference(raw), raw


@pytest.mark.parametrize("text", ["", "short.", "A headline\nLONDON (Reuters) - Oil rose on Monday as traders weighed supply.",
                                  "第一句话在这里写得很长很长很长。第二句话也写得很长很长很长很长很长。" * 3])
def test_kernel_equals_reference_on_fixed_texts(text):
    assert kernel(text.encode()) == reference(text.encode())


HEADLINE = "Oil climbs as supply worries grow in the North Sea fields"
STANDFIRST = "Prices rose for a third day while refiners waited for news on the pipeline repairs."
BODY = ("Oil prices rose on Monday as traders weighed the risk of further outages in the North Sea. "
        "Brent crude futures gained 1.2 percent to settle near their highest level this month. "
        "Analysts said the market would watch the weekly inventory figures closely.")


def test_a_teaser_after_a_header_shares_an_anchor_with_its_story():
    story = f"{HEADLINE}\n{STANDFIRST}\nBy Jane Doe\nLONDON (Reuters) - {BODY}"
    teaser = f"{HEADLINE}\n{BODY.split('. ')[0]}. {BODY.split('. ')[1]}."
    ks, kt = set(kernel(story.encode())), set(kernel(teaser.encode()))
    assert ks & kt
    other = "Wheat falls as rain reaches the plains.\nChicago wheat futures fell for a second session on forecasts of rain."
    assert not set(kernel(other.encode())) & ks


def test_a_hard_wrap_is_not_an_anchor():
    wrapped = "A headline\n" + "\n".join([BODY[i:i + 70] for i in range(0, len(BODY), 70)])
    assert len(kernel(wrapped.encode())) == len(kernel(("A headline\n" + BODY).encode()))


def test_a_mid_story_excerpt_shares_an_anchor():
    story = f"{HEADLINE}\n{BODY}"
    excerpt = BODY.split(". ", 1)[1]
    assert set(kernel(story.encode())) & set(kernel(excerpt.encode()))


def test_a_long_story_keeps_its_first_anchors_and_at_most_max():
    sentences = [f"Sentence number {i} says something long enough to be a span." for i in range(300)]
    raw = " ".join(sentences).encode()
    keys = kernel(raw)
    assert len(keys) == MAX_ANCHORS
    assert keys[:ANCHOR_FIRST] == kernel(" ".join(sentences[:ANCHOR_FIRST + 2]).encode())[:ANCHOR_FIRST]


def test_the_fingerprint_batch_carries_the_anchor_keys():
    fp = Fingerprinter(load_config(environ={}).fingerprint)
    texts = [f"{HEADLINE}\n{BODY}", "tiny"]
    b = fp.fingerprint_batch(texts)
    assert [list(b.anchors[i, :b.anchor_n[i]]) for i in range(2)] == [kernel(t.encode()) for t in texts]
    assert b.anchor_n[1] == 0
