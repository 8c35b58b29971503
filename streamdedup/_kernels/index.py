"""The engine's in-memory candidate index (Numba), in front of the durable state store.

Documents live in a ring of ``capacity`` slots (slot = seq mod capacity), so the max-documents
bound evicts the oldest document for free. Per band there is a direct-mapped table of
``n_cells`` cells (a power of two); a cell holds ``slot + 1`` of the *most recent* document
whose band key maps there, and the document's own 32-bit band keys (the low half of each
64-bit key, as stored in records) are kept per slot to check that a cell really holds the same
key. The cell is the top bits of ``key32 * GOLDEN`` (multiplicative hashing). Keeping only the most recent document per key is
enough for deduplication, because a new copy only needs to reach *some* member of its cluster
and every member points to the cluster's first document (the root). It also caps hot buckets
at one entry by construction.

Boilerplate: each cell counts how many distinct clusters have written the same key in a row
(saturating at 255). A band whose cell count reaches the engine's threshold is "hot": text
shared by many stories (a publisher footer) made it, and its matches are not evidence of
duplication.

A slot is valid when its seq lies in ``[seq_lo, next_seq)``, it is not deleted, and its
event time is within the window. Validity is checked on every read, so eviction never has to
touch the cells. Every field is rebuilt exactly by re-inserting the stored records in seq
order (see ``restore``), which is what makes restarts give identical decisions.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint32, uint64

from .hashing import GOLDEN

NO_SLOT = np.int64(-1)


@njit(cache=True, inline="always")
def _cell(b, key32, log2n):
    return (b << log2n) + np.int64((uint64(key32) * GOLDEN) >> uint64(64 - log2n))


@njit(cache=True, inline="always")
def _valid(slot, slot_seq, slot_time, seq_lo, min_time):
    s = slot_seq[slot]
    return s >= seq_lo and slot_time[slot] >= min_time


@njit(cache=True)
def lookup(
    digest_lo, keys, bands, log2n, hot_threshold, seq_lo, min_time,
    cells, hot, digest_cells, slot_seq, slot_time, slot_keys, slot_digest,
    cand_slots, cand_shared, hot_bands,
):
    """Candidates of one document: the exact-digest match first (if any), then band matches.

    Returns ``(n_candidates, exact_slot)``. ``cand_slots``/``cand_shared`` get the distinct
    candidate slots and how many non-hot bands each shares, in first-seen band order;
    ``hot_bands[b]`` is set for bands whose cell is hot.
    """
    mask = uint64((1 << log2n) - 1)
    exact = NO_SLOT
    d = digest_cells[digest_lo & mask]
    if d != 0:
        slot = np.int64(d) - 1
        if _valid(slot, slot_seq, slot_time, seq_lo, min_time) and slot_digest[slot] == digest_lo:
            exact = slot
    n = 0
    for b in range(bands):
        hot_bands[b] = False
        key = keys[b]
        idx = _cell(b, key, log2n)
        c = cells[idx]
        if c == 0:
            continue
        slot = np.int64(c) - 1
        if not _valid(slot, slot_seq, slot_time, seq_lo, min_time):
            continue
        if slot_keys[slot, b] != key:
            continue
        if hot[idx] >= hot_threshold:
            hot_bands[b] = True
        found = False
        for j in range(n):
            if cand_slots[j] == slot:
                found = True
                if not hot_bands[b]:
                    cand_shared[j] += 1
                break
        if not found and n < cand_slots.shape[0]:
            cand_slots[n] = slot
            cand_shared[n] = 0 if hot_bands[b] else 1
            n += 1
    return n, exact


@njit(cache=True, inline="always")
def _fill_slot(slot, seq, root, event_time, digest_lo, mask, digest_cells, slot_seq, slot_time, slot_root, slot_digest):
    """The per-document part of an insertion, shared by insert and restore."""
    digest_cells[digest_lo & mask] = uint32(slot + 1)
    slot_seq[slot] = seq
    slot_time[slot] = event_time
    slot_root[slot] = root
    slot_digest[slot] = digest_lo


@njit(cache=True)
def insert(
    seq, root, event_time, digest_lo, keys, bands, log2n, capacity, seq_lo, min_time,
    cells, hot, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_digest, hot_out,
):
    """Insert one document (already decided: ``root`` is its cluster's first seq).

    Writes the hot count each band's cell ends with to ``hot_out`` (stored in the record so
    that a rebuild can restore it exactly).
    """
    mask = uint64((1 << log2n) - 1)
    slot = seq % capacity
    for b in range(bands):
        key32 = keys[b]
        idx = _cell(b, key32, log2n)
        c = cells[idx]
        count = 1
        if c != 0:
            prev = np.int64(c) - 1
            if prev != slot and _valid(prev, slot_seq, slot_time, seq_lo, min_time) and slot_keys[prev, b] == key32:
                count = np.int64(hot[idx])
                if slot_root[prev] != root and count < 255:
                    count += 1
        hot[idx] = count
        hot_out[b] = count
        cells[idx] = uint32(slot + 1)
        slot_keys[slot, b] = key32
    _fill_slot(slot, seq, root, event_time, digest_lo, mask, digest_cells, slot_seq, slot_time, slot_root, slot_digest)


@njit(cache=True)
def restore(
    seq, root, event_time, digest_lo, keys, hot_counts, bands, log2n, capacity,
    cells, hot, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_digest,
):
    """Re-insert a stored document during a rebuild, with the hot counts it was stored with."""
    mask = uint64((1 << log2n) - 1)
    slot = seq % capacity
    for b in range(bands):
        idx = _cell(b, keys[b], log2n)
        hot[idx] = hot_counts[b]
        cells[idx] = uint32(slot + 1)
        slot_keys[slot, b] = keys[b]
    _fill_slot(slot, seq, root, event_time, digest_lo, mask, digest_cells, slot_seq, slot_time, slot_root, slot_digest)


@njit(cache=True)
def run_until_candidate(
    start, digests_lo, keys, times, empty, bands, log2n, capacity, hot_threshold, window_ms, state,
    cells, hot, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_digest,
    seq_out, root_out, hot_out, cand_slots, cand_shared, hot_bands,
):
    """Decide documents ``start..`` in order while they have no candidate at all.

    Such a document is unique: it is inserted as its own cluster root here, without a trip to
    Python. Returns ``(i, n_candidates, exact_slot)`` for the first document that has
    candidates (the caller verifies it, inserts it and resumes at ``i + 1``), or
    ``(len, 0, -1)`` when the batch is done. ``state`` is ``[next_seq, seq_lo, watermark]``
    and is updated for every document looked at, including the returned one.
    """
    n = keys.shape[0]
    for i in range(start, n):
        if empty[i]:
            seq_out[i] = -1
            continue
        seq = state[0]
        if times[i] > state[2]:
            state[2] = times[i]
        if seq + 1 - capacity > state[1]:
            state[1] = seq + 1 - capacity
        min_time = state[2] - window_ms
        nc, exact = lookup(
            digests_lo[i], keys[i], bands, log2n, hot_threshold, state[1], min_time,
            cells, hot, digest_cells, slot_seq, slot_time, slot_keys, slot_digest,
            cand_slots, cand_shared, hot_bands,
        )
        if nc > 0 or exact >= 0:
            return i, nc, exact
        insert(
            seq, seq, times[i], digests_lo[i], keys[i], bands, log2n, capacity, state[1], min_time,
            cells, hot, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_digest, hot_out[i],
        )
        seq_out[i] = seq
        root_out[i] = seq
        state[0] = seq + 1
    return n, 0, NO_SLOT
