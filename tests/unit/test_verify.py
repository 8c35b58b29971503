"""The verification kernel against the plain-Python rules, on pairs of every relation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamdedup import Fingerprinter, load_config
from streamdedup.sketch import record
from streamdedup.bench.synthetic import LONG_FOOTERS
from streamdedup.bench.zh_edits import char_noise
from streamdedup.engine.verify import Fingerprint, compare
from tests.reference import compare_ref
from tests.unit.test_calibration_bytes import han_text
from tests.unit.test_engine import story, typo

CFG = load_config()
FP = Fingerprinter(CFG.fingerprint)


def _pairs() -> list[tuple[str, str]]:
    base = story(1, 300)
    other = story(2, 300)
    rng = random.Random(4)
    zh = han_text(rng, 600)
    paras = [story(10 + k, 60) for k in range(4)]
    return [
        (base, base),
        (base, base.upper() + "  "),
        (base, typo(base, 3, 5)),
        (base, typo(base, 4, 60)),
        (base, base[: len(base) // 3]),
        (base[: len(base) // 2], base),
        (base[: len(base) // 4], base),
        (base, base + " " + story(3, 80)),
        (" ".join(paras), " ".join(paras[2:] + paras[:2])),
        (f"{story(5, 60)}\n{LONG_FOOTERS[0]}", f"{story(6, 60)}\n{LONG_FOOTERS[0]}"),
        (base, other),
        (base, ""),
        ("", ""),
        ("short text here", "short text there"),
        # several bytes per character: the LD calibration's short runs are worth more
        (zh, char_noise(zh, 0.02, rng)),
        (zh, char_noise(zh, 0.005, rng)),
        (zh, zh[: len(zh) // 3]),
        (zh, han_text(rng, 600)),
        (zh, base),
        (f"{base} {zh}", char_noise(f"{base} {zh}", 0.01, rng)),
    ]


def _fp(batch, i: int, bits: int) -> Fingerprint:
    if bits == 32:
        return Fingerprint.from_batch(batch, i)
    return Fingerprint.from_record(record.decode(record.encode(batch, i, bits), CFG.fingerprint.minhash.num_perm))


def _masks(rng: random.Random) -> list[np.ndarray | None]:
    few = np.zeros(128, dtype=bool)
    few[:10] = True  # below verify.min_informative_slots
    some = np.array([rng.random() < 0.7 for _ in range(128)])
    return [None, np.ones(128, dtype=bool), some, few]


@pytest.mark.parametrize("bits", [1, 4, 8, 16, 32])
def test_kernel_equals_reference_rules(bits: int) -> None:
    rng = random.Random(bits)
    checked = 0
    for a_text, b_text in _pairs():
        batch = FP.fingerprint_batch([a_text, b_text])
        a, b = _fp(batch, 0, bits), Fingerprint.from_batch(batch, 1)
        for mask in _masks(rng):
            for full in (False, True):
                for shared in (False, True):
                    got = compare(a, b, CFG.verify, CFG.fingerprint.signature, mask, full, shared)
                    want = compare_ref(a, b, CFG.verify, CFG.fingerprint.signature, mask, full, shared)
                    where = (a_text[:30], b_text[:30], bits, None if mask is None else int(mask.sum()), full, shared)
                    assert got.relation == want["relation"], where
                    assert got.is_duplicate == want["is_duplicate"], where
                    for name in ("jaccard", "containment_b_in_a", "containment_a_in_b", "embedding_similarity"):
                        assert getattr(got, name) == pytest.approx(want[name], rel=1e-12, abs=1e-12), (name, where)
                    assert (got.ld is None) == (want["ld"] is None), where
                    if got.ld is not None:
                        assert got.ld.signature_distance == want["ld"].signature_distance
                        for name in ("raw", "calibrated", "expected_unrelated", "similarity"):
                            assert getattr(got.ld, name) == pytest.approx(getattr(want["ld"], name), rel=1e-12), (name, where)
                    checked += 1
    assert checked == len(_pairs()) * 4 * 4


def test_every_relation_occurs_in_the_table() -> None:
    seen = set()
    for a_text, b_text in _pairs():
        batch = FP.fingerprint_batch([a_text, b_text])
        seen.add(compare(Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1), CFG.verify, CFG.fingerprint.signature).relation)
    assert seen >= {"exact", "near_duplicate", "contained_in", "contains", "unrelated"}


def test_reasons_name_the_deciding_estimate() -> None:
    base = story(1, 300)
    batch = FP.fingerprint_batch([base, typo(base, 3, 5), base[: len(base) // 3]])
    a = Fingerprint.from_batch(batch, 0)
    near = compare(a, Fingerprint.from_batch(batch, 1), CFG.verify, CFG.fingerprint.signature)
    assert near.reasons[0].startswith("Jaccard ") and near.reasons[0].endswith(">= 0.55")
    teaser = compare(a, Fingerprint.from_batch(batch, 2), CFG.verify, CFG.fingerprint.signature)
    assert teaser.relation == "contained_in" and teaser.reasons[0].startswith("containment of new in earlier")
