"""Keyed fingerprints (``fingerprint.secret``): SipHash held to its paper and its published
vector; every hash keyed (a dictionary built without the key finds nothing); fingerprints of
another key refused by name, never the secret itself; decisions as good as unkeyed ones."""

from __future__ import annotations

import random

import numpy as np
import orjson
import pytest

from streamdedup import ConfigError, IncompatibleFingerprintError, load_config
from streamdedup._kernels.anchors import ANCHOR_WINDOW, _span_key
from streamdedup._kernels.hashing import siphash64
from streamdedup.bench.feeds import mixed_records
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.evidence import NO_KEY, block_mask_of
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
from streamdedup.sketch.fingerprint import Fingerprinter, hash_key
from streamdedup.state import MemoryStore
from tests.reference import siphash64_ref, span_key_ref
from tests.unit.test_engine import story

SECRET = "a-long-random-deployment-secret-0123"


def _cfg(secret: str = SECRET, **env: str):
    return load_config(environ={"STREAMDEDUP_FINGERPRINT__SECRET": secret, **env})


def test_siphash_is_the_papers_and_gives_the_published_vector() -> None:
    k0, k1 = int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)), "little")
    m = int.from_bytes(bytes(range(8)), "little")
    assert siphash64(np.uint64(k0), np.uint64(k1), np.uint64(m)) == 0x93F5F5799A932462 == siphash64_ref(k0, k1, m)
    rng = random.Random(5)
    for _ in range(500):
        k0, k1, m = rng.getrandbits(64), rng.getrandbits(64), rng.getrandbits(64)
        assert int(siphash64(np.uint64(k0), np.uint64(k1), np.uint64(m))) == siphash64_ref(k0, k1, m)


def test_every_field_is_keyed_and_the_same_secret_gives_the_same_fingerprint() -> None:
    texts = [story(k, 200) for k in range(5)]
    plain = Fingerprinter(load_config().fingerprint).fingerprint_batch(texts)
    a = Fingerprinter(_cfg().fingerprint).fingerprint_batch(texts)
    b = Fingerprinter(_cfg().fingerprint).fingerprint_batch(texts)
    c = Fingerprinter(_cfg(SECRET[::-1]).fingerprint).fingerprint_batch(texts)
    def used(batch, name):
        if name == "anchors":  # the rows past anchor_n are not written
            return np.concatenate([batch.anchors[i, :batch.anchor_n[i]] for i in range(len(texts))])
        return getattr(batch, name)

    assert np.array_equal(a.anchor_n, plain.anchor_n)
    for name in ("minhash", "band_keys", "lead_keys", "char_keys", "anchors", "digest_words"):
        assert np.array_equal(used(a, name), used(b, name)), name
        assert not np.array_equal(used(a, name), used(plain, name)), name
        assert not np.array_equal(used(a, name), used(c, name)), name
    assert a.signatures != plain.signatures and a.signatures == b.signatures
    assert np.array_equal(a.n_shingles, plain.n_shingles) and a.canonical == plain.canonical


def test_a_dictionary_built_without_the_key_names_no_anchor() -> None:
    """The attack of benchmarks/reveal.py: hash the 40 bytes after every word start of a text
    and look the record's anchor keys up. Unkeyed, every anchor of the text is found; keyed, none."""
    text = " ".join(story(k, 60) + "." for k in range(6))
    for cfg, found in ((load_config(), True), (_cfg(), False)):
        batch = Fingerprinter(cfg.fingerprint).fingerprint_batch([text])
        canon = np.frombuffer(batch.canonical[0], np.uint8)
        guesses = {int(_span_key(canon, p, canon.shape[0], ANCHOR_WINDOW, *NO_KEY))
                   for p in range(canon.shape[0]) if p == 0 or canon[p - 1] == 32}
        anchors = set(batch.anchors[0, :batch.anchor_n[0]].tolist())
        assert len(anchors) >= 5
        assert (anchors <= guesses) if found else not (anchors & guesses)
    k0, k1, keyed = hash_key(_cfg().fingerprint)
    raw = bytes(canon)
    assert keyed and all(int(_span_key(canon, p, len(raw), ANCHOR_WINDOW, k0, k1, True)) == span_key_ref(raw, p, (int(k0), int(k1)))
                         for p in range(0, len(raw), 7))


