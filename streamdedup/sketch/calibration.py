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
by ``streamdedup bench estimates`` and quoted in the README. Units are bytes of canonical
UTF-8 (the windows are N bytes); on scripts of several bytes per character a short run is
worth more (:func:`short_run_worth`, measured on Chinese by ``benchmarks/ld_chinese.py``);
block edits and the unrelated-pair model below hold on Chinese as fitted.

Unrelated texts: the signature distance of two unrelated signatures of lengths n <= m is
close to ``m - UNRELATED_MATCH_RATE * n`` (chance matches of an optimal alignment), fitted
on random Reuters pairs. A pair is *related* when its raw estimate is below
``RELATED_FRACTION`` of that expectation; that fraction is the first percentile of unrelated
pairs, so about 1% of unrelated pairs look related by this test alone.
"""

from __future__ import annotations

import numpy as np

from streamdedup import _kernels
from streamdedup.config import SignatureConfig

#: runs of at least this many signature edits are treated as block edits (k * C characters)
LONG_RUN = 5
#: a shorter run counts SHORT_RUN_FACTOR * C / N bytes on ASCII text (see short_run_worth)
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


def short_run_worth(cfg: SignatureConfig, bytes_per_char: float = 1.0) -> float:
    """Bytes of edit distance one short run of signature edits stands for.

    The window is N *bytes* of canonical UTF-8. A character of b bytes disturbs the N + b - 1
    windows holding any of its bytes, so a short run stands for about C / (N + b - 1)
    character edits of about b bytes each: ``SHORT_RUN_FACTOR * C * b / (N + b - 1)``. For
    ASCII (b = 1) that is the ``SHORT_RUN_FACTOR * C / N`` fitted on Reuters, to the bit. The
    engine's verification kernel (``_kernels.verify.ld_estimate``) takes b of the pair, both
    texts pooled: their UTF-8 bytes over their characters, which the fingerprint kernel counts
    and fingerprints, records and the arena carry. On Chinese (b ~ 2.8) the b = 1 worth is half the measured one: People's Daily pairs with
    0.5-3% character noise get a calibrated / true byte distance of 0.34-0.37 (median) with
    b = 1 and 0.64-0.70 with the pair's b, against 0.72-0.92 for English scattered edits, and
    SHORT_RUN_FACTOR refitted on Chinese is 1.85 with b = 1 and 0.96 with b, against 0.82 on
    English in the same run (``benchmarks/ld_chinese.py --fit``).

    >>> from streamdedup.config import SignatureConfig
    >>> short_run_worth(SignatureConfig()), short_run_worth(SignatureConfig(), 3.0)
    (2.6, 5.2)
    """
    if bytes_per_char < 1.0:
        raise ValueError(f"bytes_per_char must be >= 1 (UTF-8 bytes per character), got {bytes_per_char}")
    n = cfg.neighbourhood
    return SHORT_RUN_FACTOR * cfg.compression * bytes_per_char / (n + bytes_per_char - 1.0)


def calibrated_from_runs(runs: np.ndarray, cfg: SignatureConfig, bytes_per_char: float = 1.0) -> float:
    """Calibrated LD in bytes of canonical text from the edit-run lengths of a signature
    alignment; ``bytes_per_char`` is the texts' UTF-8 bytes per character (see :func:`short_run_worth`)."""
    runs = np.asarray(runs)
    long_runs = runs[runs >= LONG_RUN]
    n_short = runs.shape[0] - long_runs.shape[0]
    return float(long_runs.sum() * cfg.compression + n_short * short_run_worth(cfg, bytes_per_char))


def expected_unrelated_ld(length_a: int, length_b: int, cfg: SignatureConfig) -> float:
    """Expected raw LD estimate (characters) of two unrelated texts with these lengths.

    >>> from streamdedup.config import SignatureConfig
    >>> expected_unrelated_ld(1600, 1600, SignatureConfig())
    1264.0
    """
    short, long_ = sorted((length_a, length_b))
    return float(long_ - UNRELATED_MATCH_RATE * short)
