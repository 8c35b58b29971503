"""The fast path of record decoding: JSON lines checked and split in Numba.

A news feed is millions of lines of the same shape (``{"id": ..., "text": ...}``), and decoding
each through orjson and Python checks cost ~2 us per line, plus ~1.5 us to turn the text back
into bytes for the fingerprint. :func:`scan_lines` validates each line as JSON (RFC 8259, the
subset that orjson accepts) and, for the plain case, copies the unescaped text into a buffer
the fingerprint kernel reads directly and records where the id and the closing brace are.

It never rejects a line: anything outside the plain case (non-ASCII bytes or ``\\u`` escapes,
a missing or non-string id, a repeated field, numbers with an exponent, texts with markup or
entities, invalid JSON, ...) is marked SLOW and goes through :class:`streamdedup.text.decode.RecordDecoder`,
which accepts it or names the reason. So a FAST line is one that the Python decoder would
accept with exactly the id, text and event time found here (tested on generated and mutated
lines against orjson and the decoder).

Why one module of ~580 lines (over the ~400 the project aims for): the JSON grammar helpers
(``_string``, ``_number``, ``_value``, ...) exist only to be compiled into ``scan_lines``, and
Numba's on-disk cache of a kernel is invalidated only when the kernel's own file changes, not
when a helper in another file does (Numba docs, "Notes on Caching": cache invalidation fails to
recognise changes in symbols defined in a different file). Split in two, an edit of a helper
would leave ``scan_lines`` running its old copy from the cache until that cache was cleared by
hand; kept in one file, every edit recompiles what depends on it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FAST = 0
SLOW = 1
BLANK = 2  # empty or whitespace only (a dead letter)

_QUOTE = 34
_BACKSLASH = 92
#: nesting deeper than this goes to the Python decoder (orjson allows 1024)
MAX_DEPTH = 128
#: an integer with more digits could overflow a double in orjson; an exponent likewise
MAX_NUMBER_DIGITS = 300
#: ``_string``'s ``q`` when the string is only checked: an int64, not a literal -1, so that Numba
#: compiles ``_string`` once (see ``_kernels/__init__``, Compile time)
NO_COPY = np.int64(-1)

# The helpers here are plain compiled functions, not inline="always": Numba's inlining re-types a
# helper at each of its call sites (``_ws`` has a dozen), ~0.7 s more compile time, while LLVM
# inlines the compiled helpers anyway (the scan is as fast either way).


@njit(cache=True)
def _copy(dst, src):
    """``dst[:] = src`` (same length, no overlap) as a loop over two views: ~3 s less compile time
    than slice assignment and as fast or faster (see ``_kernels/__init__``, Compile time)."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@njit(cache=True)
def _ws(buf, p, hi):
    while p < hi:
        c = buf[p]
        if c != 32 and c != 9 and c != 10 and c != 13:
            break
        p += 1
    return p


@njit(cache=True)
def _hex4(buf, p, hi):
    """The value of four hex digits at ``p``, or 0x10000 if they are not."""
    if p + 4 > hi:
        return 0x10000
    v = 0
    for k in range(p, p + 4):
        c = buf[k]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return 0x10000
        v = v * 16 + d
    return v


#: flags of a string: it has an escape; it may hold markup or an entity (the Python path decides)
F_ESCAPED = 1
F_MARKUP = 2


def _byte_classes() -> np.ndarray:
    t = np.zeros(256, dtype=np.uint8)  # 0: a plain string byte
    t[:0x20] = 4  # control characters: invalid in a JSON string
    t[0x80:] = 4  # non-ASCII: the Python path
    t[34] = 1  # "
    t[92] = 2  # backslash
    t[38] = 3  # &
    t[60] = 3  # <
    return t


#: what each byte is inside a string: one table load instead of a chain of comparisons
_CLASS = _byte_classes()


