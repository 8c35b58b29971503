"""The engine's stored records, written and read in bulk (layout: ``streamdedup/engine/record.py``).

``encode_batch`` writes the records of a decided micro-batch into one buffer (a Python
encoder in ``tests/unit/test_engine_record.py`` is its reference); ``restore_batch`` parses stored records and
re-inserts them into the index and the verification arena on start-up, so that a restart with
millions of documents costs seconds, not a Python object per field.
"""

from __future__ import annotations

import numpy as np
from numba import int64, njit, uint8, uint64, void

from streamdedup._kernels import arena
# restore_batch's cached code holds anchor_restore compiled in (Numba checks only this file's
# contents). Changed with: anchor table entries that name their writer's seq (modulo 2**32).
from streamdedup._kernels.anchor_index import anchor_restore
from streamdedup._kernels.anchors import MAX_ANCHORS
from streamdedup._kernels.index import restore

#: record flag (beside ``decide.F_*``): the record does not keep the canonical text
#: (``state.keep_text: false``)
F_NO_TEXT = 4
#: record flag: the duplicate revises the document it matched (``engine.revisions``); the
#: record holds what changed after the matched id
F_REVISION = 8
#: record flag: a record without its text ends with the text's evidence sketches
#: (``_kernels.sketches``) instead
F_SKETCH = 16

ENGINE_VERSION = 7
#: the oldest version read: 5 and 6 are version 7 without revisions (5) and without anchor keys
#: (a restored version-6 document has none: only documents indexed since are found by them)
ENGINE_VERSION_READ = 5
#: float32 estimates a duplicate's record holds (``_kernels.decide.N_NUMBERS``)
N_NUMBERS = 8
#: version, relation, flags, bits, digest; then variable-length integers
HEAD = 20
#: the longest LEB128 encoding of one 64-bit value
_VARINT_MAX = 10


# The writers have one signature each (compiled at import): called with int32, int64 and uint64
# values they compiled once per type, ~0.4 s of every cold start. Every value they
# write is non-negative, so its conversion to uint64 keeps it.
@njit(void(uint8[::1], int64, uint64, int64), cache=True)
def _put_uint(buf, pos, value, nbytes):
    v = np.uint64(value)
    for k in range(nbytes):
        buf[pos + k] = np.uint8((v >> np.uint64(8 * k)) & np.uint64(0xFF))


@njit(cache=True)
def _get_uint(buf, pos, nbytes):
    v = np.uint64(0)
    for k in range(nbytes):
        v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
    return v


@njit(int64(uint8[::1], int64, uint64), cache=True)
def _put_varint(buf, pos, value):
    """LEB128 of an unsigned value; returns the position after it."""
    v = np.uint64(value)
    while v >= np.uint64(0x80):
        buf[pos] = np.uint8((v & np.uint64(0x7F)) | np.uint64(0x80))
        v >>= np.uint64(7)
        pos += 1
    buf[pos] = np.uint8(v)
    return pos + 1


@njit(int64(uint8[::1], int64, int64), cache=True)
def _put_signed(buf, pos, value):
    """Zigzag then LEB128 (-1 is one byte)."""
    v = np.int64(value)
    return _put_varint(buf, pos, np.uint64((v << np.int64(1)) ^ (v >> np.int64(63))))


@njit(cache=True)
def _get_varint(buf, pos):
    v = np.uint64(0)
    shift = np.uint64(0)
    while True:
        c = buf[pos]
        pos += 1
        v |= np.uint64(c & 0x7F) << shift
        if c < 0x80:
            return v, pos
        shift += np.uint64(7)


@njit(cache=True)
def _get_signed(buf, pos):
    u, pos = _get_varint(buf, pos)
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1)), pos


@njit(cache=True)
def _put_f32(buf, pos, value, f32, u32):
    f32[0] = value
    _put_uint(buf, pos, u32[0], 4)


