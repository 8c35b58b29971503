"""Choosing LSH bands and rows (the MinHash and LSH tutorial): the S-curve ``P(s) = 1 - (1 - s**r)**b``.

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


#: a best (bands, rows) whose cost the running products put this far below every other pair's
#: is the one the exact scan finds: their error (~1e-14) and the scan's tie margin (1e-12) are
#: far smaller; a closer call is left to the exact scan
_CLEAR_WIN = 1e-9


@lru_cache(maxsize=256)
def optimal_params(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> LSHChoice:
    """The (bands, rows) with ``bands * rows <= num_perm`` minimising the weighted error areas.

    Every pair's cost in bulk (:func:`_approximate_costs`, ~12 ms of CPU for 128 slots, where
    the pair-by-pair scan of :func:`_scan` took ~0.1 s of every process's start-up); the
    winner's areas are then computed as the scan computes them, so the choice is the scan's,
    to the bit (and a near tie is left to the scan).
    """
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    pairs, costs = _approximate_costs(threshold, num_perm, fp_weight, fn_weight)
    if len(costs) > 1:
        first, second = np.partition(costs, 1)[:2]
        if second - first <= _CLEAR_WIN:
            return _scan(threshold, num_perm, fp_weight, fn_weight)
    bands, rows = (int(x) for x in pairs[int(np.argmin(costs))])
    return LSHChoice(bands, rows, *_areas(threshold, bands, rows))


def _approximate_costs(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """(bands, rows) of every pair with ``bands * rows <= num_perm``, and their weighted error
    areas (the areas of :func:`_areas`, up to rounding), in the scan's order."""
    lo = np.linspace(0.0, threshold, _GRID)
    hi = np.linspace(threshold, 1.0, _GRID)
    s = np.concatenate([lo, hi])
    w_lo, w_hi = _trapezoid_weights(lo), _trapezoid_weights(hi)
    bands = np.concatenate([np.arange(1, num_perm // r + 1) for r in range(1, num_perm + 1)])
    rows = np.concatenate([np.full(num_perm // r, r) for r in range(1, num_perm + 1)])
    fp, fn = [], []
    for r in range(1, num_perm + 1):
        # (1 - s**r) ** b for b = 1..num_perm // r as running products: multiplications, not
        # powers (and row by row: np.cumprod down a broadcast column is ~5x slower)
        miss = np.empty((num_perm // r, len(s)))
        miss[0] = 1.0 - s**r
        for b in range(1, len(miss)):
            np.multiply(miss[b - 1], miss[0], out=miss[b])
        fp.append(w_lo.sum() - miss[:, :_GRID] @ w_lo)
        fn.append(miss[:, _GRID:] @ w_hi)
    costs = fp_weight * np.concatenate(fp) + fn_weight * np.concatenate(fn)
    order = np.lexsort((rows, bands))  # by bands, then rows: the scan's order
    return np.column_stack([bands, rows])[order], costs[order]


def _trapezoid_weights(x: np.ndarray) -> np.ndarray:
    """``w`` with ``y @ w == np.trapezoid(y, x)`` up to rounding."""
    w = np.zeros(len(x))
    d = np.diff(x) / 2.0
    w[:-1] += d
    w[1:] += d
    return w


def _scan(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> LSHChoice:
    """Every pair in turn, by bands then rows; a later pair wins only by more than 1e-12."""
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
