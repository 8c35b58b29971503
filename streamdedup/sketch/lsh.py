"""Choosing LSH bands and rows (seed 003): the S-curve ``P(s) = 1 - (1 - s**r)**b``.

(b, r) minimise ``w_fp * FP + w_fn * FN`` where FP is the area under the S-curve below the
threshold (pairs less similar than wanted that still become candidates) and FN the area above
it that the curve misses. Bands cost index memory and lookups, so ties go to fewer bands.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from streamdedup.config import LSHConfig

_GRID = 2001


def candidate_probability(similarity: float | np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Probability that a pair with this Jaccard similarity shares at least one band key.

    >>> round(float(candidate_probability(0.5, 32, 4)), 3)
    0.873
    """
    s = np.asarray(similarity, dtype=np.float64)
    return 1.0 - (1.0 - s**rows) ** bands


@dataclass(frozen=True)
class LSHChoice:
    bands: int
    rows: int
    false_positive_area: float
    false_negative_area: float

    @property
    def threshold_estimate(self) -> float:
        """Where the S-curve is steepest, ``(1/b)**(1/r)``."""
        return (1.0 / self.bands) ** (1.0 / self.rows)


def _areas(threshold: float, bands: int, rows: int) -> tuple[float, float]:
    lo = np.linspace(0.0, threshold, _GRID)
    hi = np.linspace(threshold, 1.0, _GRID)
    fp = float(np.trapezoid(candidate_probability(lo, bands, rows), lo))
    fn = float(np.trapezoid(1.0 - candidate_probability(hi, bands, rows), hi))
    return fp, fn


@lru_cache(maxsize=256)
def optimal_params(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> LSHChoice:
    """The (bands, rows) with ``bands * rows <= num_perm`` minimising the weighted error areas."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    best: LSHChoice | None = None
    best_cost = np.inf
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp, fn = _areas(threshold, bands, rows)
            cost = fp_weight * fp + fn_weight * fn
            if cost < best_cost - 1e-12:
                best, best_cost = LSHChoice(bands, rows, fp, fn), cost
    assert best is not None
    return best


def choose(cfg: LSHConfig, num_perm: int) -> LSHChoice:
    """The explicit override if set, else :func:`optimal_params`."""
    if cfg.bands is not None and cfg.rows is not None:
        fp, fn = _areas(cfg.threshold, cfg.bands, cfg.rows)
        return LSHChoice(cfg.bands, cfg.rows, fp, fn)
    return optimal_params(cfg.threshold, num_perm, cfg.false_positive_weight, cfg.false_negative_weight)
