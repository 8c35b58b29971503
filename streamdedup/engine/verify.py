"""Comparing two fingerprints and deciding what relates them (pure core).

The same comparison serves ``streamdedup explain`` and the engine's verification step: a
candidate pair found through LSH is confirmed or rejected here. Relations, from the point of
view of the *new* document ``b`` against the earlier ``a``:

- ``exact``: equal canonical digests;
- ``near_duplicate``: estimated Jaccard >= ``verify.jaccard_threshold``, or calibrated LD
  similarity >= ``verify.ld_similarity_threshold`` with Jaccard >= ``verify.ld_min_jaccard``
  (Jaccard keeps reordered paragraphs, the signature keeps scattered typos that break many
  shingles: either is evidence, but the signature alone is not);
- ``contained_in``: ``b`` is mostly inside ``a`` (a truncated teaser); ``contains``: ``a`` is
  mostly inside ``b`` (an update appended). Containment is estimated from Jaccard and the
  shingle counts, and the shorter signature must embed in the longer (Coates' Levenshtein estimates);
- ``related`` / ``unrelated``: neither, with Coates' expected-LD test telling them apart.

Exact character evidence: a pair that is none of these, below ``ld_min_jaccard``,
whose LD similarity reaches ``verify.exact_min_ld`` (both texts of ``verify.exact_min_bytes``
or more), is a near-duplicate when the exact byte 8-gram Jaccard of the canonical texts reaches
``verify.exact_gram_jaccard``, reading digits as 0 does not raise it by more than
``verify.exact_max_digit_gain`` and at least ``verify.exact_min_near_words`` of the newer
text's own words are one edit from the earlier's (``_kernels.evidence``; the engine asks for it
in its decide loop, :func:`compare` when both fingerprints carry text).

Short copies on exact evidence: a newer text that is no duplicate, of at most half the earlier's
bytes, whose containment estimate reaches ``verify.short_exact_min_estimate``, is
``contained_in`` the earlier one when ``verify.short_exact_containment`` of its byte 8-grams are
in the earlier canonical text (digits read as 0 adding at most ``verify.exact_max_digit_gain``).
A teaser after a header block or a "key points" box skips text between its sentences, which
breaks the signature embedding, and holds too few shingles for the estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from streamdedup.sketch import calibration
from streamdedup.sketch import signature
from streamdedup._kernels import evidence as KE
from streamdedup._kernels import readonly
from streamdedup._kernels.decide import ANCHOR_MAX_SHINGLES
from streamdedup._kernels import verify as K
from streamdedup.config import Config, SignatureConfig, VerifyConfig
from streamdedup.sketch.fingerprint import FingerprintBatch
from streamdedup.sketch.record import FingerprintRecord


@dataclass(frozen=True)
class Fingerprint:
    """One document's fingerprint, from a batch row or a stored record."""

    digest: bytes
    minhash: np.ndarray
    minhash_bits: int  # 32 = full slots
    n_shingles: int
    length: int  # canonical UTF-8 bytes
    chars: int  # canonical characters (the LD calibration's bytes per character)
    signature: bytes
    coarse_signature: bytes
    empty: bool
    #: the canonical text (UTF-8), for exact evidence; empty when not known (a stored record)
    text: bytes = b""

    @classmethod
    def from_batch(cls, batch: FingerprintBatch, i: int) -> "Fingerprint":
        s = int(batch.canon_start[i])
        return cls(
            batch.digests[i], batch.minhash[i], 32, int(batch.n_shingles[i]), int(batch.lengths[i]), int(batch.chars[i]),
            batch.signatures[i], batch.coarse_signatures[i], bool(batch.empty[i]),
            batch.canon_buf[s:s + int(batch.lengths[i])].tobytes(),
        )

    def as_stored(self, bits: int) -> "Fingerprint":
        """This fingerprint as the engine keeps an indexed document: the low ``bits`` of each
        MinHash slot (``minhash.storage_bits``). An earlier document is always compared so: the
        b-bit estimate differs from the full one (8 bits: a teaser's containment estimate moves
        by a few hundredths), enough to move a pair across a threshold."""
        if bits >= self.minhash_bits:
            return self
        mh = np.asarray(self.minhash, dtype=np.uint32) & np.uint32((1 << bits) - 1)
        return replace(self, minhash=mh, minhash_bits=bits)

    @classmethod
    def from_record(cls, rec: FingerprintRecord) -> "Fingerprint":
        return cls(rec.digest, rec.minhash, rec.minhash_bits, rec.n_shingles, rec.length, rec.chars, rec.signature,
                   rec.coarse_signature, rec.empty)


