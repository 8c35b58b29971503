"""Fingerprint records (``pipeline.fingerprints``): the Numba encoder and decoder against a plain
Python reference, round trips, decisions on decoded fingerprints equal to the engine's own,
and clear errors for records of other params, other versions, cut short or garbled."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup import load_config
from streamdedup.bench.feeds import mixed_records
from streamdedup.engine.deduplicator import Deduplicator, Source
from streamdedup.errors import FingerprintRecordError, IncompatibleFingerprintError
from streamdedup.sketch.estimate import pack_bbit, unpack_bbit
from streamdedup.sketch.fingerprint import MAX_SIGNATURE_SYMBOLS, Fingerprinter
from streamdedup.sketch.evidence_sketch import SKETCH_BYTES
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.decide import FingerprintAndDecide
from streamdedup.pipeline.fingerprints import KIND_DEAD, KIND_FINGERPRINT, KIND_PARAMS, FingerprintCodec, decide
from streamdedup.state import MemoryStore
from tests.reference import evidence_sketch_ref
from tests.unit.test_engine import story, typo

EVERY_BYTE_ID = "".join(chr(c) for c in range(256)) + "\U0001f600"
TEXTS = [story(1), "", typo(story(1), 2), "Ünïcode wörds in a störy about nothing", story(3, 900),
         "i " * 40_000, "!!! ... ???", "国家主席江泽民发表新年讲话" * 10]
IDS = ["a", "empty", "b-\u00e9", EVERY_BYTE_ID, "c" * 1024, "repetitive", "punctuation only", "zh"]
SOURCES = [Source("news", 0), Source("nachrichten-\u00fc", 7), Source("news", 2**31 - 1)]


def cfg(**env: str):
    return load_config(environ={f"STREAMDEDUP_{k}": v for k, v in env.items()})


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _signed(v: int) -> bytes:
    return _varint((v << 1) if v >= 0 else ((-v) << 1) - 1)


def reference_encode(codec: FingerprintCodec, batch, i: int, doc_id: str, time: int, source: Source, offset: int,
                     with_text: bool = True) -> bytes:
    """The layout of ``pipeline.fingerprints`` written field by field (version 5 without text,
    ending with the text's evidence sketches as the reference computes them)."""
    idb, topic = doc_id.encode(), source.topic.encode()
    sig = batch.signatures[i]
    empty = bool(batch.empty[i])
    parts = [bytes([4 if with_text else 5, KIND_FINGERPRINT]), codec.key.to_bytes(4, "little"), _varint(len(topic)), topic,
             _varint(source.partition), _signed(offset), bytes([(1 if empty else 0) | (0 if with_text else 2)]), batch.digests[i],
             _varint(len(idb)), idb, _signed(time), _varint(int(batch.lengths[i])),
             _varint(int(batch.lengths[i] - batch.chars[i])), _varint(int(batch.n_shingles[i])),
             _varint(len(sig))]
    m = int(batch.anchor_n[i])
    parts += [_varint(m)] + [int(k).to_bytes(4, "little") for k in batch.anchors[i, :m]]
    if not empty:
        parts.append(pack_bbit(batch.minhash[i], codec.bits))
        keys = batch.index_keys[i]
        parts += [int(k).to_bytes(4, "little") for k in keys]
    parts.append(sig)
    s = int(batch.canon_start[i])
    text = batch.canon_buf[s:s + int(batch.lengths[i])].tobytes()
    if with_text:
        parts.append(text)
    else:
        key = codec.fp.hash_key
        parts += [bytes(half) for half in evidence_sketch_ref(text, (int(key[0]), int(key[1])) if key[2] else None)]
    return b"".join(parts)


class _Reader:
    def __init__(self, data: bytes, pos: int):
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def varint(self) -> int:
        v = shift = 0
        while True:
            c = self.data[self.pos]
            self.pos += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v
            shift += 7

    def signed(self) -> int:
        u = self.varint()
        return (u >> 1) ^ -(u & 1)


def reference_decode(codec: FingerprintCodec, data: bytes) -> dict:
    """A fingerprint record's fields, read in plain Python."""
    assert data[0] in (4, 5) and data[1] == KIND_FINGERPRINT and int.from_bytes(data[2:6], "little") == codec.key
    r = _Reader(data, 6)
    out: dict = {"topic": r.take(r.varint()).decode(), "partition": r.varint(), "offset": r.signed()}
    flags = r.take(1)[0]
    assert flags < 4 and (flags & 2 == 2) == (data[0] == 5)
    out["empty"], out["no_text"] = flags & 1 == 1, flags & 2 == 2
    out["digest"] = r.take(16)
    out["id"] = r.take(r.varint()).decode()
    out["time"], out["length"] = r.signed(), r.varint()
    out["chars"] = out["length"] - r.varint()
    out["n_shingles"], n_sig = r.varint(), r.varint()
    out["anchors"] = np.frombuffer(r.take(4 * r.varint()), "<u4").astype(np.uint32)
    k, bands = codec.num_perm, codec.bands + codec.lead_bands + codec.char_bands
    if out["empty"]:
        out["minhash"], out["keys"] = None, None
    else:
        out["minhash"] = unpack_bbit(r.take(k * codec.bits // 8), codec.bits, k)
        out["keys"] = np.frombuffer(r.take(4 * bands), "<u4").astype(np.uint64)
    out["signature"] = r.take(n_sig)
    out["text"] = None if out["no_text"] else r.take(out["length"])
    out["sketch"] = r.take(SKETCH_BYTES) if out["no_text"] else None
    assert r.pos == len(data)
    return out


def _encode(codec, texts=TEXTS, ids=IDS, with_text=True):
    batch = codec.fp.fingerprint_batch(texts)
    n = len(texts)
    times = np.array([-5, 0, 1, 2**40, -(2**62), 7, 8, 9][:n], np.int64)
    source_index = np.arange(n) % len(SOURCES)
    offsets = np.array([0, -1, 2**62, 5, 6, 7, 8, 9][:n], np.int64)
    values = codec.encode(batch, ids, times, SOURCES, source_index, offsets, with_text)
    return batch, times, source_index, offsets, values


@pytest.mark.parametrize("env", [{}, {"FINGERPRINT__MINHASH__STORAGE_BITS": "1"}, {"FINGERPRINT__MINHASH__STORAGE_BITS": "4"},
                                 {"FINGERPRINT__MINHASH__STORAGE_BITS": "16"}, {"FINGERPRINT__MINHASH__STORAGE_BITS": "32"},
                                 {"FINGERPRINT__LEAD__SHINGLES": "0"}])
@pytest.mark.parametrize("with_text", [True, False])
def test_kernels_match_the_reference_and_round_trip(env, with_text) -> None:
    codec = FingerprintCodec(Fingerprinter(cfg(**env).fingerprint))
    batch, times, source_index, offsets, values = _encode(codec, with_text=with_text)
    assert batch.fine_len.max() == MAX_SIGNATURE_SYMBOLS, "the repetitive text reaches the signature cap"
    assert batch.empty[1] and batch.empty[6] and not batch.empty[0]
    for i, v in enumerate(values):
        assert v == reference_encode(codec, batch, i, IDS[i], int(times[i]), SOURCES[source_index[i]], int(offsets[i]),
                                     with_text)
    dec = codec.decode(values)
    assert dec.no_text.tolist() == [not with_text] * len(values)
    assert dec.kinds.tolist() == [KIND_FINGERPRINT] * len(values) and dec.docs.tolist() == list(range(len(values)))
    assert list(dec.ids) == IDS and dec.times.tolist() == times.tolist() and not dec.dead
    assert [dec.source_of(k) for k in range(len(values))] == [(SOURCES[s], int(o)) for s, o in zip(source_index, offsets)]
    mask = np.uint32((1 << codec.bits) - 1) if codec.bits < 32 else np.uint32(0xFFFFFFFF)
    b = dec.batch
    assert b.params == codec.params and b.digests == batch.digests and b.signatures == batch.signatures
    assert batch.chars[7] * 3 == batch.lengths[7] and batch.chars[0] == batch.lengths[0] > 0
    for name in ("lengths", "chars", "n_shingles", "empty"):
        assert np.array_equal(getattr(b, name), getattr(batch, name)), name
    live = ~batch.empty
    assert np.array_equal(b.minhash[live], batch.minhash[live] & mask)
    assert np.array_equal(b.band_keys, batch.band_keys & np.uint64(0xFFFFFFFF))
    assert np.array_equal(b.lead_keys, batch.lead_keys & np.uint64(0xFFFFFFFF))
    assert np.array_equal(b.char_keys, batch.char_keys & np.uint64(0xFFFFFFFF))
    assert np.array_equal(b.anchor_n, batch.anchor_n) and batch.anchor_n.max() > 1
    for i, v in enumerate(values):  # the kernel decoder against the reference decoder
        ref = reference_decode(codec, v)
        got = (dec.ids[i], dec.times[i], b.lengths[i], b.chars[i], b.n_shingles[i])
        assert (ref["id"], ref["time"], ref["length"], ref["chars"], ref["n_shingles"]) == got
        assert ref["signature"] == b.signatures[i] and ref["digest"] == b.digests[i] and ref["empty"] == b.empty[i]
        assert np.array_equal(ref["anchors"], b.anchors[i, :b.anchor_n[i]])
        assert np.array_equal(ref["anchors"], batch.anchors[i, :batch.anchor_n[i]])
        if with_text:
            text = b.canon_buf[b.canon_start[i]:b.canon_start[i] + b.lengths[i]].tobytes()
            assert ref["text"] == text == codec.fp.fingerprint_batch([TEXTS[i]]).canonical[0]
        else:
            assert ref["text"] is None and ref["sketch"] == b.evidence_sketch[i].tobytes()
        if not ref["empty"]:
            assert np.array_equal(ref["minhash"], b.minhash[i])
            assert np.array_equal(ref["keys"], np.hstack((b.band_keys[i], b.lead_keys[i], b.char_keys[i])))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=300), st.text(min_size=0, max_size=40), st.integers(-(2**63), 2**63 - 1),
                          st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1), st.text(min_size=1, max_size=20)),
                min_size=0, max_size=12))
