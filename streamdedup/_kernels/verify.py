"""Verification of one candidate pair: every estimate and the verdict (the rules of ``verify.py``).

One kernel serves the engine's decide loop (thousands of pairs per second, no Python per
pair) and ``streamdedup explain`` (through :func:`streamdedup.engine.verify.compare`), so both judge a
pair identically. Its slow reference is ``compare_ref`` in ``tests/reference.py``.

Inputs are plain arrays: ``a`` is the earlier document, ``b`` the new one. MinHash slots may be
full 32-bit values or the low ``bits`` of them (b-bit storage); the estimate uses the smaller
width. ``params`` packs the thresholds and calibration constants (see ``P_*``), so that one
float array crosses the Python/Numba boundary instead of a dozen scalars.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamdedup._kernels.align import edit_runs, semi_global_distance

# relation codes; the engine stores them in records, so their values are fixed
REL_NONE = 0
REL_EXACT = 1
REL_NEAR = 2
REL_CONTAINS = 3
REL_CONTAINED_IN = 4
REL_RELATED = 5
REL_UNRELATED = 6
RELATION_NAMES = (None, "exact", "near_duplicate", "contains", "contained_in", "related", "unrelated")

# params: thresholds (VerifyConfig), signature constants, calibration constants, duplicate mask
P_JACCARD = 0
P_LD_SIMILARITY = 1
P_CONTAINMENT = 2
P_LD_MIN_JACCARD = 3
P_MIN_INFORMATIVE = 4
P_COMPRESSION = 5
P_NEIGHBOURHOOD = 6
P_LONG_RUN = 7
P_SHORT_RUN_FACTOR = 8
P_UNRELATED_MATCH_RATE = 9
P_RELATED_FRACTION = 10
P_DUPLICATE_MASK = 11  # bit r set: relation code r makes a duplicate
P_CONTAINED_MIN = 12  # estimated containment for contained_in (its embedding: P_CONTAINMENT)
P_EXACT_LD = 13  # exact evidence (_kernels.evidence): the LD similarity a pair needs to be asked (> 1: off)
P_EXACT_GRAM = 14  # its exact 8-gram Jaccard for a near-duplicate
P_EXACT_DIGIT_GAIN = 15  # the most that reading digits as 0 may add to it
P_EXACT_NEAR_WORDS = 16  # the least share of the copy's own words one edit from the earlier text's
P_EXACT_MIN_BYTES = 17  # the shortest canonical text (bytes) exact evidence is asked for
P_SHORT_RATIO = 18  # a text with at most 1/this of the other's shingles is contained_in it on an exact embedding (0: off)
P_SHORT_EXACT = 19  # exact 8-gram containment that makes a short text contained_in (> 1: not asked)
P_SHORT_EXACT_MIN = 20  # the containment estimate from which a short text is asked about
N_PARAMS = 21

#: the fewest signature symbols an exact embedding decides on alone: 4 symbols of a 62-symbol
#: alphabet meet by chance once in ~15 M positions of the other signature
SHORT_MIN_SYMBOLS = 4

# out: the estimates (NaN where not computed)
O_JACCARD = 0
O_CONTAINMENT_B_IN_A = 1
O_CONTAINMENT_A_IN_B = 2
O_SIG_DISTANCE = 3
O_LD_RAW = 4
O_LD_CALIBRATED = 5
O_LD_EXPECTED = 6
O_LD_SIMILARITY = 7
O_EMBEDDING = 8
O_BOILERPLATE = 9  # 1.0 when boilerplate slots were left out of the estimates
N_OUT = 10

EMPTY = np.uint32(0xFFFFFFFF)


@njit(cache=True)
def jaccard_estimate(mh_a, bits_a, mh_b, bits_b, informative, use_informative):
    """Slot agreement rate, b-bit corrected when either side is reduced (Li and Koenig).

    With ``use_informative`` only slots where ``informative`` is True count. Callers handle
    empty documents (their estimate is defined as 0).
    """
    bits = bits_a if bits_a < bits_b else bits_b
    mask = np.uint32(0xFFFFFFFF) if bits >= 32 else np.uint32((1 << bits) - 1)
    total = 0
    same = 0
    for k in range(mh_a.shape[0]):
        if use_informative and not informative[k]:
            continue
        total += 1
        if (np.uint32(mh_a[k]) & mask) == (np.uint32(mh_b[k]) & mask):
            same += 1
    if total == 0:
        return 0.0
    rate = same / total
    if bits >= 32:
        return rate
    chance = 2.0 ** -bits
    est = (rate - chance) / (1.0 - chance)
    return est if est > 0.0 else 0.0


@njit(cache=True, inline="always")
def containment(j, n_a, n_b):
    """Containment of A in B from Jaccard and set sizes (``estimate.containment``)."""
    if n_a <= 0 or j <= 0.0:
        return 0.0
    c = j * (n_a + n_b) / (1.0 + j) / n_a
    return c if c < 1.0 else 1.0


@njit(cache=True, inline="always")
def bytes_per_char(len_a, len_b, chars_a, chars_b):
    """The pair's UTF-8 bytes per character, both texts pooled (1.0 for two empty texts).

    Pooled rather than per side: a run of signature edits belongs to both texts at once, the
    estimate stays symmetric, and a pair in one script gets that script's value. Exactly 1.0
    for ASCII texts (integer sums), which keeps their estimate the b = 1 rule to the bit.
    """
    chars = chars_a + chars_b
    if chars <= 0:
        return 1.0
    b = (len_a + len_b) / chars
    return b if b > 1.0 else 1.0


@njit(cache=True)
def ld_estimate(sig_a, sig_b, len_a, len_b, chars_a, chars_b, params, runs, out):
    """Coates' raw estimate, its calibration from edit runs, the unrelated expectation.

    A short run of signature edits is worth ``calibration.short_run_worth`` at the pair's
    bytes per character (lengths in UTF-8 bytes, ``chars_*`` in characters).
    """
    d, n_runs = edit_runs(sig_a, sig_b, 0, runs)
    c = params[P_COMPRESSION]
    long_run = params[P_LONG_RUN]
    b = bytes_per_char(len_a, len_b, chars_a, chars_b)
    # (SRF * C) * b / ((N + b) - 1): with b = 1.0 both steps are exact, SRF * C / N to the bit
    short_worth = params[P_SHORT_RUN_FACTOR] * c * b / (params[P_NEIGHBOURHOOD] + b - 1.0)
    cal = 0.0
    for r in range(n_runs):
        k = runs[r]
        if k >= long_run:
            cal += k * c
        else:
            cal += short_worth
    short = len_a if len_a < len_b else len_b
    longest = len_b if len_a < len_b else len_a
    out[O_SIG_DISTANCE] = d
    out[O_LD_RAW] = d * c
    out[O_LD_CALIBRATED] = cal
    out[O_LD_EXPECTED] = longest - params[P_UNRELATED_MATCH_RATE] * short
    if longest > 0:
        s = 1.0 - cal / longest
        out[O_LD_SIMILARITY] = s if s > 0.0 else 0.0
    else:
        out[O_LD_SIMILARITY] = 1.0


@njit(cache=True, inline="always")
def reports_ld(exact, j, params):
    """Whether a pair's LD similarity is part of its verdict and report (below this Jaccard
    the signature alone never makes a duplicate); the engine's lazy path uses it too."""
    return exact or j >= params[P_LD_MIN_JACCARD]