@njit(cache=True)
def _string(buf, p, hi, out, q):
    """End of the JSON string opening at ``p`` (past its quote) or -1, its ``F_*`` flags, and,
    when ``q >= 0``, the string unescaped into ``out[q:]`` and the end of what was written.

    -1 also for what the fast path leaves to Python: non-ASCII bytes and ``\\u`` escapes of
    non-ASCII characters. ``F_MARKUP``: an ``&``, or a ``<`` that may open a tag the canonical
    form strips (``</``, ``<!``, ``<br``; an escape right after it, which could hide one; or
    the end of the string, where a joined next field could complete one).
    """
    p += 1
    flags = 0
    copy = q >= 0
    while p < hi:
        # a run of plain bytes: found with the tightest loop, copied as a block
        run = p
        while p < hi and _CLASS[buf[p]] == 0:
            p += 1
        if copy and p > run:
            _copy(out[q:q + p - run], buf[run:p])
            q += p - run
        if p >= hi:
            break
        c = buf[p]
        k = _CLASS[c]
        if k == 1:
            return p + 1, flags, q
        if k == 2:
            if p + 1 >= hi:
                return -1, flags, q
            e = buf[p + 1]
            if e == 110:
                c = 10
            elif e == 116:
                c = 9
            elif e == 34 or e == 92 or e == 47:
                c = e
            elif e == 114:
                c = 13
            elif e == 98:
                c = 8
            elif e == 102:
                c = 12
            elif e == 117:
                v = _hex4(buf, p + 2, hi)
                if v >= 0x80:
                    # non-ASCII characters (and surrogate pairs) are left to orjson
                    return -1, flags, q
                # \u00XX of an ASCII character (Reuters ends every story with \u0003)
                c = v
                if v == 38 or v == 60:
                    flags |= F_MARKUP
                p += 4
            else:
                return -1, flags, q
            flags |= F_ESCAPED
            if copy:
                out[q] = c
                q += 1
            p += 2
            continue
        if k == 3:
            if c == 38:
                flags |= F_MARKUP
            else:
                d = buf[p + 1] if p + 1 < hi else 0
                e = buf[p + 2] if p + 2 < hi else 0
                if (d == 47 or d == 33 or d == _BACKSLASH or d == _QUOTE
                        or ((d == 98 or d == 66) and (e == 114 or e == 82 or e == _BACKSLASH or e == _QUOTE))):
                    flags |= F_MARKUP
            if copy:
                out[q] = c
                q += 1
            p += 1
            continue
        return -1, flags, q  # control characters (invalid JSON) and non-ASCII bytes
    return -1, flags, q


@njit(cache=True)
def _number(buf, p, hi):
    """End of the JSON number at ``p``, or -1; and whether it is a plain integer (no fraction)."""
    start = p
    if p < hi and buf[p] == 45:  # -
        p += 1
    if p >= hi:
        return -1, False
    if buf[p] == 48:  # 0
        p += 1
    elif 49 <= buf[p] <= 57:
        while p < hi and 48 <= buf[p] <= 57:
            p += 1
    else:
        return -1, False
    integer = True
    if p < hi and buf[p] == 46:  # .
        integer = False
        p += 1
        if p >= hi or not (48 <= buf[p] <= 57):
            return -1, False
        while p < hi and 48 <= buf[p] <= 57:
            p += 1
    if p < hi and (buf[p] == 101 or buf[p] == 69):  # e E: overflow rules are orjson's, leave it
        return -1, False
    if p - start > MAX_NUMBER_DIGITS:
        return -1, False
    return p, integer


@njit(cache=True)
def _literal(buf, p, hi, word):
    n = word.shape[0]
    if p + n > hi:
        return -1
    for k in range(n):
        if buf[p + k] != word[k]:
            return -1
    return p + n


@njit(cache=True)
def _scalar(buf, p, hi, lit_true, lit_false, lit_null, nowhere):
    """End of a string, number or literal at ``p`` (-1 if none), its kind (1 str, 2 int, 3 float,
    4 bool, 5 null) and, for a string, its ``F_*`` flags."""
    c = buf[p]
    if c == _QUOTE:
        q, flags, _ = _string(buf, p, hi, nowhere, NO_COPY)
        return q, 1, flags
    if c == 45 or 48 <= c <= 57:
        q, integer = _number(buf, p, hi)
        return q, 2 if integer else 3, 0
    if c == 116:
        return _literal(buf, p, hi, lit_true), 4, 0
    if c == 102:
        return _literal(buf, p, hi, lit_false), 4, 0
    if c == 110:
        return _literal(buf, p, hi, lit_null), 5, 0
    return -1, 0, 0