def test_random_batches_round_trip(rows) -> None:
    codec = _codec()
    texts = [t.encode("utf-8", "replace").decode() for t, *_ in rows]
    ids = [i.encode("utf-8", "replace").decode() for _, i, *_ in rows]
    sources = [Source(r[5].encode("utf-8", "replace").decode(), r[3]) for r in rows]
    batch = codec.fp.fingerprint_batch(texts)
    times = np.array([r[2] for r in rows], np.int64)
    offsets = np.array([r[4] for r in rows], np.int64)
    values = codec.encode(batch, ids, times, sources, np.arange(len(rows)), offsets)
    dec = codec.decode(values)
    assert list(dec.ids) == ids and dec.times.tolist() == times.tolist()
    assert [dec.source_of(k) for k in range(len(rows))] == list(zip(sources, offsets.tolist()))
    assert dec.batch.signatures == batch.signatures and dec.batch.digests == batch.digests
    assert np.array_equal(dec.batch.n_shingles, batch.n_shingles)
    assert np.array_equal(dec.batch.chars, batch.chars)


_CODEC: list[FingerprintCodec] = []


def _codec() -> FingerprintCodec:
    if not _CODEC:
        _CODEC.append(FingerprintCodec(Fingerprinter(load_config().fingerprint)))
    return _CODEC[0]