@njit(cache=True, inline="always")
def reports_embedding(c_ba, c_ab, params):
    """Whether a pair's signature embedding is part of its verdict and report (a containment
    reaches its threshold: ``contained_min_estimate`` new-in-earlier, ``containment_threshold``
    earlier-in-new); the engine's lazy path uses it too."""
    return c_ba >= params[P_CONTAINED_MIN] or c_ab >= params[P_CONTAINMENT]


@njit(cache=True, inline="always")
def contained_embedding(c_ba, params):
    """The signature embedding ``contained_in`` needs at containment estimate ``c_ba`` (2.0 = never).

    A short text's estimate is noisy (a 35-shingle teaser against 600 shingles: 0.3-1.0 for a
    true 1.0), so below ``containment_threshold`` down to ``contained_min_estimate`` the
    embedding decides, and must be the closer to 1.0 the lower the estimate (teasers embed at
    1.0; an earnings-template sibling at 0.56 embedded at 0.9).
    """
    ct = params[P_CONTAINMENT]
    lo = params[P_CONTAINED_MIN]
    if c_ba >= ct:
        return ct
    if c_ba < lo or lo >= ct:
        return 2.0
    return 1.0 - (1.0 - ct) * (c_ba - lo) / (ct - lo)


@njit(cache=True, inline="always")
def short_copy(n_sh_a, n_sh_b, len_a, len_b, sig_b_len, params):
    """Whether ``b`` is short enough beside ``a`` that its containment estimate is noise and an
    exact embedding of its whole signature decides ``contained_in`` (``verify.short_copy_ratio``):
    128 slots hold one or two shingles of a 20-shingle teaser of a 600-shingle story."""
    r = params[P_SHORT_RATIO]
    return r > 0.0 and len_b <= len_a and sig_b_len >= SHORT_MIN_SYMBOLS and n_sh_b * r <= n_sh_a


