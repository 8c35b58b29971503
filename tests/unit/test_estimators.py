"""Estimators on top of the fingerprints: b-bit storage, containment, signature distances, LD."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from streamdedup import Fingerprinter, load_config
from streamdedup.sketch import signature
from streamdedup import _kernels as kern
from streamdedup.sketch.calibration import RELATED_FRACTION, expected_unrelated_ld
from streamdedup.config import SignatureConfig
from streamdedup.sketch.estimate import containment, jaccard, jaccard_bbit, pack_bbit, unpack_bbit

CFG = load_config(environ={})
FP = Fingerprinter(CFG.fingerprint)
SIG = CFG.fingerprint.signature
K = CFG.fingerprint.minhash.num_perm
BITS = [1, 2, 4, 8, 16, 32]

_gen = random.Random(99)
VOCAB = sorted({"".join(_gen.choice("bdfgklmnprstvz") + _gen.choice("aeiou") for _ in range(_gen.randint(1, 4))) for _ in range(4000)})


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = -1
    while size < chars:
        words.append(rng.choice(VOCAB))
        size += len(words[-1]) + 1
    return " ".join(words)


# ----------------------------------------------------------------------------- b-bit storage


@given(st.sampled_from(BITS), st.sampled_from([8, 64, 128, 1024]), st.integers(0, 2**32 - 1), st.sampled_from(["random", "zeros", "ones"]))
def test_bbit_pack_unpack_round_trip(bits: int, num_perm: int, seed: int, kind: str) -> None:
    if kind == "random":
        slots = np.random.default_rng(seed).integers(0, 2**32, num_perm, dtype=np.uint64).astype(np.uint32)
    else:
        slots = np.full(num_perm, 0 if kind == "zeros" else 0xFFFFFFFF, dtype=np.uint32)
    packed = pack_bbit(slots, bits)
    assert isinstance(packed, bytes) and len(packed) == num_perm * bits // 8
    back = unpack_bbit(packed, bits, num_perm)
    assert back.dtype == np.uint32 and back.shape == (num_perm,)
    assert back.tolist() == [int(s) & ((1 << bits) - 1) for s in slots]


def test_bbit_packing_is_little_endian_and_dense() -> None:
    slots = np.array([1, 2, 3, 0, 3, 2, 1, 0], dtype=np.uint32)
    assert pack_bbit(slots, 2) == bytes([0b00_11_10_01, 0b00_01_10_11])
    assert pack_bbit(np.array([0x12345678, 0xFFFFFFFF], np.uint32), 16) == bytes([0x78, 0x56, 0xFF, 0xFF])


@pytest.mark.parametrize("bits", [0, 3, 5, 64])
def test_pack_refuses_unsupported_widths(bits: int) -> None:
    with pytest.raises(ValueError, match="bits"):
        pack_bbit(np.zeros(128, np.uint32), bits)


@pytest.mark.parametrize("bits, n", [(1, 12), (2, 6), (4, 3)])
def test_pack_refuses_slot_counts_that_do_not_fill_bytes(bits: int, n: int) -> None:
    with pytest.raises(ValueError, match="cannot be packed"):
        pack_bbit(np.zeros(n, np.uint32), bits)


@pytest.mark.parametrize("bits", [0, 3, 5, 64])
def test_unpack_refuses_unsupported_widths(bits: int) -> None:
    """A corrupt bits byte in a stored record must not decode to garbage slots."""
    with pytest.raises(ValueError, match="bits"):
        unpack_bbit(bytes(128), bits, 128)


def _related_minhash(rng: random.Random, n_pairs: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(n_pairs):
        words = _text(rng, 2500).split()
        p = rng.uniform(0.0, 0.25)  # per-word replacement: Jaccard spread over ~0.2..1
        other = [rng.choice(VOCAB) if rng.random() < p else w for w in words]
        b = FP.fingerprint_batch([" ".join(words), " ".join(other)])
        out.append((b.minhash[0], b.minhash[1]))
    return out


@pytest.mark.parametrize("bits", BITS)
def test_bbit_jaccard_is_close_to_the_full_estimate(bits: int) -> None:
    """Reduced slots agree wherever full slots agree, and elsewhere by chance (c = 2^-b).

    Given the full estimate J on K slots, the b-bit estimate differs only through the chance
    matches among the (1 - J) K unequal slots: Binomial((1-J)K, c), which after the
    (m/K - c) / (1 - c) correction has sd sqrt((1 - J) c / (K (1 - c))). Allow 4.5 sd plus one
    slot for the clip at 0, and no bias over all pairs (4 sd of the mean).
    """
    rng = random.Random(bits)
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    c = 2.0**-bits
    diffs, sds = [], []
    for a, b in _related_minhash(rng, 60):
        full = jaccard(a, b)
        reduced = jaccard_bbit(a & mask, b & mask, bits)
        sd = math.sqrt((1 - full) * c / (K * (1 - c)))
        assert abs(reduced - full) <= 4.5 * sd + 1.0 / K, (bits, full, reduced)
        assert 0.0 <= reduced <= 1.0
        diffs.append(reduced - full)
        sds.append(sd)
    assert abs(float(np.mean(diffs))) <= 4 * math.sqrt(float(np.mean(np.square(sds))) / len(diffs)) + 1e-12


def test_bbit_jaccard_of_unrelated_slots_is_near_zero() -> None:
    """Random b-bit slots agree at the chance rate c; the correction removes it. Before the
    clip at 0 the estimate has mean 0 and sd sqrt(c / (K (1 - c))); after it, about a
    half-normal with mean ~0.4 sd. At b = 8 only ~0.5 chance matches are expected per pair, so
    the normal approximation is coarse: a couple of slots (1/K each) of slack cover the
    Poisson tail."""
    rng = np.random.default_rng(5)
    for bits in (1, 2, 8):
        c = 2.0**-bits
        sd = math.sqrt(c / (K * (1 - c)))
        ests = [jaccard_bbit(rng.integers(0, 2**bits, K).astype(np.uint32), rng.integers(0, 2**bits, K).astype(np.uint32), bits)
                for _ in range(300)]
        assert max(ests) <= 4.5 * sd + 3.0 / K, bits
        assert float(np.mean(ests)) <= 0.6 * sd + 1.0 / K, bits


# ----------------------------------------------------------------------------- containment


@given(st.integers(1, 5000), st.integers(1, 5000), st.data())
def test_containment_from_exact_jaccard_is_exact(n_a: int, n_b: int, data: st.DataObject) -> None:
    inter = data.draw(st.integers(0, min(n_a, n_b)))
    union = n_a + n_b - inter
    j = inter / union
    assert containment(j, n_a, n_b) == pytest.approx(inter / n_a, rel=1e-9, abs=1e-12)
    assert containment(j, n_b, n_a) == pytest.approx(inter / n_b, rel=1e-9, abs=1e-12)


def test_containment_edge_cases() -> None:
    assert containment(0.0, 10, 20) == 0.0
    assert containment(0.5, 0, 20) == 0.0
    assert containment(1.0, 10, 10) == 1.0
    # an over-estimated Jaccard never claims more than full containment
    assert containment(0.9, 10, 1000) == 1.0


def test_containment_estimate_on_constructed_sets() -> None:
    """A teaser's word set inside a story's: MinHash Jaccard + sizes give the containment."""
    rng = random.Random(17)
    errs = []
    for n_a, n_b, frac in ((150, 600, 1.0), (300, 600, 0.9), (400, 800, 0.5), (600, 600, 0.7)):
        for _ in range(10):
            pool = rng.sample(range(1, 2**62), n_a + n_b)
            inter = int(frac * n_a)
            a = pool[:n_a]
            b = pool[:inter] + pool[n_a:n_a + n_b - inter]
            true = inter / n_a
            out_a, out_b = np.empty(K, np.uint32), np.empty(K, np.uint32)
            kern.oph_minhash(np.array(a, np.uint64), n_a, K, K.bit_length() - 1, np.uint64(1), out_a)
            kern.oph_minhash(np.array(b, np.uint64), n_b, K, K.bit_length() - 1, np.uint64(1), out_b)
            est = containment(jaccard(out_a, out_b), n_a, n_b)
            # dC/dJ = (n_a + n_b) / (n_a (1 + J)^2): the Jaccard error scaled, 4.5 sd
            j = inter / (n_a + n_b - inter)
            sd = math.sqrt(max(j * (1 - j), 1.0 / K) / K) * (n_a + n_b) / (n_a * (1 + j) ** 2)
            assert abs(est - true) <= 4.5 * sd, (n_a, n_b, frac, est)
            errs.append(est - true)
    assert abs(float(np.mean(errs))) <= 0.05


# ----------------------------------------------------------------------------- signature distance

_SIG = st.binary(max_size=30) | st.text(alphabet="ab", max_size=30).map(str.encode)


@given(_SIG, _SIG, st.none() | st.integers(0, 40))
def test_signature_distance_is_bounded_levenshtein(a: bytes, b: bytes, bound: int | None) -> None:
    true = Levenshtein.distance(a, b)
    d = signature.distance(a, b, bound)
    if bound is None:
        assert d == true
    else:
        assert d == min(true, bound + 1)
    assert signature.distance(b, a, bound) == d


def test_signature_distance_refuses_a_negative_bound() -> None:
    with pytest.raises(ValueError, match="bound"):
        signature.distance(b"abc", b"abd", -1)


# ----------------------------------------------------------------------------- expected unrelated LD


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 10**5))
def test_expected_unrelated_ld_is_monotonic(a: int, b: int, step: int) -> None:
    f = lambda x, y: expected_unrelated_ld(x, y, SIG)  # noqa: E731
    short, long_ = sorted((a, b))
    assert f(a, b) == f(b, a)
    # a true edit distance lies between the length difference and the longer length
    assert long_ - short <= f(a, b) <= long_
    # more text on the longer side (or on both) means a larger expected distance
    assert f(short, long_ + step) > f(short, long_)
    assert f(a + step, a + step) > f(a, a)
    assert f(2 * a, 2 * b) == pytest.approx(2 * f(a, b))


def test_expected_unrelated_ld_does_not_depend_on_c() -> None:
    """It is in characters, so changing C (finer or coarser signatures) must not move it."""
    assert expected_unrelated_ld(1600, 3000, SignatureConfig(compression=8)) == expected_unrelated_ld(1600, 3000, SIG)


# ----------------------------------------------------------------------------- LD estimates


def _ld_pair(rng: random.Random, block: int) -> tuple:
    base = _text(rng, 3000)
    donor = _text(rng, block)[:block]
    pos = rng.randrange(len(base))
    edited = base[:pos] + donor + base[pos:]
    b = FP.fingerprint_batch([base, edited])
    true = Levenshtein.distance(b.canonical[0], b.canonical[1])
    est = signature.estimate(b.signatures[0], b.signatures[1], int(b.lengths[0]), int(b.lengths[1]), SIG)
    return true, est


@pytest.mark.parametrize("seed", range(25))
def test_ld_estimate_of_a_500_char_block_insertion(seed: int) -> None:
    """Coates: a block edit costs ~block/C signature symbols, so raw = C * LD(sig) tracks it."""
    true, est = _ld_pair(random.Random(seed), 500)
    longest = max(est.length_a, est.length_b)
    assert 480 <= true <= 520  # the canonical texts really differ by one ~500-char block
    assert abs(est.raw - true) <= 0.1 * longest, (true, est)
    assert abs(est.calibrated - true) <= 0.1 * longest, (true, est)
    assert est.raw == est.signature_distance * SIG.compression
    assert est.related and est.similarity > 0.8


def test_identical_texts_have_zero_estimated_ld() -> None:
    text = _text(random.Random(1), 3000)
    b = FP.fingerprint_batch([text, text.upper()])
    est = signature.estimate(b.signatures[0], b.signatures[1], int(b.lengths[0]), int(b.lengths[1]), SIG)
    assert (est.signature_distance, est.raw, est.calibrated, est.similarity) == (0, 0.0, 0.0, 1.0)


def test_unrelated_texts_are_not_related() -> None:
    rng = random.Random(1000)
    for _ in range(60):
        x, y = _text(rng, 3000), _text(rng, rng.randint(500, 3000))
        b = FP.fingerprint_batch([x, y])
        est = signature.estimate(b.signatures[0], b.signatures[1], int(b.lengths[0]), int(b.lengths[1]), SIG)
        assert not est.related, est
        assert est.raw >= RELATED_FRACTION * est.expected_unrelated
        assert est.similarity < 0.5
