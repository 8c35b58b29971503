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
  shingle counts, and the shorter signature must embed in the longer (seed 001);
- ``related`` / ``unrelated``: neither, with Coates' expected-LD test telling them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import signature
from .config import SignatureConfig, VerifyConfig
from .estimate import containment, jaccard, jaccard_bbit
from .fingerprint import FingerprintBatch
from .record import FingerprintRecord


@dataclass(frozen=True)
class Fingerprint:
    """One document's fingerprint, from a batch row or a stored record."""

    digest: bytes
    minhash: np.ndarray
    minhash_bits: int  # 32 = full slots
    n_shingles: int
    length: int
    signature: bytes
    coarse_signature: bytes
    empty: bool

    @classmethod
    def from_batch(cls, batch: FingerprintBatch, i: int) -> "Fingerprint":
        return cls(
            batch.digests[i], batch.minhash[i], 32, int(batch.n_shingles[i]), int(batch.lengths[i]),
            batch.signatures[i], batch.coarse_signatures[i], bool(batch.empty[i]),
        )

    @classmethod
    def from_record(cls, rec: FingerprintRecord) -> "Fingerprint":
        return cls(rec.digest, rec.minhash, rec.minhash_bits, rec.n_shingles, rec.length, rec.signature, rec.coarse_signature, rec.empty)


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

    @property
    def ld_similarity(self) -> float | None:
        return None if self.ld is None else self.ld.similarity


def estimated_jaccard(a: Fingerprint, b: Fingerprint, informative: np.ndarray | None = None) -> float:
    """Jaccard from the slots both fingerprints have; b-bit corrected when either is reduced.

    ``informative`` (bool per slot) restricts the estimate to slots outside boilerplate bands.
    """
    if a.empty or b.empty:
        return 0.0
    bits = min(a.minhash_bits, b.minhash_bits)
    ma, mb = a.minhash, b.minhash
    if informative is not None:
        ma, mb = ma[informative], mb[informative]
    if bits >= 32:
        return jaccard(ma, mb)
    mask = np.uint32((1 << bits) - 1)
    return jaccard_bbit(ma & mask, mb & mask, bits)


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
    """
    boilerplate = informative is not None and not bool(informative.all())
    if boilerplate and int(informative.sum()) < verify.min_informative_slots:
        j = 0.0
    else:
        j = estimated_jaccard(a, b, informative if boilerplate else None)
    c_ba = containment(j, b.n_shingles, a.n_shingles)
    c_ab = containment(j, a.n_shingles, b.n_shingles)
    reasons: list[str] = ["boilerplate bands ignored"] if boilerplate else []
    exact = a.digest == b.digest and not a.empty
    # The signature alignments are O(len^2): compute them only where they can change the
    # verdict (or for a full explanation), not for every false candidate.
    need_ld = full or exact or j >= verify.ld_min_jaccard
    ld = signature.estimate(a.signature, b.signature, a.length, b.length, sig) if need_ld else None
    need_emb = full or max(c_ba, c_ab) >= verify.containment_threshold
    inner, outer = (b.signature, a.signature) if len(b.signature) <= len(a.signature) else (a.signature, b.signature)
    emb = signature.embedding(inner, outer).similarity if (need_emb and inner) else 0.0
    if exact:
        relation = "exact"
        reasons.append("equal canonical digests")
    elif j >= verify.jaccard_threshold or (
        ld is not None and not shared_boilerplate
        and ld.similarity >= verify.ld_similarity_threshold and j >= verify.ld_min_jaccard
    ):
        relation = "near_duplicate"
        if j >= verify.jaccard_threshold:
            reasons.append(f"Jaccard {j:.3f} >= {verify.jaccard_threshold}")
        else:
            reasons.append(f"LD similarity {ld.similarity:.3f} >= {verify.ld_similarity_threshold} with Jaccard {j:.3f}")
    elif c_ba >= verify.containment_threshold and b.length <= a.length and emb >= verify.containment_threshold:
        relation = "contained_in"
        reasons.append(f"containment of new in earlier {c_ba:.3f}, signature embeds at {emb:.3f}")
    elif c_ab >= verify.containment_threshold and a.length < b.length and emb >= verify.containment_threshold:
        relation = "contains"
        reasons.append(f"containment of earlier in new {c_ab:.3f}, signature embeds at {emb:.3f}")
    elif ld is not None and ld.related:
        relation = "related"
        reasons.append(f"raw LD {ld.raw:.0f} well below the unrelated expectation {ld.expected_unrelated:.0f}")
    else:
        relation = "unrelated"
        reasons.append("no estimate reaches a threshold")
    return Comparison(
        relation=relation,
        is_duplicate=relation in verify.duplicate_relations,
        jaccard=j,
        containment_b_in_a=c_ba,
        containment_a_in_b=c_ab,
        ld=ld,
        embedding_similarity=emb,
        reasons=tuple(reasons),
    )
