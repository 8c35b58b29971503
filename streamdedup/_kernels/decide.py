"""The engine's decide loop: a whole micro-batch in arrival order, without Python per document.

Per document: advance the window, look up the exact-digest cell and the band cells, verify the
candidates (most shared bands first, at most ``max_verified``) against their arena data, keep
the best duplicate (highest Jaccard among pairs whose relation counts as a duplicate), insert
the document as a member of that cluster or as a new root, and store its verification data.
A document decided earlier in the same batch is already in the index and the arena, so a
batch behaves exactly like the same documents one at a time. A document that only exact
character evidence could decide (``exact_evidence``) ends the call; the caller answers from the
two canonical texts and calls again from that document.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from streamdedup._kernels import arena
from streamdedup._kernels.anchors import MAX_ANCHORS
from streamdedup._kernels.anchor_index import anchor_counts, anchor_insert, anchor_lookup
from streamdedup._kernels.index import insert, lookup
from streamdedup._kernels.verify import O_BOILERPLATE, O_CONTAINMENT_B_IN_A, O_JACCARD, O_LD_SIMILARITY
from streamdedup._kernels.evidence import lengths_close, short_question
from streamdedup._kernels.questions import D_CONTAINMENT_A_IN_B, D_CONTAINMENT_B_IN_A, D_EMBEDDING, D_JACCARD, D_LD_SIMILARITY
from streamdedup._kernels.questions import N_NUMBERS, N_SAID, _estimates, block_question, exact_evidence, text_evidence
from streamdedup._kernels.verify import P_EXACT_LD, P_EXACT_MIN_BYTES, P_LD_MIN_JACCARD
from streamdedup._kernels.verify import REL_CONTAINED_IN, REL_EXACT, REL_NEAR
from streamdedup._kernels.verify import compare_pair, embedding_similarity, is_duplicate, ld_estimate, reports_embedding, reports_ld

# Numba's on-disk cache of decide_batch holds compare_pair (and the other helpers above) compiled
# in, but it checks only this file's contents: a change to a rule in verify.py, questions.py or
# anchor_index.py is not seen by a cached decide_batch until this file changes too (an engine
# would judge by the old rule while explain used the new one; touching the file is not enough).
# Changed with: anchor table entries that name their writer's seq (modulo 2**32), boilerplate
# blocks (asked about by a document that carries one).


#: a document of at most this many shingles also looks up its anchor keys (a teaser, an
#: excerpt, a card: the short copies the bands miss when they do not start the story; a long
#: document's copies share its bands, and looking up its 64 anchors would cost for nothing)
ANCHOR_MAX_SHINGLES = 200

# flags per document
F_BOILERPLATE = 1
F_EXACT_EVIDENCE = 2  # a near-duplicate or a short copy (contained_in) on exact evidence
F_BLOCKS = 16  # with F_EXACT_EVIDENCE: a near-duplicate once boilerplate blocks are left out (4, 8: records.F_*)


class BatchPrints(NamedTuple):
    """The fingerprints of a batch's n documents, as ``decide_batch`` reads them."""

    #: uint64 (n, 2): the 128-bit digest as (low, high) words
    digests: np.ndarray
    #: uint32 (n, bands): the index band keys (main bands, then lead bands; low 32 bits)
    keys: np.ndarray
    #: int64 (n,): event times (ms)
    times: np.ndarray
    #: bool (n,): no words after canonicalisation (not indexed)
    empty: np.ndarray
    #: uint32 (n, num_perm): full-width MinHash slots
    minhash: np.ndarray
    #: int64 (n,): shingle counts
    n_shingles: np.ndarray
    #: int64 (n,): canonical lengths (UTF-8 bytes)
    lengths: np.ndarray
    #: int64 (n,): canonical lengths (characters)
    chars: np.ndarray
    #: uint8: the fine LD signatures, document i's at ``sig_buf[sig_start[i]:][:sig_len[i]]``
    sig_buf: np.ndarray
    #: int64 (n,)
    sig_start: np.ndarray
    #: int64 (n,)
    sig_len: np.ndarray
    #: bool (n,): insert the document once decided (the engine: all True). False decides it
    #: against the index without inserting it: a shard of a sharded index probing a document
    #: that another shard holds (benchmarks/shard_simulation.py); its seq stays -1
    insert: np.ndarray
    #: uint32 (n, MAX_ANCHORS): the anchor keys (``_kernels.anchors``), document i's ``anchor_n[i]`` first
    anchors: np.ndarray
    #: int64 (n,)
    anchor_n: np.ndarray


