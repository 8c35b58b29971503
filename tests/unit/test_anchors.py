"""Anchor keys (``_kernels.anchors``): the kernel against a plain-Python reference, and what they are for."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamdedup import Fingerprinter, load_config
from streamdedup._kernels.anchors import ANCHOR_FIRST, ANCHOR_WINDOW, LONG_LINE, MAX_ANCHORS, SHORT_LINE
from streamdedup.text.canonical import canonicalize

CFG = load_config(environ={}).fingerprint
FP = Fingerprinter(CFG)
FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
SPACE = [bytes([c]) for c in b" \n\r\t"]


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def _triggers(raw: bytes) -> list[int]:
    """Where each anchor's text begins in ``raw``: after each byte or character that makes one."""
    after = []
    line_ends = [p for p, b in enumerate(raw) if b == 10]
    for p, b in enumerate(raw):
        rest = raw[p + 1:p + 3]
        before = raw[p - 1:p] if p > 0 else b""
        if b == 10:
            k = line_ends.index(p)
            line = raw[(line_ends[k - 1] + 1 if k else 0):p]
            if k == 0 or len(line) < SHORT_LINE or len(line) > LONG_LINE or raw[p + 1:p + 2] in SPACE:
                after.append(p + 1)
        elif bytes([b]) in b".!?":
            if not rest or rest[:1] in SPACE or (rest[:1] in (b'"', b"'", b")") and (len(rest) < 2 or rest[1:2] in SPACE)):
                after.append(p + 1)
        elif b == 45 and before == b" " and (rest[:1] in SPACE or (rest[:1] == b"-" and raw[p + 2:p + 3] == b" ")):
            after.append(p + 1)
        elif raw[p:p + 3] in ("。".encode(), "！".encode(), "？".encode()):
            after.append(p + 3)
        elif raw[p:p + 3] in ("–".encode(), "—".encode()) and before == b" ":
            after.append(p + 3)
    return after


def reference(text: str, window=ANCHOR_WINDOW, first=ANCHOR_FIRST, cap=MAX_ANCHORS) -> list[int]:
    """The kernel's rule, written plainly: the canonical text of what follows each anchor (the
    start, then each trigger), one per distinct place, the kept ones, their first ``window``
    bytes hashed 8 at a time, distinct keys."""
    raw = text.encode()
    rests: list[bytes] = []
    for p in [0] + _triggers(raw):
        rest = canonicalize(raw[p:].decode(), CFG.canonical).encode()
        if rest and (not rests or len(rests[-1]) != len(rest)):  # a place already anchored
            rests.append(rest)
    if len(rests) > cap:
        step = -(-(len(rests) - first) // (cap - first))
        rests = rests[:first] + rests[first:][::step]
    keys: list[int] = []
    for rest in rests:
        if len(rest) < window:
            break
        h = FNV_OFFSET
        for t in range(0, window, 8):
            h = ((h ^ int.from_bytes(rest[t:t + 8], "little")) * FNV_PRIME) & MASK
        k = _fmix64(h) & 0xFFFFFFFF or 1
        if k not in keys:
            keys.append(k)
    return keys[:cap]


def kernel(text: str) -> list[int]:
    b = FP.fingerprint_batch([text])
    return [int(k) for k in b.anchors[0, :b.anchor_n[0]]]


PIECES = ["word", "Story", "said", "the", "(Reuters)", "-", "--", "—", ".", "!", "?", '."', ".)", "\n", "\n\n", "  ",
          "中国", "经济", "。", "！", "？", "3.5", "U.S.", "e-mail", "–", "\t"]


def _random_text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(PIECES) for _ in range(n))


def test_kernel_equals_reference_on_random_texts():
    rng = random.Random(29)
    # 200 pieces already make ~120 anchor places, over MAX_ANCHORS (the thinning); a few texts
    # of 2,000 (~1,240 places, larger thinning steps) are enough: the reference canonicalises
    # the rest of the text at every place, ~1.4 s a text that long
    for n, texts in [(0, 30), (1, 30), (3, 30), (10, 30), (40, 30), (200, 30), (2000, 4)]:
        for _ in range(texts):
            raw = _random_text(rng, n)
            assert kernel(raw) == reference(raw), raw


