"""The revision test as the engine runs it: the compiled kernel behind :func:`detect`'s face.

:func:`detect` takes and returns what :func:`streamdedup.engine.revisions.detect` (the rules'
reference, in Python) does; :func:`detect_many` takes a batch's pairs of canonical texts as the
UTF-8 bytes the engine holds, so no text is decoded into Python objects and the kernel is
called once a batch. The word lists and the Unicode classes the rules read (which characters
are digits or spaces, as this Python's ``str`` methods say) are built into tables once, on the
first call.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Sequence

import numpy as np

from streamdedup._kernels import readonly
from streamdedup._kernels import revision as K
from streamdedup._kernels import revitems as I
from streamdedup._kernels.revtext import (C_BOILER, C_DATE_UNIT, C_DATELINE_END, C_HEAD_MARKER, C_MAGNITUDE, C_MONTH,
                                          C_NUMBER_WORD, C_POLARITY, C_STRONG, UNIT_SHIFT, slot_of, table_size,
                                          word_hash)
from streamdedup.engine.revision_tokens import MAGNITUDES, NUMBER_WORDS, POLARITY_WORDS, UNITS
from streamdedup.engine.revisions import (BOILERPLATE_WORDS, CJK_MARKERS, DATE_UNITS, DATELINE_ENDS, HEAD_CHARS,
                                          HEAD_MARKERS, MONTHS, STRONG_MARKERS, Revision)

#: work units (a word compared, or 32 cells of an edit distance table) the damaged-twin search
#: spends at most a pair (a few ms on one core): linked pairs of the wire feed spend 0 (median)
#: to 4,734, of 20-50 KB pages 954 to 2,418
WORK_BUDGET = 5_000
#: what a revision's changed items end with when the reading was partial
PARTIAL_ITEM = "(partial reading)"
_KINDS = ((I.K_MARKER, "marker"), (I.K_FIGURES, "figures"), (I.K_NEGATION, "negation"), (I.K_WORDS, "words"),
          (I.K_ADDED, "added"))
_NOT_REVISED = Revision(revised=False)


@lru_cache(maxsize=1)
def _tables():
    """(spaces, digits, decimals, word keys, word classes, Chinese markers and their offsets)."""
    spaces, digits, decimals = [], [], []
    for c in range(0x80, sys.maxunicode + 1):
        ch = chr(c)
        if ch.isspace():
            spaces.append(c)
        if ch.isdigit():
            digits.append(c)
            if ch.isdecimal():
                decimals.append(c)
    classes: dict[str, int] = {}
    for words, cls in ((NUMBER_WORDS, C_NUMBER_WORD), (POLARITY_WORDS, C_POLARITY), (STRONG_MARKERS, C_STRONG),
                       (HEAD_MARKERS, C_HEAD_MARKER), (BOILERPLATE_WORDS, C_BOILER), (MONTHS, C_MONTH),
                       (DATE_UNITS, C_DATE_UNIT), (DATELINE_ENDS, C_DATELINE_END)):
        for w in words:
            classes[w] = classes.get(w, 0) | cls
    names = {name: k + 1 for k, name in enumerate(sorted(set(UNITS.values())))}
    for w, name in UNITS.items():
        classes[w] = classes.get(w, 0) | names[name] << UNIT_SHIFT | (C_MAGNITUDE if name in MAGNITUDES else 0)
    keys = np.zeros(table_size(len(classes)), dtype=np.uint64)
    vals = np.zeros(keys.shape[0], dtype=np.int64)
    for w, cls in classes.items():
        h = np.uint64(word_hash(np.frombuffer(w.encode("utf-32-le"), dtype=np.int32)))
        s = slot_of(keys, h)
        keys[s] = h
        vals[s] = cls
    cjk = np.array([ord(c) for m in CJK_MARKERS for c in m], dtype=np.int32)
    off = np.cumsum([0] + [len(m) for m in CJK_MARKERS]).astype(np.int64)
    return tuple(readonly(a) for a in (np.array(spaces, dtype=np.int32), np.array(digits, dtype=np.int32),
                                       np.array(decimals, dtype=np.int32), keys, vals, cjk, off))


def detect_many(pairs: Sequence[tuple], earlier_head: int = HEAD_CHARS, later_head: int | None = None,
                work: int = WORK_BUDGET, threads: int = 1) -> list[Revision]:
    """The revision test of each ``(earlier, later)`` pair of canonical texts as UTF-8
    (``bytes`` or ``uint8`` arrays), in one kernel call, or with ``threads`` > 1 in that many
    calls at once on parts of about equal bytes (the kernel releases the GIL; each pair's
    answer is the same however the batch is cut)."""
    n = len(pairs)
    if n == 0:
        return []
    parts = [p for pair in pairs for p in pair]
    buf = readonly(np.frombuffer(b"".join(x.tobytes() if isinstance(x, np.ndarray) else x for x in parts), dtype=np.uint8))
    off = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum([len(x) for x in parts], out=off[1:])
    off = readonly(off)
    store = np.empty((n, K.STORE_ROWS, I.ROW), dtype=np.int32)
    slen = np.empty((n, K.STORE_ROWS, 2), dtype=np.int64)
    meta = np.empty((n, K.META), dtype=np.int64)
    later = -1 if later_head is None else later_head
    tables = _tables()

    def run(lo: int, hi: int) -> None:  # pairs lo..hi: their offsets stay absolute into buf
        K.revisions(buf, off[2 * lo:2 * hi + 1], earlier_head, later, *tables, work, store[lo:hi], slen[lo:hi],
                    meta[lo:hi])

    cuts = _cuts(off, n, threads)
    helpers = [_pool(len(cuts) - 2).submit(run, lo, hi) for lo, hi in zip(cuts[1:-1], cuts[2:])]
    run(cuts[0], cuts[1])
    for f in helpers:
        f.result()
    return _results(store, slen, meta)


#: pairs a part of a batch holds at least before the batch is cut for threads: a hand-over to
#: a pool thread and back (~33 us median, ~63 us p90, on a loaded 2-core machine) is worth it
#: from about this many pairs (~40 us each)
MIN_PAIRS_A_THREAD = 8


def _cuts(off: np.ndarray, n: int, threads: int) -> list[int]:
    """Where a batch of ``n`` pairs is cut into at most ``threads`` parts of about equal bytes
    (a pair's cost grows with its texts' length): the first pair of each part, then ``n``."""
    parts = max(1, min(threads, n // MIN_PAIRS_A_THREAD))
    if parts == 1:
        return [0, n]
    ends = off[2::2]  # where each pair ends in the buffer
    at = (np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts, side="right")).tolist()
    return sorted({0, n, *(min(max(c, 1), n - 1) for c in at)})


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _forget_pools() -> None:
    """In a forked child, which has none of its parent's threads: it makes pools of its own."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _POOLS.clear()


