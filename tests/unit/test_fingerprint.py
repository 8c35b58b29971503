"""Properties of the public fingerprint API (issue 2, item 7)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup import Fingerprinter, IncompatibleFingerprintError, InputError, load_config
from streamdedup import record, signature
from streamdedup.bench.edits import exact_jaccard, word_shingles
from streamdedup.estimate import jaccard

FP = Fingerprinter(load_config().fingerprint)
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=9)


@given(st.lists(WORDS, min_size=1, max_size=60), st.integers(0, 3))
def test_formatting_variants_give_identical_fingerprints(words: list[str], style: int) -> None:
    plain = " ".join(words)
    if style == 0:
        variant = "  ".join(w.upper() for w in words)
    elif style == 1:
        variant = ", ".join(words) + "!"
    elif style == 2:
        variant = "<p>" + " ".join(words) + "</p>\n<br/>"
    else:
        variant = "\t" + " &amp; ".join(words) + "\n"
    b = FP.fingerprint_batch([plain, variant])
    assert b.digests[0] == b.digests[1]
    assert (b.minhash[0] == b.minhash[1]).all() and (b.band_keys[0] == b.band_keys[1]).all()
    assert b.signatures[0] == b.signatures[1] and b.lead_keys[0].tolist() == b.lead_keys[1].tolist()


def test_a_text_fingerprints_the_same_alone_or_in_any_batch() -> None:
    texts = ["Plain ASCII wire copy about oil prices.", "Café Zürich straße ＦＵＬＬ ｗｉｄｔｈ", "", "<p>html &amp; more</p>", "x " * 500]
    together = FP.fingerprint_batch(texts)
    for i, t in enumerate(texts):
        alone = FP.fingerprint_batch([t])
        assert alone.digests[0] == together.digests[i]
        assert (alone.minhash[0] == together.minhash[i]).all()
        assert alone.signatures[0] == together.signatures[i]


def test_unicode_forms_fold_together() -> None:
    b = FP.fingerprint_batch(["Straße in ＴＯＫＹＯ", "STRASSE in tokyo", "strasse   in Tokyo."])
    assert b.digests[0] == b.digests[1] == b.digests[2]


def _text(rng: random.Random, n_words: int) -> str:
    vocab = [f"w{k}" for k in range(3000)]
    return " ".join(rng.choice(vocab) for _ in range(n_words))


@pytest.mark.parametrize("seed", range(12))
def test_embedded_text_keeps_its_signature_except_at_the_ends(seed: int) -> None:
    """Coates' property 3: a text's signature survives embedding, but for a few end symbols."""
    rng = random.Random(seed)
    t = _text(rng, 400)
    outer = _text(rng, rng.randint(0, 300)) + " " + t + " " + _text(rng, rng.randint(0, 300))
    b = FP.fingerprint_batch([t, outer])
    emb = signature.embedding(b.signatures[0], b.signatures[1])
    # Only windows straddling the two boundaries (N - 1 bytes each side) can differ: each emits
    # with probability 1/C, so more than two differing symbols would be a bug.
    assert emb.distance <= 2, (emb, len(b.signatures[0]))
    assert len(b.signatures[0]) > 50


def _pair(rng: random.Random, target: float) -> tuple[str, str]:
    """Two texts whose word-shingle sets have about the given Jaccard."""
    base = _text(rng, 300).split()
    keep = int(len(base) * (2 * target / (1 + target)))
    a = base
    b = base[:keep] + _text(rng, len(base) - keep).split()
    return " ".join(a), " ".join(b)


@pytest.mark.parametrize("method", ["oph", "classic"])
def test_jaccard_estimate_is_within_tolerance(method: str) -> None:
    fp = Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__MINHASH__METHOD": method}).fingerprint)
    rng = random.Random(42)
    errs = []
    for target in (0.2, 0.35, 0.5, 0.65, 0.8, 0.95):
        for _ in range(12):
            a, b = _pair(rng, target)
            true = exact_jaccard(word_shingles(a, 5), word_shingles(b, 5))
            batch = fp.fingerprint_batch([a, b])
            est = jaccard(batch.minhash[0], batch.minhash[1])
            sd = math.sqrt(max(true * (1 - true), 0.01) / 128)
            assert abs(est - true) <= 4.5 * sd, (method, true, est)
            errs.append(abs(est - true))
    assert float(np.mean(errs)) <= 0.035


def test_band_keys_agree_exactly_when_their_slots_agree() -> None:
    rng = random.Random(7)
    r = FP.lsh.rows
    seen_equal = seen_differ = 0
    for target in (0.5, 0.7, 0.9):
        for _ in range(10):
            a, b = _pair(rng, target)
            batch = FP.fingerprint_batch([a, b])
            for band in range(FP.lsh.bands):
                slots_equal = bool((batch.minhash[0, band * r:(band + 1) * r] == batch.minhash[1, band * r:(band + 1) * r]).all())
                keys_equal = bool(batch.band_keys[0, band] == batch.band_keys[1, band])
                assert slots_equal == keys_equal
                seen_equal += slots_equal
                seen_differ += not slots_equal
    assert seen_equal > 50 and seen_differ > 50


def test_bad_input_gets_a_clear_error_or_a_defined_result() -> None:
    b = FP.fingerprint_batch(["", "  !!! ... ", "fine text here"])
    assert b.empty.tolist() == [True, True, False]
    assert (b.minhash[0] == 0xFFFFFFFF).all() and (b.band_keys[0] == 0).all()
    with pytest.raises(InputError, match="UTF-8"):
        FP.fingerprint_batch([b"\xff\xfe bad"])
    with pytest.raises(InputError, match="int"):
        FP.fingerprint_batch(["ok", 42])
    with pytest.raises(InputError, match="max_text_bytes"):
        Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__MAX_TEXT_BYTES": "100"}).fingerprint).fingerprint_batch(["x" * 101])
    with pytest.raises(InputError, match="UTF-8"):
        FP.fingerprint_batch(["lone \ud800 surrogate"])
    as_bytes = FP.fingerprint_batch(["Zürich news".encode("utf-8"), "Zürich news"])
    assert as_bytes.digests[0] == as_bytes.digests[1]
    huge = FP.fingerprint_batch([_text(random.Random(1), 100_000)])
    assert not huge.empty[0] and len(huge.signatures[0]) > 1000


def test_fingerprints_from_other_parameters_are_refused() -> None:
    other = Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__MINHASH__SEED": "2"}).fingerprint)
    same = Fingerprinter(load_config().fingerprint)
    assert same.params.key == FP.params.key
    FP.params.require_same(same.params)
    with pytest.raises(IncompatibleFingerprintError):
        FP.params.require_same(other.params)
    batch = other.fingerprint_batch(["a story"])
    data = record.encode(batch, 0, 8)
    with pytest.raises(IncompatibleFingerprintError):
        record.decode(data, 128, FP.params.key)


@settings(max_examples=25)
@given(st.lists(WORDS, min_size=20, max_size=400))
def test_record_round_trip_and_size(words: list[str]) -> None:
    text = " ".join(words)
    b = FP.fingerprint_batch([text])
    rec = record.decode(record.encode(b, 0, 8, 1234, 2, 99), 128, FP.params.key)
    assert (rec.digest, rec.length, rec.event_time_ms, rec.partition, rec.offset) == (b.digests[0], int(b.lengths[0]), 1234, 2, 99)
    assert rec.signature == b.signatures[0] and (rec.minhash == (b.minhash[0] & 0xFF)).all()
    if len(text) <= 3000:
        assert len(record.encode(b, 0, 8)) <= 600