@pytest.mark.parametrize("text", ["", "short.", "A headline\nLONDON (Reuters) - Oil rose on Monday as traders weighed supply.",
                                  "第一句话在这里写得很长很长很长。第二句话也写得很长很长很长很长很长。" * 3])
def test_kernel_equals_reference_on_fixed_texts(text):
    assert kernel(text) == reference(text)


HEADLINE = "Oil climbs as supply worries grow in the North Sea fields"
STANDFIRST = "Prices rose for a third day while refiners waited for news on the pipeline repairs."
BODY = ("Oil prices rose on Monday as traders weighed the risk of further outages in the North Sea. "
        "Brent crude futures gained 1.2 percent to settle near their highest level this month. "
        "Analysts said the market would watch the weekly inventory figures closely.")


def test_a_teaser_after_a_header_shares_an_anchor_with_its_story():
    story = f"{HEADLINE}\n{STANDFIRST}\nBy Jane Doe\nLONDON (Reuters) - {BODY}"
    teaser = f"{HEADLINE}\n{BODY.split('. ')[0]}. {BODY.split('. ')[1]}."
    ks, kt = set(kernel(story)), set(kernel(teaser))
    assert ks & kt
    other = "Wheat falls as rain reaches the plains.\nChicago wheat futures fell for a second session on forecasts of rain."
    assert not set(kernel(other)) & ks


def test_a_hard_wrap_is_not_an_anchor():
    wrapped = "A headline\n" + "\n".join([BODY[i:i + 70] for i in range(0, len(BODY), 70)])
    assert len(kernel(wrapped)) == len(kernel("A headline\n" + BODY))


def test_a_paragraph_line_ends_an_anchor_without_a_sentence_end():
    """A line longer than any hard wrap is a paragraph: a block on the next line is anchored
    (a table row, a figure) and shares its key with the same block under another story."""
    block = "This article was produced by an automated newswire service and has not been edited."
    table = ("Shr 1.12 dlrs vs 98 cts Net 12.5 mln vs 10.1 mln Revs 450.2 mln vs 410.9 mln Avg shrs 11.9 mln vs 10.0 mln "
             "Nine mths Shr 3.40 dlrs vs 2.95 dlrs")
    assert len(table) > LONG_LINE
    other = "BETA FALLS\nBeta said it lost money on the deal, citing higher costs and weak demand in Europe."
    shared = set(kernel(f"ACME RESULTS\n{table}\n{block}")) & set(kernel(f"{other}\n{block}"))
    assert len(shared) == 1
    assert kernel(f"ACME RESULTS\n{table}\n{block}") == reference(f"ACME RESULTS\n{table}\n{block}")


def test_a_mid_story_excerpt_shares_an_anchor():
    story = f"{HEADLINE}\n{BODY}"
    excerpt = BODY.split(". ", 1)[1]
    assert set(kernel(story)) & set(kernel(excerpt))


def test_a_long_story_keeps_its_first_anchors_and_at_most_max():
    sentences = [f"Sentence number {i} says something long enough to be a span." for i in range(300)]
    keys = kernel(" ".join(sentences))
    assert len(keys) == MAX_ANCHORS
    assert keys[:ANCHOR_FIRST] == kernel(" ".join(sentences[:ANCHOR_FIRST + 2]))[:ANCHOR_FIRST]


def test_each_text_of_a_batch_has_its_own_anchor_keys():
    # ASCII and non-ASCII texts side by side: the triggers are noted per text, by the ASCII pass
    # or by the pass by characters
    texts = [f"{HEADLINE}\n{BODY}", "tiny", "第一句话在这里写得很长很长很长。第二句话也写得很长很长很长很长很长。" * 2,
             f"{STANDFIRST}\n{BODY}", "Ｏｉｌ ｐｒｉｃｅｓ — " + BODY]
    b = FP.fingerprint_batch(texts)
    assert [[int(k) for k in b.anchors[i, :b.anchor_n[i]]] for i in range(len(texts))] == [reference(t) for t in texts]
    assert b.anchor_n[1] == 0


def test_a_copy_in_other_unicode_forms_keeps_its_anchors():
    # keys hash canonical bytes: full-width letters are NFKC-folded before they are hashed
    story = f"{HEADLINE}\n{BODY}"
    copy = BODY.split(". ", 1)[1].replace("Brent", "Ｂｒｅｎｔ")
    assert set(kernel(story)) & set(kernel(copy))
