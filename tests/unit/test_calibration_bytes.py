"""The short-run worth of the LD calibration on text of several UTF-8 bytes per character, and
the character counts that carry it through the engine (arena, stored records, a restart, the
staged topology's fingerprint records)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from streamdedup import Fingerprinter, load_config
from streamdedup.sketch import calibration
from streamdedup.bench.edits import scattered
from streamdedup.bench.zh_edits import char_noise
from streamdedup.engine.deduplicator import Deduplicator, Document, Source
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.pipeline.fingerprints import FingerprintCodec, decide
from streamdedup.state import MemoryStore
from streamdedup.state.rocks import RocksStore
from streamdedup.engine.verify import Fingerprint, compare

CFG = load_config(environ={})
FP = Fingerprinter(CFG.fingerprint)
SIG = CFG.fingerprint.signature
_gen = random.Random(5)
# a skewed pool of common Han characters: real Chinese repeats a few hundred characters a lot
HAN = [chr(0x4E00 + _gen.randrange(0x5000)) for _ in range(600)]


def han_text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while len(out) < chars:
        out.extend(rng.choices(HAN[: rng.choice((50, 600))], k=rng.randint(6, 20)))
        out.append(" ")  # clause breaks: punctuation canonicalises to a space
    return "".join(out).strip()


def _sums(texts_a: list[str], texts_b: list[str]) -> tuple[float, float, float]:
    """Sum of true byte distances, of calibrated estimates with b = 1 and with the pair's b."""
    ba, bb = FP.fingerprint_batch(texts_a), FP.fingerprint_batch(texts_b)
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
    """On ASCII text (b = 1) the verification kernel is SHORT_RUN_FACTOR * C / N, to the bit."""
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
    texts = [han_text(rng, 1500) for _ in range(20)]
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


def test_the_verification_kernel_uses_the_pairs_bytes_per_char() -> None:
    """compare (the engine's kernel) counts a short run at the pair's b: both texts' UTF-8 bytes
    over both texts' characters, the characters counted by the fingerprint kernel."""
    rng = random.Random(13)
    a = han_text(rng, 1500)
    batch = FP.fingerprint_batch([a, char_noise(a, 0.02, rng)])
    fa, fb = Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1)
    ca, cb = batch.canonical
    assert (fa.chars, fb.chars) == (len(ca.decode()), len(cb.decode()))
    b = (len(ca) + len(cb)) / (fa.chars + fb.chars)
    assert b > 2.5
    _, runs = calibration.run_lengths(fa.signature, fb.signature)
    ld = compare(fa, fb, CFG.verify, SIG, full=True).ld
    assert ld.calibrated == pytest.approx(calibration.calibrated_from_runs(runs, SIG, b), rel=1e-12)
    assert ld.calibrated > 1.5 * calibration.calibrated_from_runs(runs, SIG)


def _zh_stream() -> list[Document]:
    rng = random.Random(21)
    docs: list[Document] = []
    for k in range(8):
        base = han_text(rng, 900)
        for text in (base, char_noise(base, 0.01, rng), char_noise(base, 0.03, rng), base[: len(base) // 2], f"{base} {k}"):
            docs.append(Document(f"z{k}-{len(docs)}", text, len(docs) * 1000))
    return docs


def _numbers(engine: Deduplicator, docs: list[Document], batch: int = 5) -> np.ndarray:
    return np.vstack([engine.process(docs[i:i + batch]).numbers for i in range(0, len(docs), batch)])


def test_chinese_estimates_survive_a_restart_and_the_staged_records(tmp_path) -> None:
    """The engine's reported LD similarities on Chinese copies are compare's (the pair's b), and
    the same after a restart (the arena rebuilt from stored records) and when the decider gets
    the fingerprints as records from a worker: every path carries the character counts."""
    docs = _zh_stream()
    whole = _numbers(Deduplicator(CFG, MemoryStore()), docs)
    first = Deduplicator(CFG, RocksStore(str(tmp_path / "s")))
    part = _numbers(first, docs[:17], batch=4)
    first.close()
    second = Deduplicator(CFG, RocksStore(str(tmp_path / "s")))
    part = np.vstack((part, _numbers(second, docs[17:], batch=3)))
    second.close()
    assert np.array_equal(part, whole, equal_nan=True)
    codec = FingerprintCodec(FP)
    staged = Deduplicator(CFG, MemoryStore())
    got = []
    for i in range(0, len(docs), 5):
        chunk = docs[i:i + 5]
        batch = FP.fingerprint_batch([d.text for d in chunk])
        values = codec.encode(batch, [d.id for d in chunk], np.array([d.event_time_ms for d in chunk]), [Source("news", 0)],
                              np.zeros(len(chunk), np.int64), np.arange(i, i + len(chunk)))
        got.append(decide(staged, codec.decode(values)).decisions.numbers)
    assert np.array_equal(np.vstack(got), whole, equal_nan=True)
    # the reported LD similarity is compare's for the pair, at the pair's bytes per character
    checked = 0
    engine = Deduplicator(CFG, MemoryStore())
    texts = {d.id: d.text for d in docs}
    for i in range(0, len(docs), 5):
        out = engine.process(docs[i:i + 5])
        for k in range(len(out)):
            d = out.decision(k)
            if d.status != "duplicate" or d.relation == "exact" or np.isnan(out.numbers[k][1]):
                continue
            batch = FP.fingerprint_batch([texts[d.matched], texts[d.id]])
            want = compare(Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1), CFG.verify, SIG, full=True)
            assert float(out.numbers[k][1]) == pytest.approx(want.ld_similarity, rel=1e-6), d
            checked += 1
    assert checked >= 8


def test_a_state_of_the_previous_record_version_is_refused() -> None:
    store = MemoryStore()
    Deduplicator(CFG, store).process([Document("a", han_text(random.Random(2), 300), 0)])
    seq, raw = next(store.iter_from(0))
    store._records[seq] = bytes([3]) + raw[1:]  # engine record version 3: no character count
    with pytest.raises(IncompatibleFingerprintError, match="new state directory"):
        Deduplicator(CFG, store)
