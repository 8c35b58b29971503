"""The engine's in-memory candidate index (Numba), in front of the durable state store.

Documents live in a ring of ``capacity`` slots (slot = seq mod capacity), so the max-documents
bound evicts the oldest document for free. Per band there is a direct-mapped table of
``n_cells`` cells; a cell holds ``slot + 1`` of the *most recent* document whose band key maps
there. Keeping only the most recent document per key is enough for deduplication, because a
new copy only needs to reach *some* member of its cluster and every member points to the
cluster's first document (the root). It also caps hot buckets at one entry by construction.

Keys: the index uses the low 32 bits of each 64-bit band key (as stored in records). Per slot
and band, ``slot_keys`` holds them, to check that a cell really holds the same key (a cell
is a function of the key, so every key with equal checked bits lands in the same cell: with
N documents in a band, a new key meets a false match with probability N / 2**bits. 24 bits
gave 12 false candidates per document at 5 M documents, which crowded out true ones; 32
bits give one per ~20 documents). A cell is the multiply-high of a 32-bit hash of the key with
``n_cells``, so a table can have any size.

Boilerplate: the hot count of a (band, key) counts the distinct clusters that wrote the key in
a row (saturating at 255), carried from the cell's previous writer to the next (``slot_hot``). A band whose
count reaches the engine's threshold is "hot": text shared by many stories (a publisher
footer) made it, and its matches are not evidence of duplication.

A slot is valid when its seq lies in ``[seq_lo, next_seq)``, it is not deleted, and its
event time is within the window. Validity is checked on every read, so eviction never has to
touch the cells. The cells are a function of the valid documents in seq order: ``rehash``
(when the tables grow) and ``restore`` (on start, from the stored records) rebuild exactly the
cells that the inserts made, which is what makes restarts give identical decisions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, uint32, uint64

from streamdedup._kernels.hashing import GOLDEN

NO_SLOT = np.int64(-1)


class IndexArrays(NamedTuple):
    """The index's tables, as the batch kernels take them (built by ``CandidateIndex.arrays``).

    Its geometry is the arrays' shapes: ``capacity`` slots (``slot_seq.shape[0]``), ``bands``
    bands (``slot_keys.shape[1]``), ``n_cells`` cells per band (``digest_cells.shape[0]``),
    so a kernel cannot be handed tables and sizes that disagree.

    Only the kernels called once per batch (``decide_batch``, ``restore_batch``, :func:`rehash`)
    take the structs; they unpack them once and hand the arrays to the per-document helpers
    (:func:`lookup`, :func:`insert`, :func:`restore`, ``arena.put``). Helpers that took the
    structs made decide_batch ~4% and restore_batch ~7% slower (medians of seven comparisons,
    both versions in one process, runs interleaved), so their long parameter lists stay.
    """

    #: uint32 (bands * n_cells,): slot + 1 of the latest document per (band, cell), 0 = empty
    cells: np.ndarray
    #: uint32 (n_cells,): slot + 1 of the latest document per exact-digest cell
    digest_cells: np.ndarray
    #: int64 (capacity,): seq of the document in each slot, -1 = none (or deleted)
    slot_seq: np.ndarray
    #: int64 (capacity,): its event time (ms)
    slot_time: np.ndarray
    #: int64 (capacity,): the seq of its cluster's first document
    slot_root: np.ndarray
    #: uint32 (capacity, bands): its band keys (low 32 bits)
    slot_keys: np.ndarray
    #: uint8 (capacity, bands): the hot count of each of its (band, key)
    slot_hot: np.ndarray
    #: uint64 (capacity,): the low half of its digest
    slot_digest: np.ndarray
    #: uint64 (anchor entries,): the anchor table (``_kernels.anchor_index``): per entry a key's
    #: top 24 bits, its hot count and slot + 1 of the latest document that wrote it (0 = empty)
    anchor_table: np.ndarray


class Probe(NamedTuple):
    """What :func:`lookup` found for one document: its ``cand_*``, ``hot_bands`` and ``probe_*``
    arrays (owned by ``CandidateIndex``, reused per document)."""

    #: int64 (max_candidates,): the distinct candidate slots, in first-seen band order
    cand_slots: np.ndarray
    #: int64 (max_candidates,): how many non-hot bands each candidate shares
    cand_shared: np.ndarray
    #: bool (bands,): the band's cell is hot
    hot_bands: np.ndarray
    #: uint32 (bands,): per band, the cell (slot + 1 of its occupant, 0 = empty), for :func:`insert`
    cell: np.ndarray
    #: uint32 (bands,): the occupant's key in that band
    key: np.ndarray
    #: bool (bands,): the occupant is a live document with the same key
    live: np.ndarray


@njit(cache=True, inline="always")
def _cell(b, key32, n_cells):
    h = (uint64(key32) * GOLDEN) >> uint64(32)
    return np.int64(b) * n_cells + np.int64((h * uint64(n_cells)) >> uint64(32))


@njit(cache=True, inline="always")
def _digest_cell(digest_lo, n_cells):
    return np.int64(((digest_lo >> uint64(32)) * uint64(n_cells)) >> uint64(32))


@njit(cache=True, inline="always")
def _valid(slot, slot_seq, slot_time, seq_lo, min_time):
    s = slot_seq[slot]
    return s >= seq_lo and slot_time[slot] >= min_time


@njit(cache=True)
def lookup(
    digest_lo, keys, bands, n_cells, hot_threshold, seq_lo, min_time,
    cells, digest_cells, slot_seq, slot_time, slot_keys, slot_hot, slot_digest,
    cand_slots, cand_shared, hot_bands, probe_cell, probe_key, probe_live,
):
    """Candidates of one document: the exact-digest match first (if any), then band matches.

    Returns ``(n_candidates, exact_slot)``. ``cand_slots``/``cand_shared`` get the distinct
    candidate slots and how many non-hot bands each shares, in first-seen band order;
    ``hot_bands[b]`` is set for bands whose cell is hot. ``probe_*`` keep, per band, the cell's
    occupant, its key and whether it is a live document with the same key, for :func:`insert`.

    In phases: every band's cell, then every occupant's key, then validity. The loads of a
    phase do not depend on each other, so the CPU can overlap their cache misses (at 100k
    documents the decide step went from ~2.7 to ~2.5 us per document; with millions indexed
    the misses cost more than that, see the README's figures).
    """
    for b in range(bands):
        probe_cell[b] = cells[_cell(b, keys[b], n_cells)]
    for b in range(bands):
        c = probe_cell[b]
        # the key first: in a full index most occupied cells hold another key, and the
        # validity check is a miss in two more arrays
        probe_key[b] = slot_keys[np.int64(c) - 1, b] if c != 0 else uint32(0)
    exact = NO_SLOT
    d = digest_cells[_digest_cell(digest_lo, n_cells)]
    if d != 0:
        slot = np.int64(d) - 1
        if slot_digest[slot] == digest_lo and _valid(slot, slot_seq, slot_time, seq_lo, min_time):
            exact = slot
    n = 0
    for b in range(bands):
        hot_bands[b] = False
        probe_live[b] = False
        c = probe_cell[b]
        if c == 0:
            continue
        if probe_key[b] != keys[b]:
            continue
        slot = np.int64(c) - 1
        if not _valid(slot, slot_seq, slot_time, seq_lo, min_time):
            continue
        probe_live[b] = True
        if slot_hot[slot, b] >= hot_threshold:
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
def _fill_slot(slot, seq, root, event_time, digest_lo, n_cells, digest_cells, slot_seq, slot_time, slot_root, slot_digest):
    """The per-document part of an insertion, shared by insert and restore."""
    digest_cells[_digest_cell(digest_lo, n_cells)] = uint32(slot + 1)
    slot_seq[slot] = seq
    slot_time[slot] = event_time
    slot_root[slot] = root
    slot_digest[slot] = digest_lo


@njit(cache=True)
def insert(
    seq, root, event_time, digest_lo, keys, bands, n_cells, capacity,
    cells, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_hot, slot_digest, hot_out,
    probe_cell, probe_live,
):
    """Insert one document (already decided: ``root`` is its cluster's first seq), right after
    its :func:`lookup` (whose ``probe_*`` say what each of its cells holds).

    Writes the hot count of each of its bands to ``hot_out`` (stored in the record so that a
    rebuild can restore it exactly): the previous writer's count if it is a live document
    with the same key, plus one if it belongs to another cluster.
    """
    slot = seq % capacity
    for b in range(bands):
        key32 = keys[b]
        count = 1
        if probe_live[b]:
            prev = np.int64(probe_cell[b]) - 1
            if prev != slot:
                count = np.int64(slot_hot[prev, b])
                if slot_root[prev] != root and count < 255:
                    count += 1
        hot_out[b] = count
        cells[_cell(b, key32, n_cells)] = uint32(slot + 1)
        slot_keys[slot, b] = key32
        slot_hot[slot, b] = count
    _fill_slot(slot, seq, root, event_time, digest_lo, n_cells, digest_cells, slot_seq, slot_time, slot_root, slot_digest)


@njit(cache=True)
def restore(
    seq, root, event_time, digest_lo, keys, hot_counts, bands, n_cells, capacity,
    cells, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_hot, slot_digest,
):
    """Re-insert a stored document during a rebuild, with the hot counts it was stored with."""
    slot = seq % capacity
    for b in range(bands):
        cells[_cell(b, keys[b], n_cells)] = uint32(slot + 1)
        slot_keys[slot, b] = keys[b]
        slot_hot[slot, b] = hot_counts[b]
    _fill_slot(slot, seq, root, event_time, digest_lo, n_cells, digest_cells, slot_seq, slot_time, slot_root, slot_digest)


@njit(cache=True)
def rehash(lo_seq, next_seq, ix):
    """Fill the empty cell tables of ``ix`` from the slots of documents ``lo_seq..next_seq``.

    The same cells ``restore`` gives for these documents: each cell holds the last document
    (in seq order) whose key maps there.
    """
    cells, digest_cells, slot_seq, slot_keys, slot_digest = ix.cells, ix.digest_cells, ix.slot_seq, ix.slot_keys, ix.slot_digest
    bands = slot_keys.shape[1]
    n_cells = digest_cells.shape[0]
    capacity = slot_seq.shape[0]
    for seq in range(lo_seq, next_seq):
        slot = seq % capacity
        if slot_seq[slot] != seq:
            continue
        for b in range(bands):
            cells[_cell(b, slot_keys[slot, b], n_cells)] = uint32(slot + 1)
        digest_cells[_digest_cell(slot_digest[slot], n_cells)] = uint32(slot + 1)