@njit(cache=True)
def _value(buf, p, hi, stack, lit_true, lit_false, lit_null, nowhere):
    """End of the JSON value at ``p`` (any nesting), or -1."""
    depth = 0
    while True:
        p = _ws(buf, p, hi)
        if p >= hi:
            return -1
        c = buf[p]
        closed = False
        if c == 123 or c == 91:  # { [
            if depth >= stack.shape[0]:
                return -1
            stack[depth] = c
            depth += 1
            p = _ws(buf, p + 1, hi)
            if p >= hi:
                return -1
            if (c == 123 and buf[p] == 125) or (c == 91 and buf[p] == 93):
                p += 1
                depth -= 1
                closed = True
            elif c == 123:
                if buf[p] != _QUOTE:
                    return -1
                p, _, _ = _string(buf, p, hi, nowhere, NO_COPY)
                if p < 0:
                    return -1
                p = _ws(buf, p, hi)
                if p >= hi or buf[p] != 58:  # :
                    return -1
                p += 1
                continue
            else:
                continue
        else:
            p, _, _ = _scalar(buf, p, hi, lit_true, lit_false, lit_null, nowhere)
            if p < 0:
                return -1
            closed = True
        # after a complete value: close containers or move to the next element
        while closed:
            if depth == 0:
                return p
            p = _ws(buf, p, hi)
            if p >= hi:
                return -1
            c = buf[p]
            top = stack[depth - 1]
            if c == 44:  # ,
                p += 1
                if top == 123:
                    p = _ws(buf, p, hi)
                    if p >= hi or buf[p] != _QUOTE:
                        return -1
                    p, _, _ = _string(buf, p, hi, nowhere, NO_COPY)
                    if p < 0:
                        return -1
                    p = _ws(buf, p, hi)
                    if p >= hi or buf[p] != 58:
                        return -1
                    p += 1
                closed = False
            elif (c == 125 and top == 123) or (c == 93 and top == 91):
                p += 1
                depth -= 1
            else:
                return -1


@njit(cache=True)
def _key_is(buf, lo, hi, key):
    if hi - lo != key.shape[0]:
        return False
    for k in range(hi - lo):
        if buf[lo + k] != key[k]:
            return False
    return True


@njit(cache=True)
def split_lines(buf, starts, ends):
    """Lines of ``buf`` (the last one may lack its newline); a trailing CR is not part of a line."""
    n = 0
    lo = 0
    size = buf.shape[0]
    for p in range(size):
        if buf[p] == 10:
            hi = p
            if hi > lo and buf[hi - 1] == 13:
                hi -= 1
            starts[n] = lo
            ends[n] = hi
            n += 1
            lo = p + 1
    return n, lo


@njit(cache=True)
def _blank(buf, lo, hi):
    for p in range(lo, hi):
        c = buf[p]
        if not (c == 32 or 9 <= c <= 13):
            return False
    return True


@njit(cache=True)
def _text_key(buf, k_lo, k_hi, text_keys, text_key_len):
    for t in range(text_keys.shape[0]):
        if _key_is(buf, k_lo, k_hi, text_keys[t, :text_key_len[t]]):
            return t
    return -1