def _stream(n: int) -> list[bytes]:
    """A realistic stream with a few records prepare refuses."""
    values = [v for _, v in mixed_records(n, duplicate_share=0.3, seed=4)]
    for k, bad in [(17, b"not json"), (500, b""), (901, b'{"id": "x"}'), (1400, b'{"id": "y", "text": 5}')]:
        values.insert(k, bad)
    return values


def test_decisions_on_decoded_fingerprints_equal_the_engines(tmp_path) -> None:
    """A worker's records (encode_prepared), decoded and decided, give the decisions and the
    stored records of the engine deciding the texts itself, over a stream with duplicates."""
    c = load_config()
    preparer = Preparer(c)
    direct, staged = Deduplicator(c, MemoryStore()), Deduplicator(c, MemoryStore())
    codec = FingerprintCodec(Fingerprinter(c.fingerprint))
    values = _stream(2000)
    src = [Source("news", 0), Source("news", 1)]
    part = np.arange(len(values)) % 2
    offs = np.arange(len(values), dtype=np.int64) + 100
    dups = dead_seen = 0
    for lo in range(0, len(values), 256):
        chunk = values[lo:lo + 256]
        n = len(chunk)
        data, scan = preparer.scan_values(chunk)
        prep = preparer.prepare(data, scan, 0, n, lambda k: f"news:{k}", 1_700_000_000_000)
        ids, texts, times = prep.gather()
        sids = np.array([direct.source_id(src[p]) for p in part[lo:lo + n][prep.docs]], np.int64)
        want = FingerprintAndDecide(direct)(ids, texts, times, sids, offs[lo:lo + n][prep.docs]).decisions
        dec = codec.decode(codec.encode_prepared(prep, src, part[lo:lo + n], offs[lo:lo + n]))
        assert dec.docs.tolist() == prep.docs.tolist()
        assert dec.dead == prep.dead
        assert [dec.source_of(k) for k in dec.dead] == [(src[part[lo + k]], offs[lo + k]) for k in prep.dead]
        got = decide(staged, dec).decisions
        assert list(got) == list(want)
        dups += sum(d.status in ("duplicate", "revision") for d in want)
        dead_seen += len(dec.dead)
    assert dups > 400 and dead_seen == 4
    assert staged.store._records == direct.store._records and staged.meta.dumps() == direct.meta.dumps()


