"""The engine record: the Numba batch encoder against a plain encoder, and decoding back."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from streamdedup import Fingerprinter, load_config
from streamdedup._kernels import records as KR
from streamdedup.engine.record import HEAD, canonical_text, decode, ids, text_and_anchors
from streamdedup.engine.record import evidence_sketch as evidence_sketch_of
from streamdedup.sketch.estimate import pack_bbit
from streamdedup.sketch import evidence_sketch
from streamdedup.sketch.evidence_sketch import SKETCH_BYTES
from tests.unit.test_engine import story, typo

TEXTS = [story(1), "", typo(story(1), 2), "Ünïcode wörds in a störy about nothing", story(3, 900) + " 新华社北京电" * 30]
IDS = ["a", "empty", "b-\u00e9", "c" * 300, "d"]


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _signed(v: int) -> bytes:
    return _varint((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)


def reference(batch, i: int, bits: int, rel: int, flags: int, root_seq: int, matched_seq: int, numbers, hot, doc_id: str,
              root_id: str, matched_id: str, time: int, part: int, off: int, changed: str = "", anchor_hot=None) -> bytes:
    """The layout of ``engine_record`` written field by field."""
    hot_entries = [(b, int(c)) for b, c in enumerate(hot) if c != 1]
    idb, rb, mb = doc_id.encode(), root_id.encode(), matched_id.encode()
    sig = batch.signatures[i]
    if not rel:
        rb = mb = b""
    revision = [_varint(len(changed.encode())), changed.encode()] if flags & KR.F_REVISION else []
    parts = [HEAD.pack(7, rel, flags, bits, batch.digests[i]), _varint(len(idb)), _varint(len(rb)), _varint(len(mb)),
             idb, rb, mb, *revision, _varint(len(hot_entries)), _varint(int(batch.lengths[i])),
             _varint(int(batch.lengths[i] - batch.chars[i])), _varint(int(batch.n_shingles[i])),
             _signed(time), _signed(part), _signed(off), _varint(len(sig))]
    if rel:
        parts += [_varint(root_seq), _varint(matched_seq), struct.pack("<8f", *(float(np.float32(x)) for x in numbers))]
    parts += [_varint(b) + bytes([c]) for b, c in hot_entries]
    parts.append(pack_bbit(batch.minhash[i], bits))
    keys = batch.index_keys[i]
    parts += [int(k).to_bytes(4, "little") for k in keys]
    parts.append(sig)
    m = int(batch.anchor_n[i])
    parts += [_varint(m)] + [int(k).to_bytes(4, "little") for k in batch.anchors[i, :m]]
    anchor_entries = [(j, int(c)) for j, c in enumerate(anchor_hot[:m]) if c != 1]
    parts += [_varint(len(anchor_entries))] + [_varint(j) + bytes([c]) for j, c in anchor_entries]
    s = int(batch.canon_start[i])
    parts.append(batch.canon_buf[s:s + int(batch.lengths[i])].tobytes())
    return b"".join(parts)


@pytest.mark.parametrize("bits", [1, 2, 4, 8, 16, 32])
def test_batch_encoder_writes_the_documented_layout(bits: int) -> None:
    cfg = load_config()
    fp = Fingerprinter(cfg.fingerprint)
    batch = fp.fingerprint_batch(TEXTS)
    n = len(TEXTS)
    keys = batch.index_keys
    bands = keys.shape[1]
    rng = np.random.default_rng(bits)
    seqs = np.array([10, -1, 11, 12, 13], dtype=np.int64)
    roots = np.array([10, -1, 10, 12, 10], dtype=np.int64)
    matched = np.array([-1, -1, 10, -1, 11], dtype=np.int64)
    rels = np.array([0, 0, 2, 0, 4], dtype=np.uint8)
    numbers = rng.random((n, 8)).astype(np.float32)
    numbers[0] = np.nan
    flags = np.array([0, 0, 1 | KR.F_REVISION, 0, 2], dtype=np.uint8)
    changed = ["", "", "600 -> 500; +n\u00e9w", "", ""]
    hots = np.ones((n, bands), dtype=np.uint8)
    hots[2, 3] = 4
    hots[2, 200 % bands] = 2  # a band index over 127: a two-byte varint when there are enough bands
    hots[4, bands - 1] = 255
    root_ids = ["", "", "a", "", "a"]
    matched_ids = ["", "", "a", "", "b-\u00e9"]
    times = np.array([5, 6, 7, -8, 2**62], dtype=np.int64)
    parts = np.array([0, 1, 2, -1, 7], dtype=np.int64)
    offs = np.array([100, 101, -1, 2**35, 0], dtype=np.int64)
    anchor_hot = np.ones((n, batch.anchors.shape[1]), dtype=np.uint8)
    anchor_hot[0, 0] = 3
    anchor_hot[4, 1] = 255
    assert batch.anchor_n[0] > 0 and batch.anchor_n[4] > 1

    def buf(strs):
        data = [s.encode() for s in strs]
        o = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in data], out=o[1:])
        return np.frombuffer(b"".join(data) or b"\0", dtype=np.uint8), o

    out, off = KR.encode_batch(seqs, roots, matched, rels, numbers, flags, hots, *buf(IDS), *buf(root_ids), *buf(matched_ids),
                               *buf(changed), batch.digest_words, batch.lengths, batch.chars, batch.n_shingles, times, parts, offs, batch.minhash, bits,
                               keys, batch.fine_buf, batch.fine_start, batch.fine_len, batch.canon_buf, batch.canon_start, True,
                               batch.anchors, batch.anchor_n, anchor_hot, np.zeros((0, SKETCH_BYTES), np.uint8))
    # the same records without their texts: each ends with the text's evidence sketches instead
    sketch = evidence_sketch.of_batch(batch)
    bare, bare_off = KR.encode_batch(
        seqs, roots, matched, rels, numbers, flags, hots, *buf(IDS), *buf(root_ids), *buf(matched_ids), *buf(changed),
        batch.digest_words, batch.lengths, batch.chars, batch.n_shingles, times, parts, offs, batch.minhash, bits, keys,
        batch.fine_buf, batch.fine_start, batch.fine_len, batch.canon_buf, batch.canon_start, False, batch.anchors,
        batch.anchor_n, anchor_hot, sketch)
    raw = out.tobytes()
    for i in range(n):
        got = raw[off[i]:off[i + 1]]
        if seqs[i] < 0:
            assert got == b""
            continue
        want = reference(batch, i, bits, int(rels[i]), int(flags[i]), int(roots[i]), int(matched[i]), numbers[i], hots[i],
                         IDS[i], root_ids[i], matched_ids[i], int(times[i]), int(parts[i]), int(offs[i]), changed[i],
                         anchor_hot[i])
        assert got == want, i
        text_free = bare.tobytes()[bare_off[i]:bare_off[i + 1]]
        assert text_free == (want[:2] + bytes([want[2] | KR.F_NO_TEXT | KR.F_SKETCH]) + want[3:len(want) - int(batch.lengths[i])]
                             + sketch[i].tobytes()), i
        bare_doc = decode(int(seqs[i]), text_free, bands, cfg.fingerprint.minhash.num_perm)
        assert bare_doc.text is None and canonical_text(text_free) is None
        assert bare_doc.sketch.tobytes() == sketch[i].tobytes() == evidence_sketch_of(text_free).tobytes()
        assert evidence_sketch_of(got) is None
        st = decode(int(seqs[i]), got, bands, cfg.fingerprint.minhash.num_perm)
        want_root = (roots[i], matched[i]) if rels[i] else (seqs[i], -1)
        assert (st.id, st.root_seq, st.matched_seq, st.relation, st.flags) == (IDS[i], *want_root, rels[i], flags[i])
        assert st.root_id == (root_ids[i] or IDS[i]) and st.matched_id == (matched_ids[i] or None)
        assert st.changed == (tuple(changed[i].split("; ")) if changed[i] else ())
        assert np.array_equal(st.hot, hots[i])
        assert (st.event_time_ms, st.source_id, st.offset) == (times[i], parts[i], offs[i])
        assert (st.length, st.chars) == (batch.lengths[i], batch.chars[i])
        assert st.signature == batch.signatures[i] and st.digest == batch.digests[i]
        assert np.array_equal(st.band_keys, keys[i])
        m = batch.anchor_n[i]
        assert np.array_equal(st.anchors, batch.anchors[i, :m]) and np.array_equal(st.anchor_hot, anchor_hot[i, :m])
        assert np.array_equal(st.minhash, batch.minhash[i] & np.uint32(0xFFFFFFFF if bits == 32 else (1 << bits) - 1))
        if rels[i]:
            assert np.array_equal(np.array(st.numbers, np.float32), numbers[i], equal_nan=True)
        assert ids(got) == (IDS[i], root_ids[i] or IDS[i])
        assert st.text == canonical_text(got) == fp.fingerprint_batch([TEXTS[i]]).canonical[0]
        # the reader of exact evidence steps over what it does not need and reads the same
        for record, doc in ((got, st), (text_free, bare_doc)):
            text, keys_read, hot_read = text_and_anchors(int(seqs[i]), record, bands, cfg.fingerprint.minhash.num_perm)
            assert text == doc.text and keys_read.dtype == np.uint32 and hot_read.dtype == np.uint8
            assert np.array_equal(keys_read, doc.anchors) and np.array_equal(hot_read, doc.anchor_hot)