class DecideParams(NamedTuple):
    """The engine's settings for a batch's decisions."""

    #: the main LSH bands (the index's first bands; the rest are lead bands)
    main_bands: int
    #: MinHash slots per band
    rows: int
    #: hot count from which a band is boilerplate (``engine.hot_bucket_clusters``)
    hot_threshold: int
    #: event-time window (ms)
    window_ms: int
    #: candidates verified per document, most shared bands first
    max_verified: int
    #: MinHash storage width in the arena
    bits: int
    #: float64 (N_PARAMS,): the verification thresholds and constants (``verify.P_*``)
    verify: np.ndarray


class Scratch(NamedTuple):
    """Working memory of the verification, reused across documents and batches."""

    #: bool (num_perm,): the MinHash slots that count (False in hot main bands)
    informative: np.ndarray
    #: int64: edit runs of the LD estimate
    runs: np.ndarray
    #: uint8 (longest signature,): where a stored signature that wraps the arena's ring is
    #: copied to be read in one piece
    sig: np.ndarray
    #: float64 (verify.N_OUT,): one pair's estimates
    cmp: np.ndarray


class Outputs(NamedTuple):
    """What ``decide_batch`` writes per document i (made by :func:`outputs`)."""

    #: int64: its seq, -1 for a text without words (not indexed)
    seq: np.ndarray
    #: int64: its cluster's first seq (unset where ``seq`` is -1)
    root: np.ndarray
    #: int64: the seq it was matched to, or -1
    match: np.ndarray
    #: uint8: 0 for unique, else the relation code
    rel: np.ndarray
    #: float32 (n, N_NUMBERS): the estimates of the match (see ``D_*``)
    num: np.ndarray
    #: uint8: ``F_*`` flags
    flag: np.ndarray
    #: uint8 (n, bands): its band cells' hot counts
    hot: np.ndarray
    #: int64: the seq whose canonical text document i must be compared with (exact evidence),
    #: -1 (set by :func:`outputs`, never reset by the kernel: it survives the call that asks)
    ask: np.ndarray
    #: uint8 (n, MAX_ANCHORS): the hot counts of its anchor keys (``anchor_index.anchor_insert``)
    anchor_hot: np.ndarray
    #: float64 (n, N_SAID): the caller's answer for ``ask[i]`` (``S_*``): exact 8-gram Jaccard,
    #: plain and with digits read as 0, the near-word share, and the 8-gram containment of the
    #: document in the earlier text, plain and folded (``_kernels.evidence``; NaN until answered)
    said: np.ndarray


def outputs(n: int, bands: int) -> Outputs:
    """Uninitialised outputs for a batch of ``n`` documents (``decide_batch`` writes every one it uses)."""
    return Outputs(np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                   np.empty(n, dtype=np.uint8), np.empty((n, N_NUMBERS), dtype=np.float32), np.empty(n, dtype=np.uint8),
                   np.empty((n, bands), dtype=np.uint8), np.full(n, -1, dtype=np.int64),
                   np.ones((n, MAX_ANCHORS), dtype=np.uint8), np.full((n, N_SAID), np.nan))


