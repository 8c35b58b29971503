"""The engine's stored records, written and read in bulk (layout: ``streamdedup/engine_record.py``).

``encode_batch`` writes the records of a decided micro-batch into one buffer (a Python
encoder in ``tests/unit/test_engine_record.py`` is its reference); ``restore_batch`` parses stored records and
re-inserts them into the index and the verification arena on start-up, so that a restart with
millions of documents costs seconds, not a Python object per field.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import arena
from .index import restore

ENGINE_VERSION = 3
#: bytes before the ids: every record, and the extra part of a duplicate's
HEAD = 54
DUP_HEAD = 40
NO_VALUE = np.float32(np.nan)


@njit(cache=True, inline="always")
def _put_uint(buf, pos, value, nbytes):
    v = np.uint64(value)
    for k in range(nbytes):
        buf[pos + k] = np.uint8((v >> np.uint64(8 * k)) & np.uint64(0xFF))


@njit(cache=True, inline="always")
def _get_uint(buf, pos, nbytes):
    v = np.uint64(0)
    for k in range(nbytes):
        v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
    return v


@njit(cache=True, inline="always")
def _get_int64(buf, pos):
    return np.int64(_get_uint(buf, pos, 8))


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _size(i, bands, fixed, hot_out, rel_out, ids_off, roots_off, matched_off, fine_len):
    n_hot = 0
    for b in range(bands):
        if hot_out[i, b] != 1:
            n_hot += 1
    size = fixed + (ids_off[i + 1] - ids_off[i]) + 3 * n_hot + fine_len[i]
    if rel_out[i] != 0:
        size += DUP_HEAD + (roots_off[i + 1] - roots_off[i]) + (matched_off[i + 1] - matched_off[i])
    return size, n_hot


@njit(cache=True, nogil=True)
def encode_batch(
    seq_out, root_out, match_out, rel_out, num_out, flag_out, hot_out,
    ids_buf, ids_off, roots_buf, roots_off, matched_buf, matched_off,
    digests, lengths, n_shingles, times, partitions, offsets, minhash, bits, keys, fine_buf, fine_start, fine_len,
):
    """Records of every indexed document of a batch (``seq_out >= 0``): ``(buffer, offsets)``.

    Document i's record is ``buffer[offsets[i]:offsets[i + 1]]`` (empty for documents that were
    not indexed). ``roots_*`` and ``matched_*`` hold the root id and the matched id of each
    duplicate as UTF-8 (empty for roots). Layout: ``streamdedup/engine_record.py``.
    """
    n = seq_out.shape[0]
    bands = keys.shape[1]
    k = minhash.shape[1]
    fixed = HEAD + k * bits // 8 + 3 * bands
    out_off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        size = 0
        if seq_out[i] >= 0:
            size, _ = _size(i, bands, fixed, hot_out, rel_out, ids_off, roots_off, matched_off, fine_len)
        out_off[i + 1] = out_off[i] + size
    buf = np.zeros(out_off[n], dtype=np.uint8)
    f32 = np.empty(1, dtype=np.float32)
    u32 = f32.view(np.uint32)
    for i in range(n):
        if seq_out[i] < 0:
            continue
        p = out_off[i]
        _, n_hot = _size(i, bands, fixed, hot_out, rel_out, ids_off, roots_off, matched_off, fine_len)
        id_len = ids_off[i + 1] - ids_off[i]
        buf[p] = ENGINE_VERSION
        buf[p + 1] = rel_out[i]
        buf[p + 2] = flag_out[i]
        buf[p + 3] = bits
        _put_uint(buf, p + 4, id_len, 2)
        _put_uint(buf, p + 6, n_hot, 2)
        _put_uint(buf, p + 8, lengths[i], 4)
        _put_uint(buf, p + 12, n_shingles[i], 4)
        _put_uint(buf, p + 16, times[i], 8)
        _put_uint(buf, p + 24, partitions[i], 4)
        _put_uint(buf, p + 28, offsets[i], 8)
        _put_uint(buf, p + 36, digests[i, 0], 8)
        _put_uint(buf, p + 44, digests[i, 1], 8)
        _put_uint(buf, p + 52, fine_len[i], 2)
        q = p + HEAD
        root_len = 0
        matched_len = 0
        if rel_out[i] != 0:
            root_len = roots_off[i + 1] - roots_off[i]
            matched_len = matched_off[i + 1] - matched_off[i]
            _put_uint(buf, q, root_out[i], 8)
            _put_uint(buf, q + 8, match_out[i], 8)
            for c in range(5):
                _put_f32(buf, q + 16 + 4 * c, num_out[i, c], f32, u32)
            _put_uint(buf, q + 36, root_len, 2)
            _put_uint(buf, q + 38, matched_len, 2)
            q += DUP_HEAD
        for t in range(id_len):
            buf[q + t] = ids_buf[ids_off[i] + t]
        q += id_len
        for t in range(root_len):
            buf[q + t] = roots_buf[roots_off[i] + t]
        q += root_len
        for t in range(matched_len):
            buf[q + t] = matched_buf[matched_off[i] + t]
        q += matched_len
        for b in range(bands):
            if hot_out[i, b] != 1:
                _put_uint(buf, q, b, 2)
                buf[q + 2] = hot_out[i, b]
                q += 3
        q = _pack_minhash(buf, q, minhash[i], bits)
        # the index uses bits 8-31 of each band key (the low half of the 64-bit key)
        for b in range(bands):
            _put_uint(buf, q, np.uint64(keys[i, b]) >> np.uint64(8), 3)
            q += 3
        for t in range(fine_len[i]):
            buf[q + t] = fine_buf[fine_start[i] + t]
    return buf, out_off


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
def restore_batch(
    buf, off, seqs, bits, bands, n_cells, capacity,
    cells, digest_cells, slot_seq, slot_time, slot_root, slot_meta, slot_digest,
    a_minhash, a_n_sh, a_len, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state,
):
    """Re-insert stored records (in seq order) into the index and the arena.

    Returns -1, or the position of the first record that is not a version-3 engine record
    with this MinHash width (the caller refuses to start).
    """
    k = a_minhash.shape[1]
    keys = np.empty(bands, dtype=np.uint32)
    hots = np.empty(bands, dtype=np.uint8)
    row = np.empty(k, dtype=np.uint32)
    for i in range(seqs.shape[0]):
        p = off[i]
        if off[i + 1] - p < HEAD or buf[p] != ENGINE_VERSION or buf[p + 3] != bits:
            return i
        seq = seqs[i]
        duplicate = buf[p + 1] != 0
        n_hot = _get_uint(buf, p + 6, 2)
        q = p + HEAD + _get_uint(buf, p + 4, 2)
        root = seq
        if duplicate:
            root = _get_int64(buf, p + HEAD)
            q += DUP_HEAD + _get_uint(buf, p + HEAD + 36, 2) + _get_uint(buf, p + HEAD + 38, 2)
        for b in range(bands):
            hots[b] = 1
        for t in range(n_hot):
            hots[_get_uint(buf, q, 2)] = buf[q + 2]
            q += 3
        _unpack_minhash(buf, q, bits, row)
        q += k * bits // 8
        for b in range(bands):
            keys[b] = np.uint32(_get_uint(buf, q, 3) << np.uint64(8))
            q += 3
        restore(seq, root, _get_int64(buf, p + 16), _get_uint(buf, p + 36, 8), keys, hots, bands, n_cells, capacity,
                cells, digest_cells, slot_seq, slot_time, slot_root, slot_meta, slot_digest)
        arena.put(seq % capacity, row, bits, _get_uint(buf, p + 12, 4), _get_uint(buf, p + 8, 4), _get_uint(buf, p + 44, 8),
                  buf, q, _get_uint(buf, p + 52, 2),
                  a_minhash, a_n_sh, a_len, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state)
    return -1
