"""A long pair is read in its window: the differing middle with some context, at most
``revwindow.MAX_READ`` bytes of each text, and says its reading was partial.

The window kernel is held to a Python reference on generated pairs; the revision test on long
pairs is held to what it finds in their changed middles.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdedup._kernels import revision as K
from streamdedup._kernels.revwindow import CONTEXT, MAX_READ, _SNAP, window
from streamdedup.engine import revision_kernel as RK
from streamdedup.engine import revisions as R

WORDS = ("the company said its first quarter net profit rose from a year earlier analysts expected shares "
         "market trade oil price bank rate growth export government central output").split()


def _start(buf: bytes, x: int) -> int:
    for y in range(x, max(x - _SNAP, 0) - 1, -1):
        if y == 0 or buf[y - 1] == 0x20:
            return y
    while x > 0 and buf[x] & 0xC0 == 0x80:
        x -= 1
    return x


def _end(buf: bytes, x: int) -> int:
    for y in range(x, min(x + _SNAP, len(buf)) + 1):
        if y == len(buf) or buf[y] == 0x20:
            return y
    while x < len(buf) and buf[x] & 0xC0 == 0x80:
        x += 1
    return x


def window_reference(a: bytes, b: bytes, head_bytes: int) -> tuple[int, int, int, bool]:
    """The window as its docstring says it: the differing middle, CONTEXT bytes either side on
    word boundaries, at most MAX_READ bytes a text from where the window starts."""
    if len(a) <= MAX_READ and len(b) <= MAX_READ:
        return 0, len(a), len(b), False
    n = min(len(a), len(b))
    p = next((k for k in range(n) if a[k] != b[k]), n)
    s = next((k for k in range(n - p) if a[-1 - k] != b[-1 - k]), n - p)
    lo = 0 if p - CONTEXT <= head_bytes else _start(a, p - CONTEXT)
    a_hi, b_hi = len(a) - s + min(s, CONTEXT), len(b) - s + min(s, CONTEXT)
    if a_hi < len(a):
        e = _end(a, a_hi)
        a_hi, b_hi = e, b_hi + e - a_hi
    cut = min(a_hi, b_hi) - lo > MAX_READ
    if a_hi - lo > MAX_READ:
        a_hi = _start(a, lo + MAX_READ)
    if b_hi - lo > MAX_READ:
        b_hi = _start(b, lo + MAX_READ)
    return lo, a_hi, b_hi, cut


def _story(rng: random.Random, nbytes: int, han: bool = False) -> list[str]:
    pool = list("中国经济增长人民日报新华社北京电") if han else WORDS
    out, size = [], 0
    while size < nbytes:
        w = rng.choice(pool)
        out.append(w)
        size += len(w.encode()) + 1
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.integers(0, 2 ** 32), st.integers(MAX_READ // 2, 3 * MAX_READ), st.integers(0, 200), st.booleans(),
       st.integers(0, 4))
def test_the_window_is_the_one_its_reference_gives(seed: int, size: int, changes: int, han: bool, shape: int) -> None:
    rng = random.Random(seed)
    a = _story(rng, size, han)
    b = list(a)
    span = max(1, len(a) // (1 + shape * 3))  # changes anywhere (0) or bunched around one place
    at = rng.randrange(len(a))
    for _ in range(changes):
        k = min(len(b) - 1, max(0, at + rng.randrange(-span, span + 1)))
        op = rng.randrange(3)
        if op == 0:
            b[k] = rng.choice(WORDS) + str(rng.randrange(100))
        elif op == 1:
            b.insert(k, "更新" if han else "added")
        elif len(b) > 1:
            del b[k]
    sep = "" if han and shape % 2 else " "
    ea, eb = sep.join(a).encode(), sep.join(b).encode()
    head = rng.choice((0, 64 * 4, 4 * 4000))
    got = window(np.frombuffer(ea, np.uint8), np.frombuffer(eb, np.uint8), head)
    assert got == window_reference(ea, eb, head)
    lo, a_hi, b_hi, _ = got
    assert ea[:lo] == eb[:lo] and a_hi - lo <= MAX_READ and b_hi - lo <= MAX_READ
    # the window is cut between characters: each side decodes
    ea[lo:a_hi].decode()
    eb[lo:b_hi].decode()


def _long_pair(rng: random.Random, nbytes: int) -> tuple[list[str], int]:
    story = _story(rng, nbytes)
    return story, len(story) // 2


def test_a_changed_figure_in_the_middle_of_a_long_story_is_a_revision_read_in_part() -> None:
    rng = random.Random(3)
    story, mid = _long_pair(rng, 5 * MAX_READ)
    story[mid:mid] = ["profit", "was", "125", "mln", "dlrs"]
    later = list(story)
    later[mid + 2] = "152"
    r = RK.detect(" ".join(story), " ".join(later))
    assert r.revised and r.kinds == ("figures",) and r.partial, r
    assert any("125" in c and "152" in c for c in r.changed), r
    # the same change in a story read whole: the same finding, not partial
    short = story[mid - 300:mid + 300]
    whole = RK.detect(" ".join(short), " ".join(later[mid - 300:mid + 300]))
    assert whole.revised and whole.kinds == r.kinds and not whole.partial


def test_a_paragraph_added_to_a_long_story_is_an_update() -> None:
    rng = random.Random(4)
    story, mid = _long_pair(rng, 8 * MAX_READ)
    later = story[:mid] + "police arrested several suspects near the harbour on tuesday evening".split() + story[mid:]
    r = RK.detect(" ".join(story), " ".join(later))
    assert r.revised and "added" in r.kinds and r.partial, r


def test_a_paragraph_appended_to_a_long_story_is_an_update() -> None:
    """A live story re-sent with a paragraph at its end: the window is the story's last context
    and the paragraph, read as added (and a block longer than the alignment takes is read for its
    markers only, as the Python rules read it)."""
    rng = random.Random(8)
    story = _story(rng, 3 * MAX_READ)
    paragraph = "police arrested several suspects near the harbour on tuesday evening".split()
    r = RK.detect(" ".join(story), " ".join(story + paragraph * 20))
    assert r.revised and r.kinds == ("added",) and r.partial, r
    huge = story + paragraph * 400  # 4,400 words: more than the alignment's 3,000
    assert not RK.detect(" ".join(story), " ".join(huge)).revised
    assert not R.detect(" ".join(story[-300:]), " ".join(huge[len(story) - 300:])).revised


def test_a_typo_in_a_long_story_is_no_revision() -> None:
    rng = random.Random(5)
    story, mid = _long_pair(rng, 4 * MAX_READ)
    story[mid] = "government"
    later = list(story)
    later[mid] = "goverment"
    r = RK.detect(" ".join(story), " ".join(later))
    assert not r.revised and r.partial, r


def test_a_long_story_changed_in_its_headline_is_read_from_its_headline() -> None:
    """A change within the headline region keeps the window's start at 0: the headline is read
    as one; and where the window ends before what differs, its ends are no change."""
    rng = random.Random(6)
    story = ["profit", "up", "12", "pct"] + _story(rng, 3 * MAX_READ)
    later = list(story)
    later[2] = "21"
    for k in range(len(story) - 40, len(story), 4):  # and changes past the window's end
        later[k] = "correction"
    r = RK.detect(" ".join(story), " ".join(later))
    short = R.detect(" ".join(story[:2000]), " ".join(later[:2000]))
    assert r.revised and (r.kinds, r.changed, r.typos) == (short.kinds, short.changed, short.typos) and r.partial
    later[2] = "12"
    later.insert(3, "more")  # the windows end at other places in the story
    later.insert(5, "mln")
    r = RK.detect(" ".join(story), " ".join(later))
    short = R.detect(" ".join(story[:2000]), " ".join(later[:2002]))
    assert (r.revised, r.kinds, r.changed) == (short.revised, short.kinds, short.changed), (r, short)


def test_a_pair_with_more_changed_blocks_than_are_read_says_its_reading_was_partial() -> None:
    rng = random.Random(7)
    story = _story(rng, 20_000)
    later = list(story)
    for k in range(50, 50 + 4 * (K.MAX_BLOCKS + 10), 4):  # one figure changed every fourth word
        story[k], later[k] = f"{k}0", f"{k}1"
    a, b = " ".join(story), " ".join(later)
    r = RK.detect(a, b)
    assert r.revised and r.kinds == ("figures",) and r.partial
    fewer = " ".join(later[:50 + 4 * (K.MAX_BLOCKS - 10)] + story[50 + 4 * (K.MAX_BLOCKS - 10):])
    assert not RK.detect(a, fewer).partial