# One kernel of ~190 lines on purpose: the field loop is one state machine whose position,
# write cursor, id span, event time, text parts and verdict every branch reads and updates;
# as helpers those would go in and out as tuples of eight, once per field of every line of a
# hot path. The JSON grammar itself is in the helpers above.
@njit(cache=True, nogil=True)
def scan_lines(
    buf, starts, ends, n_lines, id_key, text_keys, text_key_len, sep, time_key, has_time, time_max, dedup_key,
    max_record, max_text, max_id, check_html,
    status, id_lo, id_hi, close_at, text_buf, text_off, times,
):
    """Classify ``n_lines`` lines (FAST, SLOW, BLANK); for FAST ones fill the outputs.

    ``text_keys`` is a (k, L) byte matrix with lengths ``text_key_len``; the texts of FAST
    lines are written one after another into ``text_buf`` (``text_off[i]:text_off[i + 1]``,
    empty for other lines), unescaped while the line is validated; ``close_at`` is the
    position of the top-level closing brace; ``times`` the event time when ``has_time`` and
    the line has one (-1 otherwise). An event time over ``time_max`` (epoch ms: the wall clock
    plus ``input.max_future_skew_hours``) makes the line SLOW: the Python decoder tags it, or
    dead-letters it, with the reason.
    """
    n_text = text_keys.shape[0]
    stack = np.empty(MAX_DEPTH, dtype=np.uint8)
    lit_true = np.array([116, 114, 117, 101], dtype=np.uint8)
    lit_false = np.array([102, 97, 108, 115, 101], dtype=np.uint8)
    lit_null = np.array([110, 117, 108, 108], dtype=np.uint8)
    nowhere = np.empty(1, dtype=np.uint8)  # the copy target of strings that are only checked
    part_lo = np.empty(n_text, dtype=np.int64)  # -1 absent, -2 null, else where the part was copied
    part_hi = np.empty(n_text, dtype=np.int64)
    longest = 0
    for i in range(n_lines):
        if ends[i] - starts[i] > longest:
            longest = ends[i] - starts[i]
    join = np.empty(longest + n_text * sep.shape[0] + 1, dtype=np.uint8)
    q = np.int64(0)  # not a literal 0 (it becomes _string's q)
    text_off[0] = 0
    for i in range(n_lines):
        lo = starts[i]
        hi = ends[i]
        text_off[i + 1] = q
        times[i] = -1
        status[i] = SLOW
        if _blank(buf, lo, hi):
            status[i] = BLANK
            continue
        if hi - lo > max_record:
            continue
        p = _ws(buf, lo, hi)
        if p >= hi or buf[p] != 123:
            continue
        for t in range(n_text):
            part_lo[t] = -1
        il = -1
        ih = -1
        t_value = -2  # -2 absent, -1 null, else the time
        w = q  # where the next text part is copied
        ok = True
        p = _ws(buf, p + 1, hi)
        if p < hi and buf[p] == 125:
            ok = False  # an empty object: the Python decoder names what is missing
        while ok:
            if p >= hi or buf[p] != _QUOTE:
                ok = False
                break
            k_lo = p + 1
            p, k_flags, _ = _string(buf, p, hi, nowhere, NO_COPY)
            if p < 0 or k_flags & F_ESCAPED:
                ok = False  # escaped keys could equal a field name once unescaped
                break
            k_hi = p - 1
            p = _ws(buf, p, hi)
            if p >= hi or buf[p] != 58:
                ok = False
                break
            p = _ws(buf, p + 1, hi)
            if p >= hi:
                ok = False
                break
            v = p
            c = buf[p]
            t = _text_key(buf, k_lo, k_hi, text_keys, text_key_len)
            if t >= 0 and c == _QUOTE:
                if part_lo[t] != -1:
                    ok = False  # a repeated field: orjson keeps the last one, the fast path does not guess
                    break
                p, v_flags, w_end = _string(buf, p, hi, text_buf, w)
                if p < 0 or (check_html and v_flags & F_MARKUP):
                    ok = False  # entities and possible markup: the Python canonical form decides
                    break
                part_lo[t] = w
                part_hi[t] = w_end
                w = w_end
                continue_after = True
            else:
                continue_after = False
                if c == 123 or c == 91:
                    p = _value(buf, p, hi, stack, lit_true, lit_false, lit_null, nowhere)
                    kind = 6
                    v_flags = 0
                else:
                    p, kind, v_flags = _scalar(buf, p, hi, lit_true, lit_false, lit_null, nowhere)
                if p < 0:
                    ok = False
                    break
                if t >= 0:
                    if part_lo[t] != -1 or kind != 5:
                        ok = False  # repeated, or not a string (the Python decoder says which)
                        break
                    part_lo[t] = -2  # null: as if absent
            if not continue_after:
                if _key_is(buf, k_lo, k_hi, dedup_key):
                    ok = False
                    break
                if _key_is(buf, k_lo, k_hi, id_key):
                    if il != -1 or kind != 1 or v_flags & F_ESCAPED or p - v - 2 > max_id:
                        ok = False
                        break
                    il = v + 1
                    ih = p - 1
                if has_time and _key_is(buf, k_lo, k_hi, time_key):
                    if t_value != -2:
                        ok = False
                    elif kind == 5:
                        t_value = -1
                    elif kind == 2 and buf[v] != 45 and p - v <= 18:
                        t_value = 0
                        for d in range(v, p):
                            t_value = t_value * 10 + (buf[d] - 48)
                        if t_value > time_max:
                            ok = False  # too far in the future: the Python decoder says why
                    else:
                        ok = False  # ISO-8601 strings, floats, negative: the Python decoder
                    if not ok:
                        break
            elif _key_is(buf, k_lo, k_hi, id_key) or (has_time and _key_is(buf, k_lo, k_hi, time_key)):
                ok = False  # a field that is both a text and the id or time: the Python decoder
                break
            p = _ws(buf, p, hi)
            if p >= hi:
                ok = False
                break
            if buf[p] == 44:
                p = _ws(buf, p + 1, hi)
                continue
            if buf[p] == 125:
                break
            ok = False
        if not ok or il == -1:
            continue
        close = p
        if _ws(buf, p + 1, hi) != hi:
            continue  # content after the object
        # the text: present parts in the configured order, joined with the separator
        present = 0
        for t in range(n_text):
            if part_lo[t] >= 0:
                present += 1
        if present == 0:
            continue
        if present > 1:
            m = 0
            first = True
            for t in range(n_text):
                if part_lo[t] < 0:
                    continue
                if not first:
                    for k in range(sep.shape[0]):
                        join[m] = sep[k]
                        m += 1
                first = False
                for k in range(part_lo[t], part_hi[t]):
                    join[m] = text_buf[k]
                    m += 1
            _copy(text_buf[q:q + m], join[:m])
            end = q + m
        else:
            end = w  # the only part was copied from q on (a repeated text field is slow)
        keep = end - q <= max_text
        if keep:
            # blank text (str.isspace: \t-\r, \x1c-\x1f, space) is the Python decoder's to reject
            blank = True
            for k in range(q, end):
                c = text_buf[k]
                if not (c == 32 or 9 <= c <= 13 or 28 <= c <= 31):
                    blank = False
                    break
            keep = not blank
        if not keep:
            continue
        status[i] = FAST
        id_lo[i] = il
        id_hi[i] = ih
        close_at[i] = close
        q = end
        text_off[i + 1] = q
        if t_value >= 0:
            times[i] = t_value
    return q