@dataclass(frozen=True)
class Comparison:
    relation: str
    is_duplicate: bool
    jaccard: float
    containment_b_in_a: float
    containment_a_in_b: float
    ld: signature.LDEstimate | None
    embedding_similarity: float
    reasons: tuple[str, ...]
    #: exact evidence (``EvidenceTables.measure``): byte 8-gram Jaccard of the canonical texts,
    #: plain and with digits read as 0, the near-word share, and the containment of the new
    #: text's 8-grams in the earlier's, plain and digits as 0 (None: not asked: decided
    #: otherwise, or a fingerprint had no text)
    grams: tuple[float, float, float, float, float] | None = None

    @property
    def ld_similarity(self) -> float | None:
        return None if self.ld is None else self.ld.similarity


def kernel_params(verify: VerifyConfig, sig: SignatureConfig) -> np.ndarray:
    """The thresholds and calibration constants as the verification kernel takes them."""
    p = np.zeros(K.N_PARAMS, dtype=np.float64)
    p[K.P_JACCARD] = verify.jaccard_threshold
    p[K.P_LD_SIMILARITY] = verify.ld_similarity_threshold
    p[K.P_CONTAINMENT] = verify.containment_threshold
    p[K.P_CONTAINED_MIN] = verify.contained_min_estimate
    p[K.P_LD_MIN_JACCARD] = verify.ld_min_jaccard
    p[K.P_MIN_INFORMATIVE] = verify.min_informative_slots
    p[K.P_COMPRESSION] = sig.compression
    p[K.P_NEIGHBOURHOOD] = sig.neighbourhood
    p[K.P_LONG_RUN] = calibration.LONG_RUN
    p[K.P_SHORT_RUN_FACTOR] = calibration.SHORT_RUN_FACTOR
    p[K.P_UNRELATED_MATCH_RATE] = calibration.UNRELATED_MATCH_RATE
    p[K.P_RELATED_FRACTION] = calibration.RELATED_FRACTION
    p[K.P_DUPLICATE_MASK] = sum(1 << K.RELATION_NAMES.index(r) for r in verify.duplicate_relations)
    # a near-duplicate on exact evidence is only asked for when near_duplicate makes a duplicate
    asks = verify.exact_evidence and "near_duplicate" in verify.duplicate_relations
    p[K.P_EXACT_LD] = verify.exact_min_ld if asks else 2.0
    p[K.P_EXACT_GRAM] = verify.exact_gram_jaccard
    p[K.P_EXACT_DIGIT_GAIN] = verify.exact_max_digit_gain
    p[K.P_EXACT_NEAR_WORDS] = verify.exact_min_near_words
    p[K.P_EXACT_MIN_BYTES] = verify.exact_min_bytes
    p[K.P_SHORT_RATIO] = verify.short_copy_ratio
    short_asks = verify.exact_evidence and "contained_in" in verify.duplicate_relations and verify.short_exact_containment > 0
    p[K.P_SHORT_EXACT] = verify.short_exact_containment if short_asks else 2.0
    p[K.P_SHORT_EXACT_MIN] = verify.short_exact_min_estimate
    return p