@njit(cache=True)
def embedding_similarity(sig_a, sig_b):
    """1 - semi-global distance of the shorter signature inside the longer / its length (0.0
    for an empty shorter one): how well one text sits inside the other (Coates' Levenshtein estimates)."""
    if sig_b.shape[0] <= sig_a.shape[0]:
        inner, outer = sig_b, sig_a
    else:
        inner, outer = sig_a, sig_b
    if inner.shape[0] == 0:
        return 0.0
    return 1.0 - semi_global_distance(inner, outer) / inner.shape[0]


@njit(cache=True)
def compare_pair(
    mh_a, bits_a, empty_a, digest_a_lo, digest_a_hi, n_sh_a, len_a, chars_a, sig_a,
    mh_b, bits_b, empty_b, digest_b_lo, digest_b_hi, n_sh_b, len_b, chars_b, sig_b,
    informative, boilerplate, shared_boilerplate, full, lazy, params, runs, out,
):
    """Relation code of the new ``b`` against the earlier ``a``; estimates in ``out``.

    ``len_*`` are canonical lengths in UTF-8 bytes, ``chars_*`` in characters.

    ``boilerplate``: ``informative`` marks the slots outside hot (boilerplate) bands and the
    estimates use only those. ``shared_boilerplate``: both texts carry the same hot block, so
    their signature alignment is dominated by it and the LD similarity is no evidence. With
    ``full`` every estimate is computed (explain); otherwise the signature alignments
    run only where they can change the verdict or are reported (LD when Jaccard reaches
    ``ld_min_jaccard``, the embedding when a containment reaches its threshold). With ``lazy``
    the LD estimate is skipped where it cannot change the relation (exact, or Jaccard already
    over the threshold) and the embedding where the relation is exact or near already: the
    decide loop computes them for the one candidate it keeps, instead of for every copy in a
    cluster.
    """
    for k in range(N_OUT):
        out[k] = np.nan
    out[O_BOILERPLATE] = 1.0 if boilerplate else 0.0
    if empty_a or empty_b:
        j = 0.0
    elif boilerplate:
        n_inf = 0
        for k in range(informative.shape[0]):
            if informative[k]:
                n_inf += 1
        j = 0.0 if n_inf < params[P_MIN_INFORMATIVE] else jaccard_estimate(mh_a, bits_a, mh_b, bits_b, informative, np.bool_(True))
    else:
        # np.bool_, not literals: one compiled jaccard_estimate (see _kernels/__init__, Compile time)
        j = jaccard_estimate(mh_a, bits_a, mh_b, bits_b, informative, np.bool_(False))
    c_ba = containment(j, n_sh_b, n_sh_a)
    c_ab = containment(j, n_sh_a, n_sh_b)
    out[O_JACCARD] = j
    out[O_CONTAINMENT_B_IN_A] = c_ba
    out[O_CONTAINMENT_A_IN_B] = c_ab
    exact = digest_a_lo == digest_b_lo and digest_a_hi == digest_b_hi and not empty_a
    if lazy:
        have_ld = full or (not exact and params[P_LD_MIN_JACCARD] <= j < params[P_JACCARD])
    else:
        have_ld = full or reports_ld(exact, j, params)
    if have_ld:
        ld_estimate(sig_a, sig_b, len_a, len_b, chars_a, chars_b, params, runs, out)
    ct = params[P_CONTAINMENT]
    near = j >= params[P_JACCARD] or (
        have_ld and not shared_boilerplate and out[O_LD_SIMILARITY] >= params[P_LD_SIMILARITY] and j >= params[P_LD_MIN_JACCARD]
    )
    emb = 0.0
    short = short_copy(n_sh_a, n_sh_b, len_a, len_b, sig_b.shape[0], params)
    if full or ((short or reports_embedding(c_ba, c_ab, params)) and not (lazy and (exact or near))):
        emb = embedding_similarity(sig_a, sig_b)
        out[O_EMBEDDING] = emb
    if exact:
        return REL_EXACT
    if near:
        return REL_NEAR
    if len_b <= len_a and (emb >= contained_embedding(c_ba, params) or (short and emb >= 1.0)):
        return REL_CONTAINED_IN
    if c_ab >= ct and len_a < len_b and emb >= ct:
        return REL_CONTAINS
    if have_ld and out[O_LD_RAW] < params[P_RELATED_FRACTION] * out[O_LD_EXPECTED]:
        return REL_RELATED
    return REL_UNRELATED


@njit(cache=True, inline="always")
def is_duplicate(relation, params):
    return (np.int64(params[P_DUPLICATE_MASK]) >> relation) & 1 == 1
