"""The engine's stored record: one per indexed document, the durable truth (pure core).

Layout, engine record version 7, little-endian; the store key is the document's seq. After a
fixed head, integers are LEB128 varints (signed ones zigzag-coded)::

    bytes  field
    1      engine record version (7; versions 5 and 6, the same layout without revisions (5) and
           without anchor keys, are read too)
    1      relation code of the decision (0 = unique; _kernels.verify.REL_*)
    1      flags: bit 0 = boilerplate slots were left out of the estimates, bit 1 = a
           near-duplicate on exact character evidence (``_kernels.evidence``), bit 2 = the
           canonical text is not kept (``state.keep_text: false``: the record ends with the
           signature), bit 3 = a revision (``engine.revisions``): what changed follows the ids,
           bit 4 = with bit 2, the record ends with the text's evidence sketches
           (``sketch.evidence_sketch``, 256 bytes: what answers exact evidence without texts)
    1      b, MinHash bits per slot (minhash.storage_bits)
    16     digest of the canonical text
    var    id length (UTF-8 bytes), root id length, matched id length (0 and 0 for a unique)
    ..     id, root id, matched id (first: resolving a duplicate's ids reads only this far)
    var    with flag bit 3: length of what changed (UTF-8 bytes), then its bytes (the items
           joined by ``"; "``)
    var    n (hot-count entries that are not 1), canonical length (UTF-8 bytes), its bytes in
           UTF-8 continuation position (canonical length - characters), shingle count, event time
           (ms, signed), source id (signed, -1 for none: the engine's source table), source offset / line number
           (signed), fine LD signature length
    dup.   root seq, matched seq (varints), float32 estimates of the match (Jaccard,
           calibrated LD similarity, containment new-in-earlier, containment earlier-in-new,
           signature embedding, exact 8-gram Jaccard, the same with digits read as 0, share of
           the copy's own words one edit from the earlier's; NaN = not computed)
    ..     n hot-count entries: band (varint), count (1 byte)
    K*b/8  MinHash slots, low b bits each (b-bit minwise hashing, Manasse)
    4*bands  the low half of each band key (what the index uses), main then lead
    ..     fine LD signature
    var    m, the number of anchor keys (``_kernels.anchors``), then m keys (4 bytes each), then
           the number of them whose hot count is not 1, then per such key: its position
           (varint), its count (1 byte)
    ..     the canonical text (canonical length bytes; none with flag bit 2): the exact
           evidence of a later pair compares it; restore stops before it. With flag bit 4
           the evidence sketches are here instead (earlier releases read past them)

What it holds and why: the fingerprint as far as the engine uses it (to rebuild the in-memory
index and verification arena on start, so a restarted engine decides exactly as one that
never stopped), the band cells' hot counts (they depended on documents that may have been
evicted since, so they cannot be recomputed), and the decision with the ids it names (a
Kafka batch whose outputs were not committed is re-emitted from these, not decided again).
Not stored: reasons (text made from the relation and the estimates,
:func:`streamdedup.engine.verify.reasons`), the coarse signature and the upper key halves (nothing in
the engine reads them), and for a unique document its root (itself) and estimates. The
fingerprint parameters are checked once, in the state's metadata. Varints instead of fixed
fields save ~17 bytes a record; a Reuters story's record is ~440 bytes before its canonical
text (~800 more; 1,245 on average over 3,000 stories), and ~40 more for its anchor keys. The character
count, which the LD calibration needs on scripts of several bytes per character, is stored as
the bytes it does not count: one byte (0) for ASCII text, two for a Chinese story, and exact,
so a restarted engine computes the same bytes per character as the batch did. The records of
a micro-batch are written by one Numba call (``_kernels.records``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from streamdedup._kernels.records import ENGINE_VERSION, ENGINE_VERSION_READ, F_NO_TEXT, F_REVISION, F_SKETCH
from streamdedup._kernels.sketches import SKETCH_BYTES
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.sketch.estimate import unpack_bbit

ENGINE_RECORD_VERSION = ENGINE_VERSION
#: what a revision record joins its changed items with
CHANGED_SEP = "; "
HEAD = struct.Struct("<BBBB16s")
assert HEAD.size == 20


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    c = data[pos]
    if c < 0x80:  # most fields are small: one byte
        return c, pos + 1
    v = shift = 0
    while True:
        c = data[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, pos
        shift += 7


def _signed(data: bytes, pos: int) -> tuple[int, int]:
    u, pos = _varint(data, pos)
    return (u >> 1) ^ -(u & 1), pos


@dataclass(frozen=True)
class StoredDocument:
    seq: int
    id: str
    root_seq: int
    root_id: str
    matched_seq: int
    matched_id: str | None
    relation: int
    flags: int
    numbers: tuple[float, ...]  # the eight estimates (``_kernels.decide.D_*``)
    hot: np.ndarray  # hot count per band cell, dense
    length: int
    chars: int
    n_shingles: int
    event_time_ms: int
    source_id: int
    offset: int
    digest: bytes
    minhash_bits: int
    minhash: np.ndarray  # low ``minhash_bits`` of each slot, uint32
    band_keys: np.ndarray  # uint32, the low half of each key
    signature: bytes
    text: bytes | None  # the canonical text (UTF-8); None when the record does not keep it
    changed: tuple[str, ...] = ()  # what a revision changed (``engine.revisions``)
    anchors: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # the anchor keys (none in a version-5/6 record)
    anchor_hot: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # their hot counts
    #: the text's evidence sketches (``sketch.evidence_sketch``), which a record without its
    #: text keeps instead (None in any other)
    sketch: np.ndarray | None = None


_NAN8 = (float("nan"),) * 8


def _check(seq: int, data: bytes) -> None:
    if not ENGINE_VERSION_READ <= data[0] <= ENGINE_RECORD_VERSION:
        raise IncompatibleFingerprintError(
            f"state record {seq} has version {data[0]}, not {ENGINE_RECORD_VERSION}: this state was written by "
            "another streamdedup version; use a new state directory"
        )


def _id_fields(seq: int, data: bytes) -> tuple[str, str, int, int]:
    """(id, root id, length of the matched id, where it starts) of a record."""
    _check(seq, data)
    n_id, pos = _varint(data, HEAD.size)
    n_root, pos = _varint(data, pos)
    n_matched, pos = _varint(data, pos)
    doc_id = data[pos:pos + n_id].decode("utf-8")
    pos += n_id
    root_id = data[pos:pos + n_root].decode("utf-8") if n_root else doc_id
    return doc_id, root_id, n_matched, pos + n_root


def _changed(data: bytes, pos: int) -> tuple[tuple[str, ...], int]:
    """What a revision changed (empty for other records) at ``pos``, just after the matched id,
    and the position after it."""
    if not data[2] & F_REVISION:
        return (), pos
    n, pos = _varint(data, pos)
    text = data[pos:pos + n].decode("utf-8")
    return tuple(text.split(CHANGED_SEP)) if text else (), pos + n


def ids(data: bytes, seq: int = -1) -> tuple[str, str]:
    """(id, root id) of a record, reading nothing past them (the engine does this for every
    duplicate whose match is in an earlier batch)."""
    doc_id, root_id, _, _ = _id_fields(seq, data)
    return doc_id, root_id


def match_fields(data: bytes, seq: int = -1) -> tuple[str, str, int, int]:
    """(id, root id, source id, offset) of a record: what the engine reads of each earlier
    document a duplicate matched, in one pass."""
    doc_id, root_id, n_matched, pos = _id_fields(seq, data)
    _, pos = _changed(data, pos + n_matched)
    for _ in range(4):  # hot entries, length, continuation bytes, shingle count
        _, pos = _varint(data, pos)
    _, pos = _signed(data, pos)  # event time
    source_id, pos = _signed(data, pos)
    offset, _ = _signed(data, pos)
    return doc_id, root_id, source_id, offset


def source_of(data: bytes, seq: int = -1) -> tuple[int, int]:
    """(source id, offset) of a record: where its document was read."""
    return match_fields(data, seq)[2:]


def decode(seq: int, data: bytes, bands: int, num_perm: int) -> StoredDocument:
    doc_id, root_id, n_matched, pos = _id_fields(seq, data)
    _, relation, flags, bits, digest = HEAD.unpack_from(data, 0)
    matched_id = data[pos:pos + n_matched].decode("utf-8") if n_matched else None
    changed, pos = _changed(data, pos + n_matched)
    n_hot, pos = _varint(data, pos)
    length, pos = _varint(data, pos)
    extra, pos = _varint(data, pos)
    n_shingles, pos = _varint(data, pos)
    event_time_ms, pos = _signed(data, pos)
    source_id, pos = _signed(data, pos)
    offset, pos = _signed(data, pos)
    n_sig, pos = _varint(data, pos)
    root_seq, matched_seq, numbers = seq, -1, _NAN8
    if relation:
        root_seq, pos = _varint(data, pos)
        matched_seq, pos = _varint(data, pos)
        numbers = struct.unpack_from("<8f", data, pos)
        pos += 32
    hot = np.ones(bands, dtype=np.uint8)
    for _ in range(n_hot):
        band, pos = _varint(data, pos)
        hot[band] = data[pos]
        pos += 1
    mh_len = num_perm * bits // 8
    minhash = unpack_bbit(data[pos:pos + mh_len], bits, num_perm)
    pos += mh_len
    keys = np.frombuffer(data, dtype="<u4", count=bands, offset=pos).astype(np.uint32)
    pos += 4 * bands
    signature = data[pos:pos + n_sig]
    pos += n_sig
    anchors, anchor_hot, pos = _anchors(data, pos)
    text = None if flags & F_NO_TEXT else data[pos:pos + length]
    return StoredDocument(seq, doc_id, root_seq, root_id, matched_seq, matched_id, relation, flags, numbers,
                          hot, length, length - extra, n_shingles, event_time_ms, source_id, offset, digest, bits, minhash, keys,
                          signature, text, changed, anchors, anchor_hot, evidence_sketch(data))


def _anchors(data: bytes, pos: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The anchor keys at ``pos`` with their hot counts, and where they end (none before
    version 7)."""
    if data[0] != ENGINE_RECORD_VERSION:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint8), pos
    m, pos = _varint(data, pos)
    anchors = np.frombuffer(data, dtype="<u4", count=m, offset=pos).astype(np.uint32)
    pos += 4 * m
    anchor_hot = np.ones(m, dtype=np.uint8)
    n_ahot, pos = _varint(data, pos)
    for _ in range(n_ahot):
        j, pos = _varint(data, pos)
        anchor_hot[j] = data[pos]
        pos += 1
    return anchors, anchor_hot, pos