def reasons(relation: int, j: float, ld_similarity: float | None, c_ba: float, c_ab: float, emb: float,
            boilerplate: bool, raw: float | None, expected: float | None, verify: VerifyConfig,
            grams: tuple[float, float, float] | None = None, blocks: bool = False) -> tuple[str, ...]:
    """Why a pair got its relation, in words (the same text for explain, live and replayed decisions);
    ``grams``: the exact evidence it was decided on (``_kernels.evidence``): for a near-duplicate
    the 8-gram Jaccard plain and with digits as 0 and the near-word share, for a short copy
    (contained_in) the 8-gram containment plain and with digits as 0; ``blocks``: those figures
    are of the texts without their boilerplate blocks (``_kernels.blocks``)."""
    out = ["boilerplate bands ignored"] if boilerplate else []
    if relation == K.REL_EXACT:
        out.append("equal canonical digests")
    elif relation == K.REL_NEAR:
        if grams is not None and blocks:
            out.append(f"boilerplate blocks left out (sentences other stories carry): exact 8-gram Jaccard {grams[0]:.3f} "
                       f">= {verify.exact_gram_jaccard} (digits as 0: {grams[1] - grams[0]:+.3f}; own words one edit away: "
                       f"{grams[2]:.2f}), Jaccard {j:.3f}")
        elif grams is not None and math.isinf(grams[2]):  # answered from the texts' sketches (no texts kept)
            out.append(f"character noise: 8-gram Jaccard {grams[0]:.3f} >= {verify.exact_gram_jaccard} estimated from the "
                       f"texts' sketches (digits as 0: {grams[1] - grams[0]:+.3f}), LD similarity {ld_similarity:.3f} >= "
                       f"{verify.exact_min_ld}, Jaccard {j:.3f}")
        elif grams is not None:
            out.append(f"character noise: exact 8-gram Jaccard {grams[0]:.3f} >= {verify.exact_gram_jaccard} "
                       f"(digits as 0: {grams[1] - grams[0]:+.3f}; own words one edit away: {grams[2]:.2f}), "
                       f"LD similarity {ld_similarity:.3f} >= {verify.exact_min_ld}, Jaccard {j:.3f}")
        elif j >= verify.jaccard_threshold:
            out.append(f"Jaccard {j:.3f} >= {verify.jaccard_threshold}")
        else:
            out.append(f"LD similarity {ld_similarity:.3f} >= {verify.ld_similarity_threshold} with Jaccard {j:.3f}")
    elif relation == K.REL_CONTAINED_IN and grams is not None:
        out.append(f"short copy: {grams[0]:.3f} of its exact 8-grams are in the earlier text >= "
                   f"{verify.short_exact_containment} (digits as 0: {grams[1] - grams[0]:+.3f}), "
                   f"containment estimate {c_ba:.3f}")
    elif relation == K.REL_CONTAINED_IN and c_ba < verify.contained_min_estimate:
        out.append(f"short text: its whole signature embeds exactly in the earlier one's "
                   f"(containment estimate {c_ba:.3f}: noise at this size)")
    elif relation == K.REL_CONTAINED_IN:
        out.append(f"containment of new in earlier {c_ba:.3f}, signature embeds at {emb:.3f}")
    elif relation == K.REL_CONTAINS:
        out.append(f"containment of earlier in new {c_ab:.3f}, signature embeds at {emb:.3f}")
    elif relation == K.REL_RELATED:
        out.append(f"raw LD {raw:.0f} well below the unrelated expectation {expected:.0f}")
    else:
        out.append("no estimate reaches a threshold")
    return tuple(out)


_NO_SIGNATURE = readonly(np.zeros(0, dtype=np.uint8))


def _sig(s: bytes) -> np.ndarray:
    # read-only either way, like np.frombuffer: one compiled compare_pair (see _kernels.readonly)
    return np.frombuffer(s, dtype=np.uint8) if s else _NO_SIGNATURE


def _digest_words(d: bytes) -> tuple[int, int]:
    return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:16], "little")


