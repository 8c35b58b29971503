"""LSH bands and rows from the threshold and the error weights (datasketch ``_optimal_param``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamdedup import Fingerprinter, load_config
from streamdedup.config import LSHConfig
from streamdedup.sketch.lsh import _approximate_costs, _areas, _scan, candidate_probability, choose, optimal_params

WEIGHTS = [(0.5, 0.5), (0.2, 0.8), (0.8, 0.2), (1.0, 0.0), (0.0, 1.0)]


def _all_pairs(num_perm: int) -> list[tuple[int, int]]:
    return [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm + 1) if b * r <= num_perm]


@pytest.mark.parametrize("threshold", [0.1, 0.3, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("num_perm", [8, 16])
def test_optimal_params_is_the_brute_force_minimum(threshold: float, weights: tuple[float, float], num_perm: int) -> None:
    w_fp, w_fn = weights
    best = optimal_params(threshold, num_perm, w_fp, w_fn)
    assert 1 <= best.bands and 1 <= best.rows and best.bands * best.rows <= num_perm
    assert (best.false_positive_area, best.false_negative_area) == pytest.approx(_areas(threshold, best.bands, best.rows))
    best_cost = w_fp * best.false_positive_area + w_fn * best.false_negative_area
    costs = {(b, r): w_fp * fp + w_fn * fn for (b, r) in _all_pairs(num_perm) for fp, fn in [_areas(threshold, b, r)]}
    assert best_cost <= min(costs.values()) + 1e-12
    # ties go to fewer bands (index memory and lookups)
    tied = [b for (b, r), c in costs.items() if c <= best_cost + 1e-12]
    assert best.bands == min(tied)


@pytest.mark.parametrize("threshold", [0.1, 0.37, 0.5, 0.65, 0.9])
@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("num_perm", [32, 128])
def test_optimal_params_is_the_pair_by_pair_scan_to_the_bit(threshold: float, weights: tuple[float, float], num_perm: int) -> None:
    """The bulk costs pick the scan's pair with the scan's areas; (1.0, 0.0) has near ties (every
    pair with many rows has a false-positive area under 1e-12), which go to the scan itself."""
    assert optimal_params.__wrapped__(threshold, num_perm, *weights) == _scan(threshold, num_perm, *weights)


def test_bulk_costs_are_the_areas_up_to_rounding() -> None:
    pairs, costs = _approximate_costs(0.45, 32, 0.3, 0.7)
    assert [tuple(p) for p in pairs.tolist()] == _all_pairs(32)
    exact = [0.3 * fp + 0.7 * fn for b, r in _all_pairs(32) for fp, fn in [_areas(0.45, b, r)]]
    assert np.abs(costs - exact).max() < 1e-13


def test_default_config_gives_31_bands_of_3_rows() -> None:
    """The weights' comment in config.py and the record layout (31 + 10 bands) rely on this."""
    fp = Fingerprinter(load_config(environ={}).fingerprint)
    assert (fp.lsh.bands, fp.lsh.rows) == (31, 3)
    assert float(candidate_probability(0.5, 31, 3)) == pytest.approx(0.98, abs=0.005)


def test_areas_match_their_definition() -> None:
    """FP = integral of P over [0, t], FN = integral of 1 - P over [t, 1] (closed forms for b=r=1)."""
    fp, fn = _areas(0.4, 1, 1)  # P(s) = s
    assert fp == pytest.approx(0.4**2 / 2) and fn == pytest.approx((1 - 0.4) ** 2 / 2)
    fp, fn = _areas(0.5, 1, 2)  # P(s) = s^2
    assert fp == pytest.approx(0.5**3 / 3, rel=1e-6) and fn == pytest.approx(0.5 - (1 - 0.5**3) / 3, rel=1e-6)


@given(st.integers(1, 64), st.integers(1, 16))
def test_s_curve_is_monotonic(bands: int, rows: int) -> None:
    s = np.linspace(0.0, 1.0, 401)
    p = candidate_probability(s, bands, rows)
    assert p[0] == 0.0 and p[-1] == 1.0
    assert np.all(np.diff(p) >= 0.0)
    assert np.all((p >= 0.0) & (p <= 1.0))
    # more bands: more candidates; more rows: fewer
    assert np.all(candidate_probability(s, bands + 1, rows) >= p)
    assert np.all(candidate_probability(s, bands, rows + 1) <= p)


@given(st.floats(0.05, 0.95), st.integers(1, 64), st.integers(1, 16))
def test_candidate_probability_matches_the_formula(s: float, bands: int, rows: int) -> None:
    assert float(candidate_probability(s, bands, rows)) == pytest.approx(1 - (1 - s**rows) ** bands, abs=1e-12)


def test_choose_honours_an_explicit_override() -> None:
    cfg = LSHConfig(threshold=0.4, bands=10, rows=4)
    choice = choose(cfg, 128)
    assert (choice.bands, choice.rows) == (10, 4)
    assert (choice.false_positive_area, choice.false_negative_area) == pytest.approx(_areas(0.4, 10, 4))
    assert (choice.bands, choice.rows) != (optimal_params(0.4, 128, 0.2, 0.8).bands, optimal_params(0.4, 128, 0.2, 0.8).rows)
    fp = Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__LSH__BANDS": "10", "STREAMDEDUP_FINGERPRINT__LSH__ROWS": "4"}).fingerprint)
    assert (fp.lsh.bands, fp.lsh.rows) == (10, 4)
    assert fp.fingerprint_batch(["some text to band"]).band_keys.shape == (1, 10)


def test_choose_without_override_is_optimal_params() -> None:
    cfg = LSHConfig(threshold=0.6, false_positive_weight=0.3, false_negative_weight=0.7)
    assert choose(cfg, 64) == optimal_params(0.6, 64, 0.3, 0.7)


@pytest.mark.parametrize("num_perm", [16, 128])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.2, 0.8)])
def test_steepest_point_moves_up_with_the_threshold(num_perm: int, weights: tuple[float, float]) -> None:
    thresholds = np.round(np.arange(0.05, 0.96, 0.05), 2)
    steepest = [optimal_params(float(t), num_perm, *weights).threshold_estimate for t in thresholds]
    assert all(b >= a for a, b in zip(steepest, steepest[1:])), steepest
    assert steepest[-1] > steepest[0] + 0.5


def test_recall_weight_lowers_the_steepest_point() -> None:
    """Weighting missed duplicates more pulls the S-curve left (more candidates at the threshold)."""
    for t in (0.3, 0.5, 0.7):
        recall = optimal_params(t, 128, 0.2, 0.8)
        precision = optimal_params(t, 128, 0.8, 0.2)
        assert recall.threshold_estimate < precision.threshold_estimate
        assert candidate_probability(t, recall.bands, recall.rows) > candidate_probability(t, precision.bands, precision.rows)
        assert recall.false_negative_area < precision.false_negative_area


@pytest.mark.parametrize("threshold", [0.0, 1.0, -0.1, 1.5])
def test_threshold_outside_0_1_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        optimal_params(threshold, 16)