def test_dead_letters_and_announcements_between_fingerprints() -> None:
    codec = _codec()
    batch, times, source_index, offsets, values = _encode(codec, TEXTS[:2], IDS[:2])
    dead = codec.encode_dead(Source("in-\u00fc", 3), 41, "json", "not a JSON object: \u00e9")
    dec = codec.decode([codec.encode_params(), values[0], dead, values[1]])
    assert dec.kinds.tolist() == [KIND_PARAMS, KIND_FINGERPRINT, KIND_DEAD, KIND_FINGERPRINT]
    assert dec.docs.tolist() == [1, 3] and list(dec.ids) == IDS[:2] and len(dec.batch) == 2
    assert dec.dead[2].stage == "json" and dec.dead[2].reason == "not a JSON object: \u00e9"
    assert dec.source_of(2) == (Source("in-\u00fc", 3), 41) and dec.source_of(0) is None
    assert len(codec.decode([])) == 0


def test_records_of_other_params_are_refused_naming_the_setting() -> None:
    mine = _codec()
    theirs = FingerprintCodec(Fingerprinter(cfg(FINGERPRINT__SHINGLE__SIZE="4").fingerprint))
    _, _, _, _, values = _encode(theirs, TEXTS[:1], IDS[:1])
    with pytest.raises(IncompatibleFingerprintError, match="worker's settings are unknown"):
        FingerprintCodec(mine.fp).decode(values)
    with pytest.raises(IncompatibleFingerprintError, match=r"fingerprint\.shingle\.size: 5 vs 4"):
        FingerprintCodec(mine.fp).decode(values + [theirs.encode_params()])
    with pytest.raises(IncompatibleFingerprintError, match=r"fingerprint\.shingle\.size: 5 vs 4"):
        FingerprintCodec(mine.fp).decode([theirs.encode_params()])
    dead = theirs.encode_dead(Source("t"), 1, "json", "x")
    with pytest.raises(IncompatibleFingerprintError):
        FingerprintCodec(mine.fp).decode([dead])


def test_the_engine_refuses_a_batch_of_other_params() -> None:
    engine = Deduplicator(load_config(), MemoryStore())
    batch = Fingerprinter(cfg(FINGERPRINT__MINHASH__SEED="3").fingerprint).fingerprint_batch(["a story of some words here"])
    with pytest.raises(IncompatibleFingerprintError, match=r"fingerprint\.minhash\.seed: \d+ vs 3"):
        engine.run_fingerprinted(["a"], batch, np.zeros(1, np.int64), np.full(1, -1), np.zeros(1, np.int64))
    ok = Fingerprinter(load_config().fingerprint).fingerprint_batch(["a story of some words here"])
    with pytest.raises(ValueError, match="shapes"):
        engine.run_fingerprinted(["a", "b"], ok, np.zeros(2, np.int64), np.full(2, -1), np.zeros(2, np.int64))
    assert engine.meta.next_seq == 0


