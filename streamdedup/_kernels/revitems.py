"""What the revision test found: its items (``"600 -> 500"``, ``"+not"``, ``"corrected"``) and kinds.

The test's state is one ``int64`` array (``st``: the kinds found, the typo count, the items and
pending items kept, whether the reading was partial, the work spent and its budget) and one
table of items (``store``: rows of code points; the first :data:`MAX_ITEMS` rows the result's
items, the next :data:`PENDING` the pending ones, which count only in a pair without typos;
``slen``: each row's length and kind). An item longer than :data:`ITEM_CHARS` is kept as its
first characters and "..."; an item already kept is not kept twice.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# kinds (bits), in the order a Revision lists them
K_MARKER = 1
K_FIGURES = 2
K_NEGATION = 4
K_WORDS = 8
K_ADDED = 16
#: items a result keeps, code points an item keeps (longer ones end in "...")
MAX_ITEMS = 8
ITEM_CHARS = 60
ROW = 64
#: pending items kept for the end: enough for MAX_ITEMS new ones whichever MAX_ITEMS the result
#: already holds
PENDING = 16
# st[...]
S_KINDS = 0
S_TYPOS = 1
S_ITEMS = 2
S_PEND = 3
S_PEND_KINDS = 4
S_PARTIAL = 5
S_WORK = 6
S_BUDGET = 7
S_STRONG = 8  # a marker that makes a revision alone was found (a strong or a Chinese one)
STATE = 9


@njit(cache=True)
def write_span(row, n, c, a, b):
    """Appends ``c[a:b]`` to ``row`` after its first ``n`` code points, as far as the row goes;
    returns the item's whole length (which may exceed the row)."""
    for p in range(a, b):
        if n < ROW:
            row[n] = c[p]
        n += 1
    return n


@njit(cache=True, inline="always")
def put(row, n, ch):
    if n < ROW:
        row[n] = ch
    return n + 1


@njit(cache=True)
def write_tokens(row, n, c, tk, lo, hi, mask, limit):
    """The tokens ``lo:hi`` whose classes meet ``mask`` (all when 0), at most ``limit`` (-1:
    all), joined by spaces; stops once the item is too long to keep whole."""
    first = True
    taken = 0
    for k in range(lo, hi):
        if taken == limit or n > ITEM_CHARS:
            break
        if mask == 0 or tk[k, 2] & mask:
            if not first:
                n = put(row, n, 32)
            n = write_span(row, n, c, tk[k, 0], tk[k, 1])
            first = False
            taken += 1
    return n


@njit(cache=True)
def _any_of(tk, lo, hi, mask, limit):
    if mask == 0:
        return hi > lo and limit != 0
    for k in range(lo, hi):
        if tk[k, 2] & mask:
            return True
    return False


@njit(cache=True)
def show(row, ca, tka, i1, i2, cb, tkb, j1, j2, mask, limit):
    """``old -> new``, ``+new`` or ``-old`` of the tokens meeting ``mask`` (``revisions._show``)."""
    has_old = _any_of(tka, i1, i2, mask, limit)
    has_new = _any_of(tkb, j1, j2, mask, limit)
    n = np.int64(0)
    if has_old and has_new:
        n = write_tokens(row, n, ca, tka, i1, i2, mask, limit)
        for ch in (32, 45, 62, 32):  # " -> "
            n = put(row, n, ch)
        n = write_tokens(row, n, cb, tkb, j1, j2, mask, limit)
    elif has_new:
        n = put(row, n, 43)  # +
        n = write_tokens(row, n, cb, tkb, j1, j2, mask, limit)
    else:
        n = put(row, n, 45)  # -
        n = write_tokens(row, n, ca, tka, i1, i2, mask, limit)
    return n


@njit(cache=True)
def _cut(row, n):
    """An item's length as kept: longer than :data:`ITEM_CHARS` ends in "..." within it."""
    if n <= ITEM_CHARS:
        return n
    for p in range(ITEM_CHARS - 3, ITEM_CHARS):
        row[p] = 46
    return ITEM_CHARS


@njit(cache=True)
def _keep(store, slen, first, count, cap, kind, row, n):
    """Keeps ``row`` in ``store`` rows ``first:first + cap`` unless it is there; the new count."""
    n = _cut(row, n)
    if count >= cap:
        return count
    for q in range(first, first + count):
        if slen[q, 0] == n:
            same = True
            for p in range(n):
                if store[q, p] != row[p]:
                    same = False
                    break
            if same:
                return count
    r = first + count
    for p in range(n):
        store[r, p] = row[p]
    slen[r, 0] = n
    slen[r, 1] = kind
    return count + 1


@njit(cache=True)
def add(st, store, slen, kind, row, n):
    """A change of ``kind`` found: its item kept (``_Found.add``)."""
    st[S_KINDS] |= kind
    st[S_ITEMS] = _keep(store, slen, np.int64(0), st[S_ITEMS], np.int64(MAX_ITEMS), kind, row, n)


@njit(cache=True)
def pending(st, store, slen, kind, row, n):
    """A small change of ``kind``: material only if the pair has no typo (see :func:`settle`)."""
    st[S_PEND_KINDS] |= kind
    st[S_PEND] = _keep(store, slen, np.int64(MAX_ITEMS), st[S_PEND], np.int64(PENDING), kind, row, n)


@njit(cache=True)
def settle(st, store, slen):
    """The pending changes count in a pair without typos."""
    if st[S_TYPOS] != 0:
        return
    st[S_KINDS] |= st[S_PEND_KINDS]
    for q in range(MAX_ITEMS, MAX_ITEMS + st[S_PEND]):
        st[S_ITEMS] = _keep(store, slen, np.int64(0), st[S_ITEMS], np.int64(MAX_ITEMS), slen[q, 1], store[q], slen[q, 0])