@njit(cache=True)
def mark_blank(buf, starts, ends, n_lines, status):
    """BLANK for empty or whitespace-only lines (when the fast path is off, the rest stay SLOW)."""
    for i in range(n_lines):
        if _blank(buf, starts[i], ends[i]):
            status[i] = BLANK


@njit(cache=True, nogil=True)
def gather(a, a_lo, a_hi, b, b_lo, b_hi, from_b):
    """Concatenate one span per item, from ``a`` or (where ``from_b``) from ``b``: ``(buffer, offsets)``."""
    n = from_b.shape[0]
    off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        off[i + 1] = off[i] + ((b_hi[i] - b_lo[i]) if from_b[i] else (a_hi[i] - a_lo[i]))
    out = np.empty(max(off[n], 1), dtype=np.uint8)
    for i in range(n):
        if from_b[i]:
            _copy(out[off[i]:off[i + 1]], b[b_lo[i]:b_hi[i]])
        else:
            _copy(out[off[i]:off[i + 1]], a[a_lo[i]:a_hi[i]])
    return out, off


@njit(cache=True, nogil=True)
def assemble(buf, starts, stops, kinds, extra, extra_off, tail):
    """Output lines, one per item: ``buf[start:stop]`` then ``tail`` (kind 0), ``buf[start:stop]``
    then the item's ``extra`` bytes (kind 1), or only its ``extra`` bytes (kind 2)."""
    n = kinds.shape[0]
    size = 0
    for i in range(n):
        x = extra_off[i + 1] - extra_off[i]
        size += (stops[i] - starts[i] + tail.shape[0]) if kinds[i] == 0 else (stops[i] - starts[i] + x) if kinds[i] == 1 else x
    out = np.empty(size, dtype=np.uint8)
    q = 0
    for i in range(n):
        if kinds[i] != 2:
            m = stops[i] - starts[i]
            _copy(out[q:q + m], buf[starts[i]:stops[i]])
            q += m
        if kinds[i] == 0:
            _copy(out[q:q + tail.shape[0]], tail)
            q += tail.shape[0]
        else:
            m = extra_off[i + 1] - extra_off[i]
            _copy(out[q:q + m], extra[extra_off[i]:extra_off[i + 1]])
            q += m
    return out