def test_unknown_version_and_non_bytes_are_named() -> None:
    codec = _codec()
    _, _, _, _, values = _encode(codec, TEXTS[:2], IDS[:2])
    with pytest.raises(FingerprintRecordError, match="record 1 has codec version 1, this streamdedup reads versions 4 and 5") as err:
        codec.decode([values[0], b"\x01" + values[1][1:]])
    assert err.value.index == 1
    with pytest.raises(FingerprintRecordError, match="record 1 is NoneType"):
        codec.decode([values[0], None])  # type: ignore[list-item]


def _all_kinds(codec: FingerprintCodec) -> list[bytes]:
    _, _, _, _, values = _encode(codec, TEXTS[:2] + TEXTS[3:4], IDS[:2] + IDS[3:4])
    _, _, _, _, text_free = _encode(codec, TEXTS[:2] + TEXTS[3:4], IDS[:2] + IDS[3:4], with_text=False)
    return values + text_free + [codec.encode_dead(Source("news", 1), 9, "json", "bad"), codec.encode_params()]


def test_the_text_flag_and_the_version_go_together() -> None:
    """A version 4 record that says it has no text, or a version 5 record that says it has,
    is garbled: the decoder would read the next record's bytes as its text, or a text as trailing."""
    codec = _codec()
    with_text, without = _encode(codec, TEXTS[:1], IDS[:1])[4][0], _encode(codec, TEXTS[:1], IDS[:1], with_text=False)[4][0]
    flag = 6 + 1 + len(SOURCES[0].topic.encode()) + 1 + 1  # head, topic, partition, offset
    for value, version in ((with_text, 5), (without, 4)):
        with pytest.raises(FingerprintRecordError, match="out of range"):
            codec.decode([bytes([version]) + value[1:]])
    assert without[flag] == 2 and with_text[flag] == 0
    with pytest.raises(FingerprintRecordError, match="out of range"):
        codec.decode([with_text[:flag] + b"\x02" + with_text[flag + 1:]])


def test_every_truncation_and_any_trailing_byte_is_an_error() -> None:
    codec = _codec()
    for k, value in enumerate(_all_kinds(codec)):
        for cut in range(len(value)):
            with pytest.raises(FingerprintRecordError) as err:
                codec.decode([value[:cut]])
            assert err.value.index == 0, (k, cut)
        with pytest.raises(FingerprintRecordError, match="bytes after its last field|cut short"):
            codec.decode([value + b"\0"])


def test_garbled_records_raise_or_decode_but_never_crash() -> None:
    """Random damage to the structure (lengths, counts, flags) is caught; the decoder never
    reads outside the buffer. A flipped payload bit (MinHash, signature) is not detectable
    without a checksum: then the record decodes, to the damaged values."""
    codec = _codec()
    values = _all_kinds(codec)
    rng = random.Random(3)
    caught = decoded = 0
    for _ in range(3000):
        v = bytearray(rng.choice(values))
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(6, len(v)) if rng.random() < 0.9 else rng.randrange(len(v))
            v[pos] = rng.randrange(256)
        try:
            codec.decode([bytes(v)])
            decoded += 1
        except (FingerprintRecordError, IncompatibleFingerprintError):
            caught += 1
    assert caught > 300 and caught + decoded == 3000
    # random bytes behind a valid head: the exact-length and range checks refuse all but a
    # structurally valid few
    noise = [bytes([2, 0]) + codec.key.to_bytes(4, "little") + bytes(rng.randrange(256) for _ in range(rng.randrange(400)))
             for _ in range(1000)]
    refused = 0
    for v in noise:
        try:
            codec.decode([v])
        except FingerprintRecordError:
            refused += 1
    assert refused >= 990