def text_and_anchors(seq: int, data: bytes, bands: int, num_perm: int) -> tuple[bytes | None, np.ndarray, np.ndarray]:
    """What exact evidence reads of an earlier document: its canonical text (None when the
    record keeps none) and its anchor keys with their hot counts. The fields between are
    stepped over, not decoded: the MinHash slots, band keys and signature are what cost
    :func:`decode` most."""
    _, _, n_matched, pos = _id_fields(seq, data)
    relation, flags, bits = data[1], data[2], data[3]
    _, pos = _changed(data, pos + n_matched)
    n_hot, pos = _varint(data, pos)
    length, pos = _varint(data, pos)
    for _ in range(5):  # the text's other bytes, shingles, event time, source id, offset (zigzag: varints too)
        _, pos = _varint(data, pos)
    n_sig, pos = _varint(data, pos)
    if relation:
        pos = _varint(data, _varint(data, pos)[1])[1] + 32  # root and matched seqs, the estimates
    for _ in range(n_hot):
        pos = _varint(data, pos)[1] + 1
    anchors, anchor_hot, pos = _anchors(data, pos + num_perm * bits // 8 + 4 * bands + n_sig)
    return (None if flags & F_NO_TEXT else data[pos:pos + length]), anchors, anchor_hot


def evidence_sketch(data: bytes) -> np.ndarray | None:
    """The evidence sketches a record without its text ends with (its last ``SKETCH_BYTES``),
    or None when it keeps none; nothing else of the record is read."""
    if data[0] != ENGINE_RECORD_VERSION or not data[2] & F_SKETCH:
        return None
    return np.frombuffer(data, dtype=np.uint8, offset=len(data) - SKETCH_BYTES)


def canonical_text(data: bytes, seq: int = -1) -> bytes | None:
    """The canonical text a record ends with (its length is the record's canonical length);
    None when the record does not keep it (``state.keep_text: false``)."""
    if data[2] & F_NO_TEXT:
        return None
    _, _, n_matched, pos = _id_fields(seq, data)
    _, pos = _changed(data, pos + n_matched)
    _, pos = _varint(data, pos)  # hot entries
    length, _ = _varint(data, pos)
    return data[len(data) - length:]