os.register_at_fork(after_in_child=_forget_pools)


def _pool(helpers: int) -> ThreadPoolExecutor:
    """A pool of ``helpers`` threads that run parts of a batch beside the calling thread, made on
    first use and kept (one per size, so callers with different settings do not wait on each other)."""
    with _POOL_LOCK:
        if helpers not in _POOLS:
            _POOLS[helpers] = ThreadPoolExecutor(helpers, thread_name_prefix="revisions")
        return _POOLS[helpers]


def _results(store: np.ndarray, slen: np.ndarray, meta: np.ndarray) -> list[Revision]:
    """The kernel's answers as :class:`Revision` objects. The items of every revised pair are
    gathered and decoded in one go, then cut: decoding them an item at a time cost about a
    quarter of what the kernel itself costs a pair."""
    rows = meta[:, :5].tolist()
    revised = np.flatnonzero(meta[:, K.M_REVISED])
    lens = slen[revised, :I.MAX_ITEMS, 0] * (np.arange(I.MAX_ITEMS) < meta[revised, K.M_ITEMS, None])
    points = store[revised, :I.MAX_ITEMS][np.arange(I.ROW) < lens[:, :, None]]
    text = points.tobytes().decode("utf-32-le")
    ends = np.cumsum(lens, axis=None)
    starts = (ends - lens.ravel()).tolist()
    ends = ends.tolist()
    out: list[Revision] = []
    k = 0  # the next revised pair's first item slot (MAX_ITEMS slots a pair)
    for revised_, kinds, typos, n_items, partial in rows:
        if not revised_:
            out.append(Revision(revised=False, typos=typos, partial=bool(partial)) if typos or partial
                       else _NOT_REVISED)
            continue
        changed = tuple(text[starts[q]:ends[q]] for q in range(k, k + n_items))
        k += I.MAX_ITEMS
        out.append(Revision(revised=True, kinds=_kinds(kinds), changed=changed, typos=typos, partial=bool(partial)))
    return out


@lru_cache(maxsize=None)
def _kinds(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in _KINDS if bits & bit)


def detect_bytes(earlier, later, earlier_head: int = HEAD_CHARS, later_head: int | None = None,
                 work: int = WORK_BUDGET) -> Revision:
    """:func:`detect` of two canonical texts as UTF-8 (``bytes`` or ``uint8`` arrays)."""
    return detect_many([(earlier, later)], earlier_head, later_head, work)[0]


def detect(earlier: str, later: str, earlier_head: int = HEAD_CHARS, later_head: int | None = None) -> Revision:
    """Whether ``later`` revises ``earlier`` (both canonical texts) and what changed: the rules
    of :func:`streamdedup.engine.revisions.detect`, compiled and bounded."""
    return detect_bytes(earlier.encode("utf-8"), later.encode("utf-8"), earlier_head, later_head)