def compare(
    a: Fingerprint, b: Fingerprint, verify: VerifyConfig, sig: SignatureConfig, informative: np.ndarray | None = None,
    full: bool = False, shared_boilerplate: bool = False,
) -> Comparison:
    """Everything the estimators say about the earlier ``a`` and the new ``b``, and the verdict.

    ``informative`` marks the MinHash slots outside boilerplate (hot) bands; when given, the
    Jaccard and containment estimates use only those slots. The LD similarity only counts if
    the Jaccard reaches ``verify.ld_min_jaccard``: a long shared footer or a fixed template
    aligns well in the signatures but says nothing about the story. With ``full`` every
    estimate is computed (explain); otherwise the signature alignments are skipped where they
    cannot change the verdict, and ``ld`` may be None. ``shared_boilerplate`` says both texts
    carry the same boilerplate block (they share a hot band key): the signature alignment is
    then dominated by that block, so the LD similarity is no evidence at all.

    The rules are those of the engine's decide loop: both run ``_kernels.verify.compare_pair``.
    """
    if a.minhash.shape != b.minhash.shape:
        raise ValueError(f"MinHash shapes differ: {a.minhash.shape} vs {b.minhash.shape} (different num_perm?)")
    boilerplate = informative is not None and not bool(informative.all())
    mask = np.ascontiguousarray(informative, dtype=np.bool_) if boilerplate else np.ones(a.minhash.shape[0], dtype=np.bool_)
    sa, sb = _sig(a.signature), _sig(b.signature)
    runs = np.zeros(sa.shape[0] + sb.shape[0] + 1, dtype=np.int64)
    out = np.empty(K.N_OUT, dtype=np.float64)
    a_lo, a_hi = _digest_words(a.digest)
    b_lo, b_hi = _digest_words(b.digest)
    params = kernel_params(verify, sig)
    lazy = False  # every estimate worked out: this pair is explained, not only decided
    rel = int(K.compare_pair(
        np.ascontiguousarray(a.minhash, dtype=np.uint32), a.minhash_bits, a.empty, np.uint64(a_lo), np.uint64(a_hi),
        a.n_shingles, a.length, a.chars, sa,
        np.ascontiguousarray(b.minhash, dtype=np.uint32), b.minhash_bits, b.empty, np.uint64(b_lo), np.uint64(b_hi),
        b.n_shingles, b.length, b.chars, sb,
        mask, boilerplate, shared_boilerplate, full, lazy, params, runs, out,
    ))
    ld = None
    if not np.isnan(out[K.O_LD_RAW]):
        ld = signature.LDEstimate(int(out[K.O_SIG_DISTANCE]), float(out[K.O_LD_RAW]), float(out[K.O_LD_CALIBRATED]),
                                  a.length, b.length, float(out[K.O_LD_EXPECTED]))
    j = float(out[K.O_JACCARD])
    emb = 0.0 if np.isnan(out[K.O_EMBEDDING]) else float(out[K.O_EMBEDDING])
    why = reasons(rel, j, None if ld is None else ld.similarity, float(out[K.O_CONTAINMENT_B_IN_A]),
                  float(out[K.O_CONTAINMENT_A_IN_B]), emb, boilerplate, None if ld is None else ld.raw,
                  None if ld is None else ld.expected_unrelated, verify)
    grams = None
    c_ba, c_ab = float(out[K.O_CONTAINMENT_B_IN_A]), float(out[K.O_CONTAINMENT_A_IN_B])
    if _asks_evidence(verify, rel, j, ld, shared_boilerplate, a, b):
        grams = exact_grams(a.text, b.text)
        if KE.accepts(*grams[:3], params):  # the decide loop's rule
            rel = K.REL_NEAR
            why = reasons(rel, j, ld.similarity, c_ba, c_ab, emb, boilerplate, ld.raw, ld.expected_unrelated, verify, grams[:3])
    elif a.text and b.text and not K.is_duplicate(rel, params) and KE.short_question(a.length, b.length, c_ba, params):
        grams = exact_grams(a.text, b.text)  # a short copy's question (_kernels.questions.text_evidence)
        if KE.contained(grams[3], grams[4], params):
            rel = K.REL_CONTAINED_IN
            why = reasons(rel, j, None if ld is None else ld.similarity, c_ba, c_ab, emb, boilerplate, None, None, verify,
                          (grams[3], grams[4], grams[2]))
    relation = K.RELATION_NAMES[rel]
    return Comparison(
        relation=relation,
        is_duplicate=relation in verify.duplicate_relations,
        jaccard=j,
        containment_b_in_a=float(out[K.O_CONTAINMENT_B_IN_A]),
        containment_a_in_b=float(out[K.O_CONTAINMENT_A_IN_B]),
        ld=ld,
        embedding_similarity=emb,
        reasons=why,
        grams=grams,
    )


def _asks_evidence(verify: VerifyConfig, rel: int, j: float, ld, shared_boilerplate: bool, a: Fingerprint,
                   b: Fingerprint) -> bool:
    """The decide loop's condition for asking (``_kernels.decide.exact_evidence``), for one pair."""
    return (verify.exact_evidence and "near_duplicate" in verify.duplicate_relations and bool(a.text) and bool(b.text)
            and K.RELATION_NAMES[rel] not in verify.duplicate_relations and j < verify.ld_min_jaccard
            and not shared_boilerplate and ld is not None and ld.similarity >= verify.exact_min_ld
            and min(a.length, b.length) >= verify.exact_min_bytes and KE.lengths_close(a.length, b.length, verify.exact_min_ld))


