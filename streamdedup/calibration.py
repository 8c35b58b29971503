"""Calibration of Coates' LD estimate, fitted on Reuters-21578 (``make calibrate``, which runs
``streamdedup bench estimates --fit``).

The raw estimate ``LD(sig_a, sig_b) * C`` is right for block edits but several-fold too high
for scattered edits: one changed character disturbs the N windows around it, and whenever one
of those emits it costs a whole signature symbol, worth C characters in the raw estimate
(measured at C=16, N=4: raw/true = 5.9 for 1% scattered substitutions, 1.04-1.09 for
200-500 character blocks).

The correction reads the signature alignment. Scattered edits leave short runs of signature
edits; a block edit leaves a long run (a 200-character block is ~12 symbols at C=16). So a run
of ``k < LONG_RUN`` edits counts ``SHORT_RUN_FACTOR * C / N`` characters (a character edit
shows up in the signature with probability about N/C, so each short run stands for about C/N
edits), and a longer run counts ``k * C`` as Coates says. Fitted by least squares on held-out
Reuters pairs with scattered and block edits; the residual errors per edit kind are printed
by ``streamdedup bench estimates`` and quoted in the README.

Unrelated texts: the signature distance of two unrelated signatures of lengths n <= m is
close to ``m - UNRELATED_MATCH_RATE * n`` (chance matches of an optimal alignment), fitted
on random Reuters pairs. A pair is *related* when its raw estimate is below
``RELATED_FRACTION`` of that expectation; that fraction is the first percentile of unrelated
pairs, so about 1% of unrelated pairs look related by this test alone.
"""

from __future__ import annotations

import numpy as np

from . import _kernels
from .config import SignatureConfig

#: runs of at least this many signature edits are treated as block edits (k * C characters)
LONG_RUN = 5
#: a shorter run counts SHORT_RUN_FACTOR * C / N characters
SHORT_RUN_FACTOR = 0.65
#: chance matches per symbol of the shorter signature in an optimal alignment of unrelated texts
UNRELATED_MATCH_RATE = 0.21
#: raw / expected-unrelated below this means "related"
RELATED_FRACTION = 0.7


def run_lengths(sig_a: bytes, sig_b: bytes) -> tuple[int, np.ndarray]:
    """Signature edit distance and the lengths of the runs of consecutive edits."""
    a = np.frombuffer(sig_a, dtype=np.uint8)
    b = np.frombuffer(sig_b, dtype=np.uint8)
    runs = np.zeros(a.shape[0] + b.shape[0] + 1, dtype=np.int64)
    d, n_runs = _kernels.edit_runs(a, b, 0, runs)
    return int(d), runs[:n_runs]


def calibrated_from_runs(runs: np.ndarray, cfg: SignatureConfig) -> float:
    """Calibrated LD in characters from the edit-run lengths of a signature alignment."""
    runs = np.asarray(runs)
    long_runs = runs[runs >= LONG_RUN]
    n_short = runs.shape[0] - long_runs.shape[0]
    return float(long_runs.sum() * cfg.compression + n_short * SHORT_RUN_FACTOR * cfg.compression / cfg.neighbourhood)


def expected_unrelated_ld(length_a: int, length_b: int, cfg: SignatureConfig) -> float:
    """Expected raw LD estimate (characters) of two unrelated texts with these lengths.

    >>> from streamdedup.config import SignatureConfig
    >>> expected_unrelated_ld(1600, 1600, SignatureConfig())
    1264.0
    """
    short, long_ = sorted((length_a, length_b))
    return float(long_ - UNRELATED_MATCH_RATE * short)
