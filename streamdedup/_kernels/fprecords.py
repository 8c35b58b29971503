"""Fingerprint records, written and read in bulk (layout: ``streamdedup/pipeline/fingerprints.py``).

``encode_batch`` writes the fingerprint records of a batch into one buffer; ``decode_batch``
checks and parses a list of records (joined into one buffer) into the engine's columns. The
pure-Python encoder and decoder in ``tests/unit/test_fingerprint_records.py`` are their
reference. The decoder reads untrusted bytes: every read is bounds-checked against the
record's end, and a record that is short, long, of another version or key, or whose fields
are out of range stops the pass with a status code (the wrapper names it), so a garbled
record never reads outside the buffer or reaches the engine.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.anchors import MAX_ANCHORS
from streamdedup._kernels.records import _get_uint, _pack_minhash, _put_signed, _put_uint, _put_varint, _unpack_minhash
from streamdedup._kernels.sketches import SKETCH_BYTES

CODEC_VERSION = 4
#: a record without its canonical text (flag ``F_NO_TEXT``): a version of its own, so a
#: decider that reads only version 4 names the version instead of calling the flag garbled;
#: records with text keep version 4's bytes, so workers and deciders upgrade in any order
TEXT_FREE_VERSION = 5
KIND_FINGERPRINT = 0
KIND_DEAD = 1
KIND_PARAMS = 2
#: version, kind, params key
HEAD = 6
_VARINT_MAX = 10
F_EMPTY = 1
F_NO_TEXT = 2

# decode_batch statuses (the wrapper turns them into messages)
OK = 0
TRUNCATED = 1
BAD_VERSION = 2
BAD_KIND = 3
BAD_KEY = 4
BAD_FIELD = 5
TRAILING = 6


@njit(cache=True, inline="always")
def _put_bytes(buf, q, src, start, n):
    for t in range(n):
        buf[q + t] = src[start + t]
    return q + n


@njit(cache=True, nogil=True)
def encode_batch(key, bits, empty, digests, minhash, keys, lengths, chars, n_shingles, times, fine_buf, fine_start, fine_len,
                 ids_buf, ids_off, topics_buf, topics_off, partitions, source_index, offsets, canon_buf, canon_start,
                 anchors, anchor_n, with_text, sketch):
    """Fingerprint records of ``n`` documents: ``(buffer, offsets)``, record i at
    ``buffer[offsets[i]:offsets[i + 1]]``.

    ``keys`` are the low 32 bits of the band keys (main, then lead); document i came from
    source ``source_index[i]``, whose topic is ``topics_buf[topics_off[s]:topics_off[s + 1]]``
    and partition ``partitions[s]``, at ``offsets[i]``; its canonical text is
    ``canon_buf[canon_start[i]:][:lengths[i]]``; its anchor keys ``anchors[i, :anchor_n[i]]``.
    Without ``with_text`` the records leave the texts out (version 5, flag ``F_NO_TEXT``) and
    end with the evidence sketches ``sketch[i]`` (``SKETCH_BYTES`` uint8) instead.
    """
    n = empty.shape[0]
    k = minhash.shape[1]
    bands = keys.shape[1]
    fixed = HEAD + 1 + 16 + 9 * _VARINT_MAX + k * bits // 8 + 4 * bands  # every varint at its longest
    bound = 0
    for i in range(n):
        s = source_index[i]
        bound += fixed + (topics_off[s + 1] - topics_off[s]) + (ids_off[i + 1] - ids_off[i]) + fine_len[i] + _VARINT_MAX + 4 * anchor_n[i]
        bound += lengths[i] if with_text else SKETCH_BYTES
    buf = np.empty(bound, dtype=np.uint8)
    out_off = np.zeros(n + 1, dtype=np.int64)
    q = 0
    for i in range(n):
        buf[q] = CODEC_VERSION if with_text else TEXT_FREE_VERSION
        buf[q + 1] = KIND_FINGERPRINT
        _put_uint(buf, q + 2, key, 4)
        q += HEAD
        s = source_index[i]
        q = _put_varint(buf, q, topics_off[s + 1] - topics_off[s])
        q = _put_bytes(buf, q, topics_buf, topics_off[s], topics_off[s + 1] - topics_off[s])
        q = _put_varint(buf, q, partitions[s])
        q = _put_signed(buf, q, offsets[i])
        buf[q] = (F_EMPTY if empty[i] else 0) | (0 if with_text else F_NO_TEXT)
        _put_uint(buf, q + 1, digests[i, 0], 8)
        _put_uint(buf, q + 9, digests[i, 1], 8)
        q += 17
        q = _put_varint(buf, q, ids_off[i + 1] - ids_off[i])
        q = _put_bytes(buf, q, ids_buf, ids_off[i], ids_off[i + 1] - ids_off[i])
        q = _put_signed(buf, q, times[i])
        q = _put_varint(buf, q, lengths[i])
        q = _put_varint(buf, q, lengths[i] - chars[i])
        q = _put_varint(buf, q, n_shingles[i])
        q = _put_varint(buf, q, fine_len[i])
        q = _put_varint(buf, q, anchor_n[i])
        for a in range(anchor_n[i]):
            _put_uint(buf, q, anchors[i, a], 4)
            q += 4
        if not empty[i]:
            q = _pack_minhash(buf, q, minhash[i], bits)
            for b in range(bands):
                _put_uint(buf, q, keys[i, b], 4)
                q += 4
        q = _put_bytes(buf, q, fine_buf, fine_start[i], fine_len[i])
        if with_text:
            q = _put_bytes(buf, q, canon_buf, canon_start[i], lengths[i])
        else:
            q = _put_bytes(buf, q, sketch[i], 0, SKETCH_BYTES)
        out_off[i + 1] = q
    return buf[:q], out_off


@njit(cache=True, inline="always")
def _varint(buf, pos, end):
    """LEB128 inside ``buf[pos:end]``: (value, next position), next position -1 when it runs
    past ``end`` or over 10 bytes."""
    v = np.uint64(0)
    shift = 0
    while pos < end and shift < 64:
        c = buf[pos]
        pos += 1
        v |= np.uint64(c & 0x7F) << np.uint64(shift)
        if c < 0x80:
            return v, pos
        shift += 7
    return v, np.int64(-1)


@njit(cache=True, inline="always")
def _signed(buf, pos, end):
    u, pos = _varint(buf, pos, end)
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1)), pos


@njit(cache=True, inline="always")
def _topic_id(buf, start, length, t_start, t_len, n_topics):
    """The id of the topic at ``buf[start:][:length]`` among the ``n_topics`` seen so far
    (spans in ``t_start``/``t_len``); -1 for a new one. A batch names one or a few topics,
    and the last one seen is tried first."""
    for m in range(n_topics - 1, -1, -1):
        if t_len[m] != length:
            continue
        same = True
        for t in range(length):
            if buf[t_start[m] + t] != buf[start + t]:
                same = False
                break
        if same:
            return m
    return -1


@njit(cache=True, nogil=True)
def decode_sources(buf, off, key, kind, topic_id, t_start, t_len, partition, offset, rest, info):
    """Pass 1 over records ``buf[off[i]:off[i + 1]]``: head, key and source position of each.

    Writes per record its ``kind``, ``topic_id`` (into the distinct topics ``t_start``/``t_len``),
    ``partition``, ``offset`` and where its kind's fields start (``rest``). Returns the status
    (``OK`` or the first problem) with ``info = [record index, distinct topics, its key]``.
    """
    n_topics = 0
    for i in range(off.shape[0] - 1):
        p = off[i]
        end = off[i + 1]
        info[0] = i
        if end - p < HEAD:
            return TRUNCATED
        if buf[p] != CODEC_VERSION and buf[p] != TEXT_FREE_VERSION:
            return BAD_VERSION
        kind[i] = buf[p + 1]
        if kind[i] > KIND_PARAMS:
            return BAD_KIND
        rest[i] = p + HEAD
        topic_id[i] = -1
        if kind[i] == KIND_PARAMS:
            continue  # the wrapper reads it
        info[2] = np.int64(_get_uint(buf, p + 2, 4))
        if info[2] != key:
            return BAD_KEY
        tl, q = _varint(buf, p + HEAD, end)
        if q < 0 or tl > np.uint64(end - q):
            return TRUNCATED
        m = _topic_id(buf, q, np.int64(tl), t_start, t_len, n_topics)
        if m < 0:
            m = n_topics
            t_start[m] = q
            t_len[m] = np.int64(tl)
            n_topics += 1
        topic_id[i] = m
        part, q = _varint(buf, q + np.int64(tl), end)
        if q < 0:
            return TRUNCATED
        if part >= np.uint64(2**31):
            return BAD_FIELD
        partition[i] = np.int64(part)
        o, q = _signed(buf, q, end)
        if q < 0:
            return TRUNCATED
        offset[i] = o
        rest[i] = q
    info[1] = n_topics
    return OK


@njit(cache=True)
def _get_anchors(buf, q, end, out, out_n, j):
    """The anchor keys at ``q`` (a count, then 4 bytes each) into ``out``, their count into
    ``out_n[j]``; returns ``(status, the position after them)``."""
    n, q = _varint(buf, q, end)
    if q < 0:
        return TRUNCATED, q
    if n > np.uint64(MAX_ANCHORS):
        return BAD_FIELD, q
    if end - q < 4 * np.int64(n):
        return TRUNCATED, q
    out_n[j] = np.int64(n)
    for a in range(np.int64(n)):
        out[a] = np.uint32(_get_uint(buf, q, 4))
        q += 4
    return OK, q


@njit(cache=True, inline="always")
def _get_sketch(buf, q, bits, empty, minhash, band_keys, lead_keys):
    """One record's MinHash slots and band keys (main, then the rest) at ``q`` into its rows;
    an empty text's are the placeholders. Returns the position after them."""
    if empty:
        minhash[:] = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
        band_keys[:] = 0
        lead_keys[:] = 0
        return q
    _unpack_minhash(buf, q, bits, minhash)
    q += minhash.shape[0] * bits // 8
    main = band_keys.shape[0]
    for b in range(main + lead_keys.shape[0]):
        v = _get_uint(buf, q + 4 * b, 4)
        if b < main:
            band_keys[b] = v
        else:
            lead_keys[b - main] = v
    return q + 4 * (main + lead_keys.shape[0])