@njit(cache=True)
def _pack_minhash(buf, pos, row, bits):
    """b-bit packing, the bytes of ``estimate.pack_bbit``."""
    k = row.shape[0]
    if bits >= 8:
        nbytes = bits // 8
        mask = np.uint64(0xFFFFFFFF) if bits == 32 else np.uint64((1 << bits) - 1)
        for s in range(k):
            _put_uint(buf, pos + s * nbytes, np.uint64(row[s]) & mask, nbytes)
        return pos + k * nbytes
    per_byte = 8 // bits
    mask = np.uint32((1 << bits) - 1)
    for j in range(k // per_byte):
        byte = np.uint32(0)
        for t in range(per_byte):
            byte |= (np.uint32(row[j * per_byte + t]) & mask) << np.uint32(t * bits)
        buf[pos + j] = np.uint8(byte)
    return pos + k // per_byte


# One kernel of ~95 lines on purpose: it writes engine_record.py's layout field by field in
# that order, so the two read side by side; pieces of it would each take most of its 25 arrays.
@njit(cache=True, nogil=True)
def encode_batch(
    seq_out, root_out, match_out, rel_out, num_out, flag_out, hot_out,
    ids_buf, ids_off, roots_buf, roots_off, matched_buf, matched_off, changed_buf, changed_off,
    digests, lengths, chars, n_shingles, times, partitions, offsets, minhash, bits, keys, fine_buf, fine_start, fine_len,
    canon_buf, canon_start, keep_text, anchors, anchor_n, anchor_hot, sketch,
):
    """Records of every indexed document of a batch (``seq_out >= 0``): ``(buffer, offsets)``.

    Document i's record is ``buffer[offsets[i]:offsets[i + 1]]`` (empty for documents that were
    not indexed). ``roots_*`` and ``matched_*`` hold the root id and the matched id of each
    duplicate as UTF-8 (empty for roots), ``changed_*`` what a revision changed (written for
    records flagged ``F_REVISION``); document i's canonical text is
    ``canon_buf[canon_start[i]:][:lengths[i]]``; without ``keep_text`` no record holds it (flag
    ``F_NO_TEXT``) and, when ``sketch`` has a row per document, each ends with its evidence
    sketches ``sketch[i]`` instead (flag ``F_SKETCH``). ``anchors[i, :anchor_n[i]]`` are its
    anchor keys, ``anchor_hot`` their hot counts. Layout: ``streamdedup/engine/record.py``.
    """
    sketched = not keep_text and sketch.shape[0] == seq_out.shape[0]
    text_flag = np.uint8(0) if keep_text else np.uint8(F_NO_TEXT | (F_SKETCH if sketched else 0))
    n = seq_out.shape[0]
    bands = keys.shape[1]
    k = minhash.shape[1]
    fixed = HEAD + k * bits // 8 + 4 * bands
    bound = 0
    for i in range(n):
        # every varint at its longest, every band a hot entry: written compactly below
        bound += (fixed + 13 * _VARINT_MAX + 20 + (ids_off[i + 1] - ids_off[i]) + (roots_off[i + 1] - roots_off[i])
                  + (matched_off[i + 1] - matched_off[i]) + (changed_off[i + 1] - changed_off[i]) + (_VARINT_MAX + 1) * bands + fine_len[i] + 4 * N_NUMBERS
                  + lengths[i] + sketch.shape[1] + 2 * _VARINT_MAX + (4 + _VARINT_MAX + 1) * anchor_n[i])
    buf = np.empty(bound, dtype=np.uint8)
    out_off = np.empty(n + 1, dtype=np.int64)  # every entry written below (np.zeros: a compile of its own)
    out_off[0] = 0
    f32 = np.empty(1, dtype=np.float32)
    u32 = f32.view(np.uint32)
    q = 0
    for i in range(n):
        if seq_out[i] < 0:
            out_off[i + 1] = q
            continue
        n_hot = 0
        for b in range(bands):
            if hot_out[i, b] != 1:
                n_hot += 1
        id_len = ids_off[i + 1] - ids_off[i]
        dup = rel_out[i] != 0
        buf[q] = ENGINE_VERSION
        buf[q + 1] = rel_out[i]
        buf[q + 2] = flag_out[i] | text_flag
        buf[q + 3] = bits
        _put_uint(buf, q + 4, digests[i, 0], 8)
        _put_uint(buf, q + 12, digests[i, 1], 8)
        q += HEAD
        root_len = 0
        matched_len = 0
        if dup:
            root_len = roots_off[i + 1] - roots_off[i]
            matched_len = matched_off[i + 1] - matched_off[i]
        # the ids first: resolving a duplicate's ids reads only this far
        q = _put_varint(buf, q, id_len)
        q = _put_varint(buf, q, root_len)
        q = _put_varint(buf, q, matched_len)
        for t in range(id_len):
            buf[q + t] = ids_buf[ids_off[i] + t]
        q += id_len
        for t in range(root_len):
            buf[q + t] = roots_buf[roots_off[i] + t]
        q += root_len
        for t in range(matched_len):
            buf[q + t] = matched_buf[matched_off[i] + t]
        q += matched_len
        if flag_out[i] & F_REVISION:
            changed_len = changed_off[i + 1] - changed_off[i]
            q = _put_varint(buf, q, changed_len)
            for t in range(changed_len):
                buf[q + t] = changed_buf[changed_off[i] + t]
            q += changed_len
        q = _put_varint(buf, q, n_hot)
        q = _put_varint(buf, q, lengths[i])
        q = _put_varint(buf, q, lengths[i] - chars[i])  # 0 for ASCII text: one byte
        q = _put_varint(buf, q, n_shingles[i])
        q = _put_signed(buf, q, times[i])
        q = _put_signed(buf, q, partitions[i])
        q = _put_signed(buf, q, offsets[i])
        q = _put_varint(buf, q, fine_len[i])
        if dup:
            q = _put_varint(buf, q, root_out[i])
            q = _put_varint(buf, q, match_out[i])
            for c in range(N_NUMBERS):
                _put_f32(buf, q, num_out[i, c], f32, u32)
                q += 4
        for b in range(bands):
            if hot_out[i, b] != 1:
                q = _put_varint(buf, q, b)
                buf[q] = hot_out[i, b]
                q += 1
        q = _pack_minhash(buf, q, minhash[i], bits)
        # the index uses the low 32 bits of each band key
        for b in range(bands):
            _put_uint(buf, q, keys[i, b], 4)
            q += 4
        for t in range(fine_len[i]):
            buf[q + t] = fine_buf[fine_start[i] + t]
        q += fine_len[i]
        q = _put_varint(buf, q, anchor_n[i])
        for j in range(anchor_n[i]):
            _put_uint(buf, q, anchors[i, j], 4)
            q += 4
        n_ahot = 0
        for j in range(anchor_n[i]):
            if anchor_hot[i, j] != 1:
                n_ahot += 1
        q = _put_varint(buf, q, n_ahot)
        for j in range(anchor_n[i]):
            if anchor_hot[i, j] != 1:
                q = _put_varint(buf, q, j)
                buf[q] = anchor_hot[i, j]
                q += 1
        # the canonical text, last: exact evidence reads it (engine_evidence), restore never
        if keep_text:
            for t in range(lengths[i]):
                buf[q + t] = canon_buf[canon_start[i] + t]
            q += lengths[i]
        elif sketched:
            for t in range(sketch.shape[1]):
                buf[q + t] = sketch[i, t]
            q += sketch.shape[1]
        out_off[i + 1] = q
    return buf[:q], out_off


@njit(cache=True)
def _unpack_minhash(buf, pos, bits, out):
    k = out.shape[0]
    if bits >= 8:
        nbytes = bits // 8
        for s in range(k):
            out[s] = _get_uint(buf, pos + s * nbytes, nbytes)
        return
    per_byte = 8 // bits
    mask = (1 << bits) - 1
    for j in range(k // per_byte):
        byte = buf[pos + j]
        for t in range(per_byte):
            out[j * per_byte + t] = (byte >> (t * bits)) & mask


@njit(cache=True, nogil=True)
def restore_batch(buf, off, seqs, bits, ix, ar):
    """Re-insert stored records (in seq order) into the index ``ix`` and the arena ``ar``.

    Returns -1, or the position of the first record that is not a version-5 to -7 engine
    record with this MinHash width (the caller refuses to start).
    """
    # the fields as locals: restore and put take arrays (see index.IndexArrays)
    cells, digest_cells, slot_seq, slot_time = ix.cells, ix.digest_cells, ix.slot_seq, ix.slot_time
    slot_root, slot_keys, slot_hot, slot_digest = ix.slot_root, ix.slot_keys, ix.slot_hot, ix.slot_digest
    an_table = ix.anchor_table
    a_minhash, a_n_sh, a_len, a_chars, a_digest_hi = ar.minhash, ar.n_sh, ar.length, ar.chars, ar.digest_hi
    a_sig_start, a_sig_len, a_buf, a_state = ar.sig_start, ar.sig_len, ar.buf, ar.state
    bands, n_cells, capacity = slot_keys.shape[1], digest_cells.shape[0], slot_seq.shape[0]
    k = a_minhash.shape[1]
    keys = np.empty(bands, dtype=np.uint32)
    hots = np.empty(bands, dtype=np.uint8)
    row = np.empty(k, dtype=np.uint32)
    akeys = np.empty(MAX_ANCHORS, dtype=np.uint32)
    ahots = np.empty(MAX_ANCHORS, dtype=np.uint8)
    for i in range(seqs.shape[0]):
        p = off[i]
        if off[i + 1] - p < HEAD or buf[p] < ENGINE_VERSION_READ or buf[p] > ENGINE_VERSION or buf[p + 3] != bits:
            return i
        seq = seqs[i]
        dup = buf[p + 1] != 0
        digest_lo = _get_uint(buf, p + 4, 8)
        digest_hi = _get_uint(buf, p + 12, 8)
        q = p + HEAD
        id_len, q = _get_varint(buf, q)
        root_len, q = _get_varint(buf, q)
        matched_len, q = _get_varint(buf, q)
        q += np.int64(id_len + root_len + matched_len)
        if buf[p + 2] & F_REVISION:
            changed_len, q = _get_varint(buf, q)
            q += np.int64(changed_len)
        n_hot, q = _get_varint(buf, q)
        length, q = _get_varint(buf, q)
        extra, q = _get_varint(buf, q)
        n_sh, q = _get_varint(buf, q)
        event_time, q = _get_signed(buf, q)
        _, q = _get_signed(buf, q)  # partition
        _, q = _get_signed(buf, q)  # offset
        sig_len, q = _get_varint(buf, q)
        root = seq
        if dup:
            r, q = _get_varint(buf, q)
            root = np.int64(r)
            _, q = _get_varint(buf, q)  # matched seq
            q += 4 * N_NUMBERS
        for b in range(bands):
            hots[b] = 1
        for t in range(np.int64(n_hot)):
            band, q = _get_varint(buf, q)
            hots[band] = buf[q]
            q += 1
        _unpack_minhash(buf, q, bits, row)
        q += k * bits // 8
        for b in range(bands):
            keys[b] = np.uint32(_get_uint(buf, q, 4))
            q += 4
        restore(seq, root, event_time, digest_lo, keys, hots, bands, n_cells, capacity,
                cells, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_hot, slot_digest)
        arena.put(seq % capacity, row, bits, n_sh, length, length - extra, digest_hi, buf, q, np.int64(sig_len),
                  a_minhash, a_n_sh, a_len, a_chars, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state)
        if buf[p] == ENGINE_VERSION:
            q += np.int64(sig_len)
            n_anchor, q = _get_varint(buf, q)
            for j in range(np.int64(n_anchor)):
                akeys[j] = np.uint32(_get_uint(buf, q, 4))
                ahots[j] = 1
                q += 4
            n_ahot, q = _get_varint(buf, q)
            for t in range(np.int64(n_ahot)):
                j, q = _get_varint(buf, q)
                ahots[j] = buf[q]
                q += 1
            anchor_restore(seq, akeys, ahots, np.int64(n_anchor), an_table)
    return -1
