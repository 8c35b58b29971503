"""What verification needs of every indexed document, in memory: the verification arena.

Per slot of the index ring: the MinHash slots at storage width (b-bit, one uint8/16/32 each),
shingle count, canonical length in bytes and in characters, the high half of the digest, and where the document's fine LD
signature sits in a byte ring. Keeping this in memory is what lets the decide loop verify
candidates without leaving Numba (a RocksDB read is 1.3-6 us from Python, a Python comparison
~100 us); the durable copy is the document's record in the store, from which the arena is
rebuilt on start.

Signatures are variable-length, so they live in a ring of bytes addressed by a virtual,
ever-growing cursor (physical position = virtual mod size, computed once per signature; a
signature that crosses the end is copied in two pieces). A signature is never lost:
before each micro-batch the caller reserves room for the batch's signatures, reclaiming the
bytes of documents that left the window and growing the ring when the live ones do not leave
enough. Decisions therefore never depend on the ring's size.

``state`` is ``[cursor, tail_seq]``: the next virtual write position, and the oldest seq whose
bytes may still be live.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

A_CURSOR = 0
A_TAIL = 1


@njit(cache=True, inline="always")
def _copy(dst, src):
    """``dst[:] = src`` (same length, no overlap) as a loop over two views: ~3 s less compile time
    than slice assignment and as fast or faster (see ``_kernels/__init__``, Compile time)."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


class ArenaArrays(NamedTuple):
    """The arena's arrays, as the kernels take them (built by ``Arena.arrays``); one row per index slot."""

    #: uint8/16/32 (capacity, num_perm): the MinHash slots at storage width
    minhash: np.ndarray
    #: int32 (capacity,): shingle count
    n_sh: np.ndarray
    #: int32 (capacity,): canonical length (UTF-8 bytes)
    length: np.ndarray
    #: int32 (capacity,): canonical length (characters; the LD calibration's bytes per character)
    chars: np.ndarray
    #: uint64 (capacity,): the high half of the digest
    digest_hi: np.ndarray
    #: int64 (capacity,): the signature's virtual start in the ring
    sig_start: np.ndarray
    #: int32 (capacity,): the signature's length
    sig_len: np.ndarray
    #: uint8: the signature ring
    buf: np.ndarray
    #: int64 (2,): ``[cursor, tail_seq]`` (see ``A_*``)
    state: np.ndarray


@njit(cache=True)
def put(slot, mh_row, bits, n_sh, length, chars, digest_hi, sig_buf, sig_start, sig_len,
        a_minhash, a_n_sh, a_len, a_chars, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state):
    """Store one document's verification data in ``slot`` (its signature at the cursor)."""
    mask = (1 << bits) - 1 if bits < 32 else 0xFFFFFFFF
    for k in range(mh_row.shape[0]):
        a_minhash[slot, k] = mh_row[k] & mask
    a_n_sh[slot] = n_sh
    a_len[slot] = length
    a_chars[slot] = chars
    a_digest_hi[slot] = digest_hi
    cur = a_state[A_CURSOR]
    size = a_buf.shape[0]
    a_sig_start[slot] = cur
    a_sig_len[slot] = sig_len
    p = cur % size
    first = sig_len if p + sig_len <= size else size - p
    _copy(a_buf[p:p + first], sig_buf[sig_start:sig_start + first])
    _copy(a_buf[:sig_len - first], sig_buf[sig_start + first:sig_start + sig_len])
    a_state[A_CURSOR] = cur + sig_len


@njit(cache=True, inline="always")
def signature(slot, a_sig_start, a_sig_len, a_buf, scratch):
    """The signature of ``slot``: a view of the ring, or a copy in ``scratch`` where it wraps."""
    n = a_sig_len[slot]
    size = a_buf.shape[0]
    p = a_sig_start[slot] % size
    if p + n <= size:
        return a_buf[p:p + n]
    first = size - p
    _copy(scratch[:first], a_buf[p:])
    _copy(scratch[first:n], a_buf[:n - first])
    return scratch[:n]


@njit(cache=True)
def live_bytes(a_state, a_sig_start, slot_seq, slot_time, capacity, seq_lo, min_time, next_seq):
    """Bytes from the oldest live document's signature to the cursor; advances the tail.

    A document is live while it can still be a candidate: its slot still holds it and it is
    inside the window (seq and event time). The window only moves forward, so a document that
    is not live never becomes live again and its bytes can be reused.
    """
    t = a_state[A_TAIL]
    if t < seq_lo:
        t = seq_lo
    while t < next_seq:
        slot = t % capacity
        if slot_seq[slot] == t and slot_time[slot] >= min_time:
            break
        t += 1
    a_state[A_TAIL] = t
    if t >= next_seq:
        return 0
    return a_state[A_CURSOR] - a_sig_start[t % capacity]


@njit(cache=True)
def regrow(old, new, lo, hi):
    """Copy the virtual range ``[lo, hi)`` of ring ``old`` into ring ``new`` (same virtual positions)."""
    so = old.shape[0]
    sn = new.shape[0]
    v = lo
    while v < hi:
        po = v % so
        pn = v % sn
        m = min(hi - v, so - po, sn - pn)  # a piece that wraps in neither ring
        _copy(new[pn:pn + m], old[po:po + m])
        v += m