# One kernel of ~130 lines on purpose: its steps (window, lookup, ordering, verification,
# the kept match's LD and embedding, insertion, storage) share a dozen per-document values (seq, the best
# match and its relation and Jaccard, the signature, the boilerplate state), which helpers
# would have to take and hand back as tuples; lookup, insert and put are apart already, and
# the first 16 lines only unpack the structs.
@njit(cache=True, nogil=True)
def decide_batch(start, grow_at, docs, params, state, ix, ar, probe, scratch, out):
    """Decide documents ``start..`` of ``docs`` (a :class:`BatchPrints`) with settings ``params``
    (a :class:`DecideParams`) against index ``ix`` and arena ``ar``, writing ``out``.

    ``state`` is ``[next_seq, seq_lo, watermark]``. ``probe`` (``index.Probe``) and ``scratch``
    are working memory. Returns the batch length, or the position of the first document that
    would get seq ``grow_at``: the caller grows the index tables and calls again from there,
    or of a document that needs exact evidence: ``out.ask[i]`` names the earlier seq, the
    caller writes the exact evidence of their canonical texts to ``out.said[i]`` and calls again
    from ``i`` (the document is looked up and verified again, identically, and decided).
    """
    # the fields as locals, read once: the per-document helpers take arrays (see index.IndexArrays)
    digests, keys, times, empty = docs.digests, docs.keys, docs.times, docs.empty
    minhash, n_shingles, lengths, chars = docs.minhash, docs.n_shingles, docs.lengths, docs.chars
    sig_buf, sig_start, sig_len, inserting = docs.sig_buf, docs.sig_start, docs.sig_len, docs.insert
    anchors, anchor_n = docs.anchors, docs.anchor_n
    a_table = ix.anchor_table
    main_bands, rows, hot_threshold, window_ms = params.main_bands, params.rows, params.hot_threshold, params.window_ms
    max_verified, bits, verify = params.max_verified, params.bits, params.verify
    cells, digest_cells, slot_seq, slot_time = ix.cells, ix.digest_cells, ix.slot_seq, ix.slot_time
    slot_root, slot_keys, slot_hot, slot_digest = ix.slot_root, ix.slot_keys, ix.slot_hot, ix.slot_digest
    a_minhash, a_n_sh, a_len, a_chars, a_digest_hi = ar.minhash, ar.n_sh, ar.length, ar.chars, ar.digest_hi
    a_sig_start, a_sig_len, a_buf, a_state = ar.sig_start, ar.sig_len, ar.buf, ar.state
    cand_slots, cand_shared, hot_bands = probe.cand_slots, probe.cand_shared, probe.hot_bands
    probe_cell, probe_key, probe_live = probe.cell, probe.key, probe.live
    informative, runs, sig_copy, cmp_out = scratch.informative, scratch.runs, scratch.sig, scratch.cmp
    seq_out, root_out, match_out, rel_out = out.seq, out.root, out.match, out.rel
    num_out, flag_out, hot_out, ask_out, said = out.num, out.flag, out.hot, out.ask, out.said
    anchor_hot_out = out.anchor_hot
    n = keys.shape[0]
    bands, n_cells, capacity = slot_keys.shape[1], digest_cells.shape[0], slot_seq.shape[0]
    order = np.empty(cand_slots.shape[0], dtype=np.int64)
    guard = np.empty(cand_slots.shape[0], dtype=np.int64)  # pairs only exact evidence could make duplicates
    guard_j = np.empty(cand_slots.shape[0], dtype=np.float64)
    short_num = np.empty(N_NUMBERS, dtype=np.float32)  # the estimates of a short copy's question
    block_num = np.empty(N_NUMBERS, dtype=np.float32)  # and of a boilerplate question
    asks = verify[P_EXACT_LD] <= 1.0
    min_bytes = verify[P_EXACT_MIN_BYTES]
    for i in range(start, n):
        if not empty[i] and state[0] >= grow_at:
            return i
        seq_out[i] = -1
        match_out[i] = -1
        rel_out[i] = 0
        flag_out[i] = 0
        for c in range(N_NUMBERS):
            num_out[i, c] = np.nan
        if empty[i]:
            continue
        seq = state[0]
        if times[i] > state[2]:
            state[2] = times[i]
        if seq + 1 - capacity > state[1]:
            state[1] = seq + 1 - capacity
        min_time = state[2] - window_ms
        nc, exact = lookup(
            digests[i, 0], keys[i], bands, n_cells, hot_threshold, state[1], min_time,
            cells, digest_cells, slot_seq, slot_time, slot_keys, slot_hot, slot_digest,
            cand_slots, cand_shared, hot_bands, probe_cell, probe_key, probe_live,
        )
        if exact < 0 and anchor_n[i] > 0 and n_shingles[i] <= ANCHOR_MAX_SHINGLES:
            nc = anchor_lookup(anchors[i], anchor_n[i], hot_threshold, state[1], min_time, a_table,
                               slot_seq, slot_time, cand_slots, cand_shared, nc)
        best = np.int64(-1)
        best_rel = 0
        best_j = -1.0
        if exact >= 0 and a_digest_hi[exact] == digests[i, 1]:
            best = exact
            best_rel = REL_EXACT
            num_out[i, D_JACCARD] = 1.0
            num_out[i, D_LD_SIMILARITY] = 1.0
        elif nc > 0:
            # most shared bands first; a stable insertion sort keeps first-seen order on ties
            for k in range(nc):
                order[k] = k
            for k in range(1, nc):
                x = order[k]
                m = k - 1
                while m >= 0 and cand_shared[order[m]] < cand_shared[x]:
                    order[m + 1] = order[m]
                    m -= 1
                order[m + 1] = x
            boilerplate = np.bool_(False)  # not a literal False: see _kernels/__init__, Compile time
            for b in range(main_bands):
                if hot_bands[b]:
                    boilerplate = True
            if boilerplate:
                for k in range(informative.shape[0]):
                    informative[k] = True
                for b in range(main_bands):
                    if hot_bands[b]:
                        for r in range(b * rows, (b + 1) * rows):
                            informative[r] = False
            sig_b = sig_buf[sig_start[i]:sig_start[i] + sig_len[i]]
            n_check = nc if nc < max_verified else max_verified
            n_guard = np.int64(0)  # not a literal 0: exact_evidence would compile twice
            ask_doc = asks and lengths[i] >= min_bytes  # exact evidence: pairs of texts long enough only
            short_c = np.int64(-1)  # the candidate a short copy is asked about (highest containment estimate)
            block_c = np.int64(-1)  # the one asked about without boilerplate blocks (highest Jaccard)
            for k in range(n_check):
                c = cand_slots[order[k]]
                shared_bp = np.bool_(False)
                if boilerplate:
                    for b in range(main_bands):
                        if hot_bands[b] and slot_keys[c, b] == keys[i, b]:
                            shared_bp = True
                sig_a = arena.signature(c, a_sig_start, a_sig_len, a_buf, sig_copy)
                rel = compare_pair(
                    a_minhash[c], bits, False, slot_digest[c], a_digest_hi[c], a_n_sh[c], a_len[c], a_chars[c], sig_a,
                    minhash[i], 32, False, digests[i, 0], digests[i, 1], n_shingles[i], lengths[i], chars[i], sig_b,
                    informative, boilerplate, shared_bp, False, True, verify, runs, cmp_out,
                )
                if ask_doc and not shared_bp and not is_duplicate(rel, verify) and cmp_out[O_JACCARD] < verify[P_LD_MIN_JACCARD] \
                        and a_len[c] >= min_bytes and lengths_close(a_len[c], lengths[i], verify[P_EXACT_LD]):
                    guard[n_guard] = c
                    guard_j[n_guard] = cmp_out[O_JACCARD]
                    n_guard += 1
                if best < 0 and not is_duplicate(rel, verify) and short_question(a_len[c], lengths[i], cmp_out[O_CONTAINMENT_B_IN_A], verify) \
                        and (short_c < 0 or cmp_out[O_CONTAINMENT_B_IN_A] > short_num[D_CONTAINMENT_B_IN_A]):
                    short_c = c
                    _estimates(cmp_out, short_num)
                if best < 0 and not is_duplicate(rel, verify) and block_question(n_shingles[i], a_len[c], lengths[i], cmp_out[O_JACCARD]) \
                        and (block_c < 0 or cmp_out[O_JACCARD] > block_num[D_JACCARD]):
                    block_c = c
                    _estimates(cmp_out, block_num)
                if is_duplicate(rel, verify) and cmp_out[O_JACCARD] > best_j:
                    best = c
                    best_rel = rel
                    best_j = cmp_out[O_JACCARD]
                    _estimates(cmp_out, num_out[i])
                    flag_out[i] = F_BOILERPLATE if cmp_out[O_BOILERPLATE] > 0.0 else 0
            asked = np.int64(-3)
            if best < 0 and n_guard > 0:
                asked = exact_evidence(i, n_guard, guard, guard_j, sig_b, lengths[i], chars[i], slot_seq, a_len, a_chars,
                                       a_sig_start, a_sig_len, a_buf, sig_copy, verify, runs, cmp_out, ask_out, said, num_out)
                if asked == -2:
                    return i  # the caller compares the texts and calls again from here
                if asked >= 0:
                    best = asked
                    best_rel = REL_NEAR
                    flag_out[i] = F_EXACT_EVIDENCE | (F_BOILERPLATE if boilerplate else 0)
            # one question a document: a short copy, else boilerplate blocks, when no noise
            # question was asked (a second question would replace the first's answer)
            blocks = best < 0 and asked == -3 and asks and short_c < 0 and block_c >= 0  # asks: exact evidence on
            if blocks:
                # the counts its blocks are judged by (those its record keeps if it joins block_c);
                # a document that carries no block is not asked (a question re-enters this kernel,
                # ~0.1 ms: a block only its candidate carries is left out by the revision test)
                blocks = anchor_counts(anchors[i], anchor_n[i], slot_root[block_c], hot_threshold, state[1], min_time,
                                       a_table, slot_seq, slot_time, slot_root, anchor_hot_out[i])
            q = short_c if short_c >= 0 else (block_c if blocks else np.int64(-1))
            if best < 0 and asked == -3 and q >= 0:
                got = text_evidence(i, slot_seq[q], block_num if blocks else short_num, blocks, verify, ask_out, said, num_out)
                if got == -2:
                    return i
                if got >= 0:
                    best = q
                    best_rel = REL_NEAR if blocks else REL_CONTAINED_IN
                    best_j = num_out[i, D_JACCARD]
                    flag_out[i] = F_EXACT_EVIDENCE | (F_BLOCKS if blocks else 0) | (F_BOILERPLATE if boilerplate else 0)
            # the kept match's LD and embedding (reported), skipped while its relation was decided
            need_ld = best >= 0 and np.isnan(num_out[i, D_LD_SIMILARITY]) and reports_ld(best_rel == REL_EXACT, best_j, verify)
            need_emb = best >= 0 and np.isnan(num_out[i, D_EMBEDDING]) and reports_embedding(
                num_out[i, D_CONTAINMENT_B_IN_A], num_out[i, D_CONTAINMENT_A_IN_B], verify)
            if need_ld or need_emb:
                sig_a = arena.signature(best, a_sig_start, a_sig_len, a_buf, sig_copy)
                if need_ld:
                    ld_estimate(sig_a, sig_b, a_len[best], lengths[i], a_chars[best], chars[i], verify, runs, cmp_out)
                    num_out[i, D_LD_SIMILARITY] = cmp_out[O_LD_SIMILARITY]
                if need_emb:
                    num_out[i, D_EMBEDDING] = embedding_similarity(sig_a, sig_b)
        root = seq
        if best >= 0:
            root = slot_root[best]
            match_out[i] = slot_seq[best]
            rel_out[i] = best_rel
        if not inserting[i]:
            root_out[i] = root if best >= 0 else -1
            continue
        insert(
            seq, root, times[i], digests[i, 0], keys[i], bands, n_cells, capacity,
            cells, digest_cells, slot_seq, slot_time, slot_root, slot_keys, slot_hot, slot_digest, hot_out[i],
            probe_cell, probe_live,
        )
        slot = seq % capacity
        anchor_insert(slot, root, anchors[i], anchor_n[i], state[1], min_time, a_table, slot_seq, slot_time,
                      slot_root, anchor_hot_out[i])
        arena.put(slot, minhash[i], bits, n_shingles[i], lengths[i], chars[i], digests[i, 1], sig_buf, sig_start[i], sig_len[i],
                  a_minhash, a_n_sh, a_len, a_chars, a_digest_hi, a_sig_start, a_sig_len, a_buf, a_state)
        seq_out[i] = seq
        root_out[i] = root
        state[0] = seq + 1
    return n