@dataclass(frozen=True)
class Judgement:
    """The engine's verdict on a stream of two documents, the earlier ``a`` then ``b``."""

    #: the verification of the pair, the earlier document's MinHash as the engine stores it
    comparison: Comparison
    #: index band keys (main, lead and character bands, same column) the two share: the engine
    #: only verifies a pair that shares one (or whose canonical digests are equal)
    shared_keys: int
    same_digest: bool
    #: anchor keys the two share where ``b`` is short enough to look its anchors up
    #: (``_kernels.decide.ANCHOR_MAX_SHINGLES``): the engine verifies such a pair too
    shared_anchors: int = 0

    @property
    def proposed(self) -> bool:
        return self.same_digest or self.shared_keys > 0 or self.shared_anchors > 0

    @property
    def is_duplicate(self) -> bool:
        return self.proposed and self.comparison.is_duplicate


def judge_pair(batch: FingerprintBatch, i: int, j: int, cfg: Config, full: bool = True) -> Judgement:
    """How the engine decides batch row ``j`` after row ``i`` with nothing else indexed: the
    candidate step (a shared band key, anchor key or digest) and the verification of
    :func:`compare` on the earlier fingerprint as stored. ``streamdedup explain`` and the
    inspector judge with it, so they say what a two-document run says."""
    a = Fingerprint.from_batch(batch, i).as_stored(cfg.fingerprint.minhash.storage_bits)
    b = Fingerprint.from_batch(batch, j)
    cmp = compare(a, b, cfg.verify, cfg.fingerprint.signature, full=full)
    live = not (batch.empty[i] or batch.empty[j])
    keys = batch.index_keys
    shared = int((keys[i] == keys[j]).sum()) if live else 0
    anchors = 0
    if live and batch.n_shingles[j] <= ANCHOR_MAX_SHINGLES:
        anchors = len(set(batch.anchors[i, :batch.anchor_n[i]].tolist()) & set(batch.anchors[j, :batch.anchor_n[j]].tolist()))
    return Judgement(cmp, shared, live and a.digest == b.digest, anchors)


class EvidenceTables:
    """The working tables of the exact-evidence kernels, grown to the largest pair measured."""

    def __init__(self) -> None:
        self.keys, self.counts, self.states = np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint8)

    def _fit(self, size: int) -> None:
        """Grow the tables to at least ``size`` entries."""
        if self.keys.shape[0] < size:
            self.keys, self.counts, self.states = np.zeros(size, np.uint64), np.zeros(size, np.int64), np.zeros(size, np.uint8)

    def measure(self, a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float, float]:
        """The exact evidence of two canonical texts (uint8, earlier ``a``, newer ``b``): byte
        8-gram Jaccard, the same with digits read as 0, the share of b's own words one edit
        from a's, and the containment of b's 8-grams in a's, plain and digits as 0 (the
        decide loop's ``S_*`` columns)."""
        size = KE.word_table_size(a.shape[0], b.shape[0])  # the larger table: both kernels use it
        self._fit(size)
        g = KE.table_size(a.shape[0], b.shape[0])
        # read-only whichever way the texts came (batch, record, bytes): one compiled kernel
        a, b = readonly(a), readonly(b)
        plain, folded, held, held_folded = KE.gram_jaccards(a, b, self.keys[:g], self.states[:g])
        near = KE.near_word_share(a, b, self.keys[:size], self.counts[:size], self.states[:size])
        return float(plain), float(folded), float(near), float(held), float(held_folded)

    def gram_tables(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """A byte 8-gram table of ``size`` slots (keys, states), for a kernel that fills it."""
        self._fit(size)
        return self.keys[:size], self.states[:size]


def exact_grams(a: bytes, b: bytes) -> tuple[float, float, float, float, float]:
    """:meth:`EvidenceTables.measure` of two canonical texts as bytes (explain, the inspector)."""
    return EvidenceTables().measure(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8))
