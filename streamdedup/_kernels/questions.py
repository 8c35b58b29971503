"""The decide loop's questions about exact evidence (``_kernels.evidence``): the per-document
numbers it writes, the answers the caller gives, and the rules that read them.

A document that only the two canonical texts can decide ends :func:`streamdedup._kernels.decide.decide_batch`'s
call: the kernel writes the earlier seq to ``ask``, the caller measures both texts
(``engine.evidence``) into ``said`` and calls again from that document, which is then looked up
and verified again, identically, and decided here. Three questions: a pair below
``ld_min_jaccard`` that aligns well (character noise, :func:`exact_evidence`), a short text in
a longer one, and a short story under boilerplate blocks (:func:`text_evidence`); one a
document, in that order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels import arena
from streamdedup._kernels.evidence import accepts, contained
from streamdedup._kernels.verify import O_CONTAINMENT_A_IN_B, O_CONTAINMENT_B_IN_A, O_EMBEDDING, O_JACCARD, O_LD_SIMILARITY
from streamdedup._kernels.verify import P_EXACT_LD, ld_estimate

# columns of the per-document numbers written by decide_batch (float32, NaN = not computed)
D_JACCARD = 0
D_LD_SIMILARITY = 1
D_CONTAINMENT_B_IN_A = 2
D_CONTAINMENT_A_IN_B = 3
D_EMBEDDING = 4
# exact evidence (``_kernels.evidence``), flag F_EXACT_EVIDENCE: for a near-duplicate the exact
# byte 8-gram Jaccard (with F_BLOCKS: of the texts without their boilerplate blocks), for a
# short copy (contained_in) the exact containment of its 8-grams
D_GRAM_JACCARD = 5
D_GRAM_FOLDED = 6  # the same with every digit read as 0
D_NEAR_WORDS = 7  # share of the copy's own words one edit from a word of the earlier text's own
N_NUMBERS = 8

# the caller's answer to a question (``Outputs.said``)
S_GRAM_JACCARD = 0
S_GRAM_FOLDED = 1
S_NEAR_WORDS = 2
S_CONTAINED = 3  # exact 8-gram containment of the newer text in the earlier
S_CONTAINED_FOLDED = 4
# the texts without their boilerplate blocks (``_kernels.blocks``): 8-gram Jaccard plain and
# digits as 0, near-word share; -1 when neither text has a block, or one is all blocks. Asked
# for only by a question about blocks, which leaves S_BLOCK_JACCARD 0.0 (not NaN) as it asks;
# its answer has -1 in the columns above (the whole texts are not measured for it)
S_BLOCK_JACCARD = 5
S_BLOCK_FOLDED = 6
S_BLOCK_NEAR = 7
N_SAID = 8

#: the least Jaccard estimate of a pair asked about without its boilerplate blocks: a short
#: story under a ~60-word disclaimer resent under a ~25-word footer estimates 0.35-0.6
BLOCK_MIN_JACCARD = 0.3
#: the most shingles of a document asked about so (the anchor lookup's short texts: a long
#: story's shared blocks are a small part of it, and its bands judge it)
BLOCK_MAX_SHINGLES = 200


@njit(cache=True, inline="always")
def block_question(n_sh_b, len_a, len_b, j):
    """Whether a pair that is no duplicate may be one without its boilerplate blocks: a short
    text, of a length within 2x of its candidate's, with a Jaccard estimate of at least
    :data:`BLOCK_MIN_JACCARD`."""
    lo = len_a if len_a < len_b else len_b
    hi = len_b if len_a < len_b else len_a
    return n_sh_b <= BLOCK_MAX_SHINGLES and 2 * lo >= hi and j >= BLOCK_MIN_JACCARD


@njit(cache=True, inline="always")
def _estimates(cmp, row):
    """A verified pair's estimates (``verify.O_*``) into a row of the per-document numbers."""
    row[D_JACCARD] = cmp[O_JACCARD]
    row[D_LD_SIMILARITY] = cmp[O_LD_SIMILARITY]
    row[D_CONTAINMENT_B_IN_A] = cmp[O_CONTAINMENT_B_IN_A]
    row[D_CONTAINMENT_A_IN_B] = cmp[O_CONTAINMENT_A_IN_B]
    row[D_EMBEDDING] = cmp[O_EMBEDDING]


