"""What of a long pair the revision test reads: the differing middle and some context around it.

Reading a text into words costs ~20-40 ns a byte (decoding, splitting, naming and classing each
word), so two texts at ``input.max_text_bytes`` (1 MB) cost 30-80 ms to read whole. A pair whose
texts are both at most :data:`MAX_READ` bytes is read whole. A longer pair is read in a window:
its common ends are found on the bytes (~1 ns a byte), and only the differing middle, with
:data:`CONTEXT` bytes either side, is read into words, at most :data:`MAX_READ` bytes of each
text from where they first differ. The window starts and ends on a word boundary, at the same
place in both texts, so the words the test reads are the texts' own.

A windowed reading is partial: the rules that ask whether a word is new to the whole earlier
text see the window only, and changes past the window's end are not read. Where both texts'
windows end before what differs does, their ends are not the same place in the story (one text
may have lost or gained words before them): the block at both ends is the cut's, not a change.
Where one text's window ends at its end, the other's cut tail is what it added (or, the other
way round, what a shortened copy left out) and is read as such.
"""

from __future__ import annotations

from numba import njit

#: bytes of each text the revision test reads into words at most
MAX_READ = 64 * 1024
#: bytes of common text read either side of the differing middle (the alignment's anchors)
CONTEXT = 2048
#: bytes a window's edge moves at most to find a space between words
_SNAP = 256


@njit(cache=True)
def _start(buf, x):
    """``x`` (``< len(buf)``) moved back to the start of a word (after a space), or else of a
    character."""
    lo = max(x - _SNAP, 0)
    y = x
    while y > lo and buf[y - 1] != 0x20:
        y -= 1
    if y == 0 or buf[y - 1] == 0x20:
        return y
    while x > 0 and buf[x] & 0xC0 == 0x80:
        x -= 1
    return x


@njit(cache=True)
def _end(buf, x):
    """``x`` moved on to the end of a word (a space or the text's end), or else to the start of
    a character."""
    hi = min(x + _SNAP, buf.shape[0])
    y = x
    while y < hi and buf[y] != 0x20:
        y += 1
    if y == buf.shape[0] or buf[y] == 0x20:
        return y
    while x < buf.shape[0] and buf[x] & 0xC0 == 0x80:
        x += 1
    return x


@njit(cache=True)
def window(a, b, head_bytes):
    """``(lo, a_hi, b_hi, cut)``: the window ``a[lo:a_hi]``, ``b[lo:b_hi]`` of the pair that the
    test reads, and whether both texts' windows end before what differs does; ``(0, len(a),
    len(b), False)`` when both fit :data:`MAX_READ`. ``lo`` stays 0 while the common start is
    within ``head_bytes`` (the headline regions are read whole)."""
    la, lb = a.shape[0], b.shape[0]
    if la <= MAX_READ and lb <= MAX_READ:
        return 0, la, lb, False
    n = min(la, lb)
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    s = 0
    while s < n - p and a[la - 1 - s] == b[lb - 1 - s]:
        s += 1
    lo = p - CONTEXT
    lo = 0 if lo <= head_bytes else _start(a, lo)  # a[:p] == b[:p]: a word start in a is one in b
    keep = min(s, CONTEXT)
    a_hi = la - s + keep
    b_hi = lb - s + keep
    if a_hi < la:  # within the common end, whose bytes are the same: one move serves both texts
        snap = _end(a, a_hi)
        b_hi += snap - a_hi
        a_hi = snap
    cut = a_hi - lo > MAX_READ and b_hi - lo > MAX_READ  # one text cut alone: its tail was added or left out
    if a_hi - lo > MAX_READ:
        a_hi = _start(a, lo + MAX_READ)
    if b_hi - lo > MAX_READ:
        b_hi = _start(b, lo + MAX_READ)
    return lo, a_hi, b_hi, cut