def test_the_secret_never_travels_and_another_key_is_refused_by_its_id() -> None:
    ours, theirs = TextFingerprinter(_cfg()), TextFingerprinter(_cfg(SECRET + "-other"))
    plain = TextFingerprinter(load_config())
    assert "secret" not in plain.codec.params.settings  # unkeyed params (and states) read as before
    for fp in (ours, theirs):
        assert SECRET.encode() not in fp.announcement() and SECRET not in fp.codec.params.settings
    values = [b'{"id": "x", "text": "%s"}' % story(3, 120).encode()]
    with pytest.raises(IncompatibleFingerprintError, match="fingerprint.secret_id"):
        ours.codec.decode([theirs.announcement(), *theirs.records(values)])
    with pytest.raises(IncompatibleFingerprintError, match="fingerprint.secret_id"):
        ours.codec.decode([plain.announcement(), *plain.records(values)])
    assert len(ours.codec.decode(ours.records(values)).docs) == 1


@pytest.mark.parametrize("secret", ["short", "x" * 15])
def test_a_short_secret_is_refused_naming_the_setting(secret) -> None:
    with pytest.raises(ConfigError, match="fingerprint.secret"):
        _cfg(secret)


def test_keyed_decisions_find_the_copies_unkeyed_ones_find() -> None:
    """Keying changes which shingles hold each MinHash slot, as another seed would: the same
    copies are found, up to the estimates' own noise."""
    docs = [Document(k.decode(), orjson.loads(v)["text"], 1_700_000_000_000 + i)
            for i, (k, v) in enumerate(mixed_records(1500, duplicate_share=0.3, seed=8))]
    found = []
    for cfg in (load_config(), _cfg()):
        engine = Deduplicator(cfg, MemoryStore())
        dups = set()
        for lo in range(0, len(docs), 256):
            dups |= {d.id for d in engine.process(docs[lo:lo + 256]) if d.status in ("duplicate", "revision")}
        found.append(dups)
    plain, keyed = found
    assert len(plain) > 300 and len(plain ^ keyed) <= 0.02 * len(plain)


def test_boilerplate_blocks_are_found_with_the_keyed_anchors() -> None:
    """Exact evidence finds a text's blocks where its anchor keys start: keyed keys need the key."""
    notice = "This story is provided for information only and may not be republished without consent. "
    text = (notice + story(11, 80)).encode()
    for cfg in (load_config(), _cfg()):
        batch = Fingerprinter(cfg.fingerprint).fingerprint_batch([text.decode()])
        canon = np.frombuffer(batch.canonical[0], np.uint8)
        keys = batch.anchors[0, :batch.anchor_n[0]]
        hots = np.zeros(keys.shape[0], np.uint8)
        hots[0] = 255  # the notice's key, seen by many clusters
        mask = block_mask_of(canon, keys, hots, 3, hash_key(cfg.fingerprint))
        assert mask is not None and mask[0] == 1
        if hash_key(cfg.fingerprint)[2]:
            assert block_mask_of(canon, keys, hots, 3) is None  # without the key the keyed anchors are not found


def test_a_keyed_config_reaches_the_warm_up_workers_without_its_secret() -> None:
    from streamdedup.config import Config
    from streamdedup.warmup.workers import worker_job

    job = worker_job(_cfg(), ["fingerprint"])
    assert SECRET not in str(job)
    assert Config.model_validate(job["config"]).fingerprint.secret.get_secret_value() == ""
