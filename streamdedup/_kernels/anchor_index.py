"""The anchor table: which indexed document last wrote each anchor key (``_kernels.anchors``).

A set-valued index is what the anchors need: a story has ~9 of them (up to 64) and a teaser
shares one or two, so folding them into the index's fixed band columns (the least key per
column) lost most of them (the prototype: 106-176 of 200 teasers after a header block with
8-32 columns, 200 with a table). Like the band cells, one direct-mapped table whose entry
holds the key, the seq of the most recent document that wrote it and the key's hot count
(distinct clusters that wrote it in a row): one document per key is enough, because a copy
only needs to reach some member of its cluster, and a key written by many clusters (a
boilerplate line: "Reporting by ...", a disclaimer) is not evidence and is ignored.

The table has ``ANCHOR_CELLS_PER_DOC`` entries per document of the ring's capacity, fixed at
start (it is not rebuilt when the band cells grow, so growth never changes it). An entry is
one uint64: the key's top 24 bits, its hot count (8 bits, never 0: an entry of 0 is empty) and
the writer's seq modulo 2**32, so a lookup or an insert costs one cache miss, not three (key,
slot and count in arrays of their own were three random reads per key in a table of 64 MB).
The seq, not the slot: the live seqs span less than the ring's capacity, so the seq is whole
again from ``seq_lo``, and an entry whose writer has left the ring is not taken for the
document that reuses its slot (a restarted engine, which rebuilds the table from the live
documents only, would not have it, and counts carried from it would differ). The 8 key bits
left out, with the entry's position (which the whole key picks), leave a false match about
once in 2**24 lookups of an occupied entry: a candidate that verification then refuses. Reuters stories
have 9.0 keys on average (all 19,043, with their titles), so a later key overwrites an entry of
a document ``n`` documents back with probability ~``1 - exp(-9 n / (8 capacity))``: 0.1 % for
a copy 1,000 documents after its story in a 10^6-document ring, 11 % for one 100,000 after.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint8, uint32, uint64

from streamdedup._kernels.hashing import GOLDEN

#: anchor table entries per document of capacity (8 bytes each)
ANCHOR_CELLS_PER_DOC = 8

_SEQ_MASK = np.uint64(0xFFFFFFFF)
_TAG_MASK = np.uint64(0xFFFFFF0000000000)


@njit(cache=True, inline="always")
def _entry(key, n):
    h = (uint64(key) * GOLDEN) >> uint64(32)
    return np.int64((h * uint64(n)) >> uint64(32))


@njit(cache=True, inline="always")
def _tag(key):
    """The key's top 24 bits where an entry keeps them."""
    return (uint64(key) << uint64(32)) & _TAG_MASK


@njit(cache=True, inline="always")
def _pack(key, hot, seq):
    return _tag(key) | (uint64(hot) << uint64(32)) | (uint64(seq) & _SEQ_MASK)


@njit(cache=True, inline="always")
def _writer(v, key, seq_lo, min_time, slot_seq, slot_time):
    """The slot of entry ``v``'s writer if it holds ``key`` and its writer is live, else -1."""
    if v == 0 or (v & _TAG_MASK) != _tag(key):
        return np.int64(-1)
    # the live seqs span less than 2**32: the one at or after seq_lo with these low bits
    seq = seq_lo + np.int64((v - uint64(seq_lo)) & _SEQ_MASK)
    slot = seq % slot_seq.shape[0]
    if slot_seq[slot] != seq or slot_time[slot] < min_time:
        return np.int64(-1)
    return slot


@njit(cache=True)
def anchor_lookup(keys, n_keys, hot_threshold, seq_lo, min_time, table, slot_seq, slot_time, cand_slots, cand_shared, nc):
    """Add the live documents that last wrote one of ``keys[:n_keys]`` (not hot) to the
    candidates ``cand_slots[:nc]`` (sharing no band: they sort last); returns the new count."""
    n = table.shape[0]
    for j in range(n_keys):
        v = table[_entry(keys[j], n)]
        slot = _writer(v, keys[j], seq_lo, min_time, slot_seq, slot_time)
        if slot < 0 or np.int64((v >> uint64(32)) & uint64(0xFF)) >= hot_threshold:
            continue
        found = False
        for t in range(nc):
            if cand_slots[t] == slot:
                found = True
                break
        if not found and nc < cand_slots.shape[0]:
            cand_slots[nc] = slot
            cand_shared[nc] = 0
            nc += 1
    return nc


@njit(cache=True)
def anchor_insert(slot, root, keys, n_keys, seq_lo, min_time, table, slot_seq, slot_time, slot_root, hot_out):
    """Write document ``slot`` (cluster ``root``) as the latest writer of its keys, carrying each
    key's hot count from the previous writer (plus one if that was another cluster); the counts
    go to ``hot_out`` too (the record keeps them: they depend on documents a restart may no
    longer have)."""
    n = table.shape[0]
    for j in range(n_keys):
        key = keys[j]
        e = _entry(key, n)
        count = _carried(table[e], key, slot, root, seq_lo, min_time, slot_seq, slot_time, slot_root)
        table[e] = _pack(key, count, slot_seq[slot])
        hot_out[j] = uint8(count)


@njit(cache=True, inline="always")
def _carried(v, key, slot, root, seq_lo, min_time, slot_seq, slot_time, slot_root):
    """The hot count a writer ``slot`` of cluster ``root`` gives ``key`` over entry ``v``: the
    live previous writer's count, plus one if that was another cluster; 1 without one."""
    prev = _writer(v, key, seq_lo, min_time, slot_seq, slot_time)
    if prev < 0 or prev == slot:
        return 1
    count = np.int64((v >> uint64(32)) & uint64(0xFF))
    return count + 1 if slot_root[prev] != root and count < 255 else count


@njit(cache=True)
def anchor_counts(keys, n_keys, root, hot_threshold, seq_lo, min_time, table, slot_seq, slot_time, slot_root, out):
    """The hot counts :func:`anchor_insert` would give ``keys[:n_keys]`` for a new document of
    cluster ``root`` now (``out``): what a document's boilerplate blocks (``_kernels.blocks``)
    are judged by before it is stored, the same counts its record will keep if it joins
    ``root``. Returns whether one reaches ``hot_threshold`` (the document carries a block)."""
    n = table.shape[0]
    hot = False
    for j in range(n_keys):
        count = _carried(table[_entry(keys[j], n)], keys[j], -1, root, seq_lo, min_time, slot_seq, slot_time, slot_root)
        out[j] = uint8(count)
        if count >= hot_threshold:
            hot = True
    return hot


@njit(cache=True)
def anchor_restore(seq, keys, hots, n_keys, table):
    """Re-insert a stored document's anchor keys with the hot counts it was stored with."""
    n = table.shape[0]
    for j in range(n_keys):
        table[_entry(keys[j], n)] = _pack(keys[j], hots[j], seq)