@njit(cache=True)
def text_evidence(i, seq, estimates, blocks, verify, ask_out, said, num_out):
    """Document ``i``, which no candidate made a duplicate, and the earlier document ``seq``:
    a short text contained_in it on the exact 8-gram containment in ``said[i]``, or with
    ``blocks`` a near-duplicate of it once both texts' boilerplate blocks are left out (the
    exact-evidence rule on what is left). Returns 1 (yes: its estimates and that evidence go
    to ``num_out[i]``), -1 (no), or -2 after writing ``seq`` to ``ask_out[i]`` (no answer yet)."""
    if ask_out[i] != seq or np.isnan(said[i, S_GRAM_JACCARD]):
        ask_out[i] = seq
        said[i, :] = np.nan
        if blocks:
            said[i, S_BLOCK_JACCARD] = 0.0  # the question's kind: the caller measures the blocks too
        return np.int64(-2)
    if blocks:
        plain, folded, near = said[i, S_BLOCK_JACCARD], said[i, S_BLOCK_FOLDED], said[i, S_BLOCK_NEAR]
        if plain < 0.0 or not accepts(plain, folded, near, verify):
            return np.int64(-1)
    else:
        plain, folded, near = said[i, S_CONTAINED], said[i, S_CONTAINED_FOLDED], said[i, S_NEAR_WORDS]
        if not contained(plain, folded, verify):
            return np.int64(-1)
    for c in range(N_NUMBERS):
        num_out[i, c] = estimates[c]
    num_out[i, D_GRAM_JACCARD] = plain
    num_out[i, D_GRAM_FOLDED] = folded
    num_out[i, D_NEAR_WORDS] = near
    return np.int64(1)


@njit(cache=True)
def exact_evidence(i, n_guard, guard, guard_j, sig_b, len_b, chars_b, slot_seq, a_len, a_chars, a_sig_start, a_sig_len,
                   a_buf, sig_copy, verify, runs, cmp_out, ask_out, said, num_out):
    """Document ``i``, which no candidate made a duplicate: its guard pair (below
    ``ld_min_jaccard``) of highest LD similarity, if that reaches ``exact_min_ld``, is judged
    on the exact 8-gram evidence in ``said[i]``. Returns the slot it duplicates, -1 for none,
    -3 when no pair reaches ``exact_min_ld`` (nothing asked), or -2 after writing the seq to
    compare with to ``ask_out[i]`` (no answer for it yet).
    """
    ask = np.int64(-1)
    ask_ld = -1.0
    ask_j = 0.0
    for g in range(n_guard):
        c = guard[g]
        sig_a = arena.signature(c, a_sig_start, a_sig_len, a_buf, sig_copy)
        ld_estimate(sig_a, sig_b, a_len[c], len_b, a_chars[c], chars_b, verify, runs, cmp_out)
        ld = cmp_out[O_LD_SIMILARITY]
        if ld >= verify[P_EXACT_LD] and ld > ask_ld:
            ask, ask_ld, ask_j = c, ld, guard_j[g]
    if ask < 0:
        return np.int64(-3)
    if ask_out[i] != slot_seq[ask] or np.isnan(said[i, S_GRAM_JACCARD]):
        ask_out[i] = slot_seq[ask]
        said[i, :] = np.nan
        return np.int64(-2)
    plain, folded, near = said[i, S_GRAM_JACCARD], said[i, S_GRAM_FOLDED], said[i, S_NEAR_WORDS]
    num_out[i, D_GRAM_JACCARD] = plain
    num_out[i, D_GRAM_FOLDED] = folded
    num_out[i, D_NEAR_WORDS] = near
    if not accepts(plain, folded, near, verify):
        return np.int64(-1)
    num_out[i, D_JACCARD] = ask_j
    num_out[i, D_LD_SIMILARITY] = ask_ld
    return ask