@njit(cache=True, nogil=True)
def decode_prints(buf, off, kind, rest, bits, max_id, max_sig, doc, docs):
    """Pass 2: the fingerprint records' (``kind`` 0) fields, in order, into the arrays ``docs`` (see
    ``pipeline.fingerprints``), their record indices into ``doc``; returns (status, record index, documents)."""
    (empty, digests, times, lengths, chars, n_shingles, minhash, band_keys, lead_keys, sig_start, sig_len, ids_buf, ids_off,
     anchors, anchor_n, no_text) = docs
    k, main = minhash.shape[1], band_keys.shape[1]
    bands = main + lead_keys.shape[1]
    packed = k * bits // 8 + 4 * bands
    j = 0
    for i in range(kind.shape[0]):
        if kind[i] != KIND_FINGERPRINT:
            continue
        end = off[i + 1]
        q = rest[i]
        if end - q < 17:
            return TRUNCATED, i, j
        flags = buf[q]
        # version 5 is the text-free record: the flag and the version go together
        if flags > F_EMPTY | F_NO_TEXT or ((flags & F_NO_TEXT) != 0) != (buf[off[i]] == TEXT_FREE_VERSION):
            return BAD_FIELD, i, j
        empty[j] = (flags & F_EMPTY) != 0
        no_text[j] = (flags & F_NO_TEXT) != 0
        digests[j, 0] = _get_uint(buf, q + 1, 8)
        digests[j, 1] = _get_uint(buf, q + 9, 8)
        id_len, q = _varint(buf, q + 17, end)
        if q < 0 or id_len > np.uint64(end - q):
            return TRUNCATED, i, j
        if id_len > np.uint64(max_id):
            return BAD_FIELD, i, j
        ids_off[j + 1] = ids_off[j] + np.int64(id_len)
        _put_bytes(ids_buf, ids_off[j], buf, q, np.int64(id_len))
        t, q = _signed(buf, q + np.int64(id_len), end)
        if q < 0:
            return TRUNCATED, i, j
        times[j] = t
        length, q = _varint(buf, q, end)
        if q < 0:
            return TRUNCATED, i, j
        extra, q = _varint(buf, q, end)
        if q < 0:
            return TRUNCATED, i, j
        n_sh, q = _varint(buf, q, end)
        if q < 0:
            return TRUNCATED, i, j
        n_sig, q = _varint(buf, q, end)
        if q < 0:
            return TRUNCATED, i, j
        status, q = _get_anchors(buf, q, end, anchors[j], anchor_n, j)
        if status != OK:
            return status, i, j
        # an empty text has no shingles and only it, and UTF-8 has 1 to 4 bytes per character:
        # anything else is a garbled record
        if n_sig > np.uint64(max_sig) or length >= np.uint64(2**62) or (n_sh == 0) != empty[j] \
                or extra > length or length > np.uint64(4) * (length - extra):
            return BAD_FIELD, i, j
        lengths[j] = np.int64(length)
        chars[j] = np.int64(length - extra)
        n_shingles[j] = np.int64(n_sh)
        # the text last, or the evidence sketches in its place
        body = np.int64(n_sig) + (0 if empty[j] else packed) + (SKETCH_BYTES if no_text[j] else np.int64(length))
        if end - q < body:
            return TRUNCATED, i, j
        if end - q > body:
            return TRAILING, i, j
        q = _get_sketch(buf, q, bits, empty[j], minhash[j], band_keys[j], lead_keys[j])
        sig_start[j] = q
        sig_len[j] = np.int64(n_sig)
        doc[j] = i
        j += 1
    return OK, -1, j
