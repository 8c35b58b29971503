"""The engine's stored records, written and read in bulk (layout: ``streamdedup/engine_record.py``).

``encode_batch`` writes the records of a decided micro-batch into one buffer (the Python
encoder in ``engine_record`` is its reference); ``restore_batch`` parses stored records and
re-inserts them into the index and the verification arena on start-up, so that a restart with
millions of documents costs seconds, not a Python object per field.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import arena
from .index import restore

ENGINE_VERSION = 2
FP_VERSION = 1
HEAD = 48
FP_HEAD = 56
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


@njit(cache=True, nogil=True)
def encode_batch(
    seq_out, root_out, match_out, rel_out, num_out, flag_out, hot_out,
    ids_buf, ids_off, roots_buf, roots_off, matched_buf, matched_off,
    digests, lengths, n_shingles, times, partitions, offsets, minhash, bits, keys, main_bands, params_key,
    fine_buf, fine_start, fine_len, coarse_buf, coarse_start, coarse_len,
):
    """Records of every indexed document of a batch (``seq_out >= 0``): ``(buffer, offsets)``.

    Document i's record is ``buffer[offsets[i]:offsets[i + 1]]`` (empty for documents that were
    not indexed). ``roots_*`` and ``matched_*`` hold the root id and the matched id of each
    duplicate as UTF-8 (empty for roots).
    """
    n = seq_out.shape[0]
    bands = keys.shape[1]
    k = minhash.shape[1]
    fixed = HEAD + FP_HEAD + k * bits // 8 + 4 * bands + 4
    out_off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        size = 0
        if seq_out[i] >= 0:
            n_hot = 0
            for b in range(bands):
                if hot_out[i, b] != 1:
                    n_hot += 1
            size = (fixed + (ids_off[i + 1] - ids_off[i]) + (roots_off[i + 1] - roots_off[i])
                    + (matched_off[i + 1] - matched_off[i]) + 3 * n_hot + fine_len[i] + coarse_len[i])
        out_off[i + 1] = out_off[i] + size
    buf = np.zeros(out_off[n], dtype=np.uint8)
    f32 = np.empty(1, dtype=np.float32)
    u32 = f32.view(np.uint32)
    for i in range(n):
        if seq_out[i] < 0:
            continue
        p = out_off[i]
        n_hot = 0
        for b in range(bands):
            if hot_out[i, b] != 1:
                n_hot += 1
        id_len = ids_off[i + 1] - ids_off[i]
        root_len = roots_off[i + 1] - roots_off[i]
        matched_len = matched_off[i + 1] - matched_off[i]
        buf[p] = ENGINE_VERSION
        buf[p + 1] = rel_out[i]
        buf[p + 2] = flag_out[i]
        _put_uint(buf, p + 44, n_hot, 2)
        _put_uint(buf, p + 46, matched_len, 2)
        _put_uint(buf, p + 4, id_len, 2)
        _put_uint(buf, p + 6, root_len, 2)
        _put_uint(buf, p + 8, root_out[i], 8)
        _put_uint(buf, p + 16, match_out[i], 8)
        for c in range(5):
            _put_f32(buf, p + 24 + 4 * c, num_out[i, c], f32, u32)
        q = p + HEAD
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
        # the fingerprint record (record.py, version 1)
        buf[q] = FP_VERSION
        buf[q + 1] = 0
        buf[q + 2] = bits
        buf[q + 3] = main_bands
        buf[q + 4] = bands - main_bands
        _put_uint(buf, q + 8, params_key, 4)
        _put_uint(buf, q + 12, digests[i, 0], 8)
        _put_uint(buf, q + 20, digests[i, 1], 8)
        _put_uint(buf, q + 28, lengths[i], 4)
        _put_uint(buf, q + 32, n_shingles[i], 4)
        _put_uint(buf, q + 36, times[i], 8)
        _put_uint(buf, q + 44, partitions[i], 4)
        _put_uint(buf, q + 48, offsets[i], 8)
        q = _pack_minhash(buf, q + FP_HEAD, minhash[i], bits)
        for b in range(bands):
            _put_uint(buf, q, keys[i, b], 4)
            q += 4
        _put_uint(buf, q, fine_len[i], 2)
        q += 2
        for t in range(fine_len[i]):
            buf[q + t] = fine_buf[fine_start[i] + t]
        q += fine_len[i]
        _put_uint(buf, q, coarse_len[i], 2)
        q += 2
        for t in range(coarse_len[i]):
            buf[q + t] = coarse_buf[coarse_start[i] + t]
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
    buf, off, seqs, params_key, bits, bands, n_cells, capacity,
    cells, digest_cells, slot_seq, slot_time, slot_root, slot_meta, slot_digest,
    a_minhash, a_n_sh, a_len, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state,
):
    """Re-insert stored records (in seq order) into the index and the arena.

    Returns -1, or the position of the first record that is not a version-2 engine record of
    this fingerprint configuration (the caller refuses to start).
    """
    k = a_minhash.shape[1]
    keys = np.empty(bands, dtype=np.uint32)
    hots = np.empty(bands, dtype=np.uint8)
    row = np.empty(k, dtype=np.uint32)
    for i in range(seqs.shape[0]):
        p = off[i]
        if off[i + 1] - p < HEAD + FP_HEAD or buf[p] != ENGINE_VERSION:
            return i
        n_hot = _get_uint(buf, p + 44, 2)
        q = p + HEAD + _get_uint(buf, p + 4, 2) + _get_uint(buf, p + 6, 2) + _get_uint(buf, p + 46, 2)
        for b in range(bands):
            hots[b] = 1
        for t in range(n_hot):
            hots[_get_uint(buf, q, 2)] = buf[q + 2]
            q += 3
        if buf[q] != FP_VERSION or _get_uint(buf, q + 8, 4) != params_key:
            return i
        digest_lo = _get_uint(buf, q + 12, 8)
        digest_hi = _get_uint(buf, q + 20, 8)
        length = _get_uint(buf, q + 28, 4)
        n_sh = _get_uint(buf, q + 32, 4)
        event_time = _get_int64(buf, q + 36)
        _unpack_minhash(buf, q + FP_HEAD, bits, row)
        q += FP_HEAD + k * bits // 8
        for b in range(bands):
            keys[b] = _get_uint(buf, q, 4)
            q += 4
        fine_len = _get_uint(buf, q, 2)
        q += 2
        seq = seqs[i]
        restore(seq, _get_int64(buf, p + 8), event_time, digest_lo, keys, hots, bands, n_cells, capacity,
                cells, digest_cells, slot_seq, slot_time, slot_root, slot_meta, slot_digest)
        arena.put(seq % capacity, row, bits, n_sh, length, digest_hi, buf, q, fine_len,
                  a_minhash, a_n_sh, a_len, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state)
    return -1
