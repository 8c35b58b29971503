"""The short-run worth of the LD calibration on text of several UTF-8 bytes per character."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from streamdedup import Fingerprinter, calibration, load_config
from streamdedup.bench.edits import scattered
from streamdedup.bench.zh_edits import char_noise
from streamdedup.verify import Fingerprint, compare

CFG = load_config(environ={})
FP = Fingerprinter(CFG.fingerprint)
SIG = CFG.fingerprint.signature
_gen = random.Random(5)
# a skewed pool of common Han characters: real Chinese repeats a few hundred characters a lot
HAN = [chr(0x4E00 + _gen.randrange(0x5000)) for _ in range(600)]


def _han_text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while len(out) < chars:
        out.extend(rng.choices(HAN[: rng.choice((50, 600))], k=rng.randint(6, 20)))
        out.append(" ")  # clause breaks: punctuation canonicalises to a space
    return "".join(out).strip()


def _sums(texts_a: list[str], texts_b: list[str]) -> tuple[float, float, float]:
    """Sum of true byte distances, of calibrated estimates with b = 1 and with the pair's b."""
    ba, bb = FP.fingerprint_batch(texts_a, keep_canonical=True), FP.fingerprint_batch(texts_b, keep_canonical=True)
    true = flat = aware = 0.0
    for i in range(len(texts_a)):
        ca, cb = ba.canonical[i], bb.canonical[i]
        _, runs = calibration.run_lengths(ba.signatures[i], bb.signatures[i])
        b = (len(ca) + len(cb)) / (len(ca.decode()) + len(cb.decode()))
        true += Levenshtein.distance(ca, cb)
        flat += calibration.calibrated_from_runs(runs, SIG)
        aware += calibration.calibrated_from_runs(runs, SIG, b)
    return true, flat, aware


def test_bytes_per_char_one_is_the_kernel_rule() -> None:
    """b = 1 is the engine's verification kernel (SHORT_RUN_FACTOR * C / N), to the bit."""
    rng = random.Random(3)
    a = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(600))
    b = scattered(a, 0.02, rng)
    batch = FP.fingerprint_batch([a, b])
    fa, fb = Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1)
    _, runs = calibration.run_lengths(fa.signature, fb.signature)
    assert (runs < calibration.LONG_RUN).any()
    assert compare(fa, fb, CFG.verify, SIG, full=True).ld.calibrated == calibration.calibrated_from_runs(runs, SIG)


def test_han_character_noise_needs_the_byte_aware_worth() -> None:
    """A Han character (3 bytes) disturbs N + 2 windows: with b = 1 the calibrated estimate of
    2% character noise is about a third of the byte distance, with the text's b about 2/3 as
    on English scattered edits (benchmarks/ld_chinese.py measures it on People's Daily)."""
    rng = random.Random(11)
    texts = [_han_text(rng, 1500) for _ in range(20)]
    true, flat, aware = _sums(texts, [char_noise(t, 0.02, rng) for t in texts])
    assert flat / true < 0.5, (true, flat)
    assert 0.55 <= aware / true <= 1.3, (true, aware)


def test_ascii_estimate_does_not_move() -> None:
    rng = random.Random(12)
    texts = [" ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(300)) for _ in range(10)]
    true, flat, aware = _sums(texts, [scattered(t, 0.02, rng) for t in texts])
    assert flat == aware and flat > 0


def test_bytes_per_char_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="bytes_per_char"):
        calibration.short_run_worth(SIG, 0.5)
    assert np.isclose(calibration.short_run_worth(SIG, 3.0), 2 * calibration.short_run_worth(SIG))
