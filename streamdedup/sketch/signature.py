"""Edit-distance estimates from Coates LD signatures (seeds 000 and 001).

``LD(sig_a, sig_b) * C`` estimates the Levenshtein distance of the canonical texts (Coates).
It is good for block edits and several-fold too high for scattered ones (each edit disturbs
about N windows); :mod:`streamdedup.sketch.calibration` holds the correction fitted on Reuters and the
expected distance of unrelated texts, so that "related" can be told from "unrelated".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamdedup import _kernels
from streamdedup.sketch import calibration
from streamdedup.config import SignatureConfig


def _arr(sig: bytes) -> np.ndarray:
    return np.frombuffer(sig, dtype=np.uint8)


def distance(a: bytes, b: bytes, bound: int | None = None) -> int:
    """Levenshtein distance of two signatures; ``bound + 1`` once it is known to exceed ``bound``.

    >>> distance(b"kitten", b"sitting")
    3
    >>> distance(b"kitten", b"sitting", bound=1)
    2
    """
    if bound is None:
        bound = max(len(a), len(b))
    if bound < 0:
        raise ValueError("bound must be >= 0")
    return int(_kernels.levenshtein_bounded(_arr(a), _arr(b), bound))


@dataclass(frozen=True)
class Embedding:
    """Best alignment of the shorter signature inside the longer (free end gaps)."""

    distance: int
    start: int
    end: int
    inner_length: int
    outer_length: int

    @property
    def similarity(self) -> float:
        """1 - distance / length of the shorter signature (1.0 = embedded without change)."""
        return 1.0 - self.distance / self.inner_length if self.inner_length else 0.0


def embedding(inner: bytes, outer: bytes) -> Embedding:
    """Where ``inner`` best fits inside ``outer``: the containment test of Coates' Levenshtein estimates.

    >>> e = embedding(b"bcd", b"xxabcdyy"); (e.distance, e.start, e.end)
    (0, 3, 6)
    """
    d, start, end = _kernels.semi_global(_arr(inner), _arr(outer))
    return Embedding(int(d), int(start), int(end), len(inner), len(outer))


@dataclass(frozen=True)
class LDEstimate:
    """Estimated edit distance between two canonical texts, in characters (UTF-8 bytes)."""

    signature_distance: int
    raw: float
    calibrated: float
    length_a: int
    length_b: int
    expected_unrelated: float

    @property
    def similarity(self) -> float:
        """``1 - calibrated / max(length)``, in [0, 1]."""
        longest = max(self.length_a, self.length_b)
        return max(0.0, 1.0 - self.calibrated / longest) if longest else 1.0

    @property
    def raw_similarity(self) -> float:
        longest = max(self.length_a, self.length_b)
        return max(0.0, 1.0 - self.raw / longest) if longest else 1.0

    @property
    def related(self) -> bool:
        """True when the raw estimate is clearly below what unrelated texts give (Coates)."""
        return self.raw < calibration.RELATED_FRACTION * self.expected_unrelated


def estimate(sig_a: bytes, sig_b: bytes, length_a: int, length_b: int, cfg: SignatureConfig,
             bytes_per_char: float = 1.0) -> LDEstimate:
    """Raw and calibrated LD estimates for two fine signatures and their text lengths (UTF-8
    bytes); ``bytes_per_char`` is the pair's (see ``calibration.short_run_worth``)."""
    d, runs = calibration.run_lengths(sig_a, sig_b)
    raw = float(d * cfg.compression)
    return LDEstimate(
        signature_distance=d,
        raw=raw,
        calibrated=calibration.calibrated_from_runs(runs, cfg, bytes_per_char),
        length_a=length_a,
        length_b=length_b,
        expected_unrelated=calibration.expected_unrelated_ld(length_a, length_b, cfg),
    )
