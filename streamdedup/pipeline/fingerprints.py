"""Fingerprint records: what a fingerprint worker sends the decider, one per input record (pure).

A staged topology splits prepare -> decide: workers decode, canonicalise and fingerprint;
one decider owns the index and decides on fingerprints alone. This module is the record
between them, and what a source that keeps its texts to itself sends instead of them
(``streamdedup fingerprint``). Layout, codec versions 4 and 5, little-endian; after the head,
integers are LEB128 varints (signed ones zigzag-coded)::

    bytes  field
    1      codec version (4; 5: a text-free fingerprint, flag bit 1 set)
    1      kind: 0 fingerprint, 1 dead letter, 2 params announcement
    4      params key of the worker's fingerprint configuration (FingerprintParams.key)
    -- kinds 0 and 1: the input record's source position
    var    topic length, topic (UTF-8), partition, offset (signed)
    -- kind 0, fingerprint
    1      flags: bit 0 = empty (no words after canonicalisation: no MinHash, no band keys);
           bit 1 = no text (version 5 only: the record ends after the signature)
    16     digest of the canonical text
    var    id length, id (UTF-8)
    var    event time (ms, signed), canonical length (UTF-8 bytes), its continuation bytes
           (canonical length - characters: 0 for ASCII, for the LD calibration's bytes per
           character), shingle count, fine signature length
    var    m, the number of anchor keys (``_kernels.anchors``), then m keys (4 bytes each)
    K*b/8  MinHash slots, low b bits each (b = minhash.storage_bits, as the engine stores them)
    4*B    the low half of each band key, main then lead (what the index uses)
    ..     fine LD signature
    ..     the canonical text (canonical length bytes: the decider's exact evidence compares
           texts); in a version 5 record the text's evidence sketches instead (256 bytes,
           ``sketch.evidence_sketch``: what a decider without texts estimates that evidence from)
    -- kind 1, dead letter (prepare refused the input record; the router emits it)
    var    stage length, stage, reason length, reason (UTF-8)
    -- kind 2, params announcement (a worker's settings, so a mismatch can be named)
    var    format version, bands, rows, settings length, settings (canonical JSON)

A Reuters story's fingerprint record is ~370 bytes before its canonical text (~1,380 with it:
more than the JSON record it came from, ~1,060); of the fingerprint the bulk is fixed (128 B of MinHash and
164 B of band keys at the defaults) and the signature grows with the text (one byte per
~16 bytes of canonical text, cut at 4096). Not carried: the upper halves of the band keys,
the MinHash bits above b and the coarse signature, which the engine does not read (the
decoded :class:`~streamdedup.sketch.fingerprint.FingerprintBatch` has zeros and empty arrays there).

The decoder trusts nothing: a record of another version, cut short, with bytes left over or
fields out of range raises :class:`~streamdedup.errors.FingerprintRecordError` naming it; one
made with other fingerprint parameters raises :class:`~streamdedup.errors.IncompatibleFingerprintError`,
naming the settings that differ once the worker's params announcement was seen. A flipped
bit inside the MinHash or the signature is not detectable without a checksum: that is the
job of Kafka's per-batch CRC (``check.crcs``). Both directions are one Numba pass per batch
(``_kernels.fprecords``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from streamdedup._kernels import fprecords as K
from streamdedup._kernels.anchors import MAX_ANCHORS
from streamdedup.text.decode import MAX_ID_BYTES, Rejected
from streamdedup.engine.checkpoint import Checkpoint, Source
from streamdedup.errors import FingerprintRecordError, IncompatibleFingerprintError
from streamdedup.sketch import evidence_sketch
from streamdedup.sketch.fingerprint import MAX_SIGNATURE_SYMBOLS, FingerprintBatch, Fingerprinter, FingerprintParams
from streamdedup.text.ids import Ids, id_arrays
from streamdedup.pipeline.prepare import Prepared

if TYPE_CHECKING:
    from streamdedup.engine.deduplicator import BeforeCommit, Deduplicator

KIND_FINGERPRINT, KIND_DEAD, KIND_PARAMS = K.KIND_FINGERPRINT, K.KIND_DEAD, K.KIND_PARAMS
#: other senders' params kept to name a mismatch (the oldest goes first)
MAX_ANNOUNCED = 64
_LOW32 = np.uint64(0xFFFFFFFF)
_PROBLEMS = {
    K.TRUNCATED: "is cut short (a field runs past its end)",
    K.BAD_KIND: "has an unknown kind",
    K.BAD_FIELD: "has a field out of range (garbled)",
    K.TRAILING: "has bytes after its last field (garbled)",
}


@dataclass
class DecodedFingerprints:
    """A list of fingerprint records, decoded: per record its kind and source position, and
    the fingerprint records (``docs``) as the engine's columns, in record order."""

    #: uint8 per record: KIND_*
    kinds: np.ndarray
    #: the distinct input sources the records name
    sources: list[Source]
    #: int64 per record: its source in ``sources`` (-1 for a params announcement)
    source_index: np.ndarray
    #: int64 per record: its offset in its source
    offsets: np.ndarray
    #: record indices of the fingerprints, in order: ``batch`` row j is record ``docs[j]``
    docs: np.ndarray
    ids: Ids
    batch: FingerprintBatch
    #: int64 per fingerprint: event time (ms)
    times: np.ndarray
    #: record index -> why prepare refused the input record
    dead: dict[int, Rejected]
    #: bool per fingerprint: the record carries no canonical text (``batch`` has none for it)
    no_text: np.ndarray

    def __len__(self) -> int:
        return self.kinds.shape[0]

    def source_of(self, k: int) -> tuple[Source, int] | None:
        """Source and offset of record ``k`` (None for a params announcement)."""
        s = int(self.source_index[k])
        return None if s < 0 else (self.sources[s], int(self.offsets[k]))

    def engine_sources(self, engine: "Deduplicator") -> np.ndarray:
        """Per fingerprint, ``engine``'s id of its source (what ``run_fingerprinted`` takes)."""
        sid_of = np.array([engine.source_id(s) for s in self.sources] or [-1], dtype=np.int64)
        return sid_of[self.source_index[self.docs]]


class FingerprintCodec:
    """Encodes and decodes fingerprint records for one fingerprint configuration."""

    def __init__(self, fp: Fingerprinter):
        self.fp = fp
        self.params: FingerprintParams = fp.params
        self.key = fp.params.key
        mh = fp.cfg.minhash
        self.bits, self.num_perm = mh.storage_bits, mh.num_perm
        self.bands = fp.lsh.bands
        self.lead_bands = fp.cfg.lead.bands if fp.cfg.lead.shingles > 0 else 0
        self.char_bands = fp.cfg.chars.bands
        self._head = bytes([K.CODEC_VERSION]) + bytes(1) + self.key.to_bytes(4, "little")
        #: params announced by workers, by key (they name a mismatch's settings)
        self.announced: dict[int, FingerprintParams] = {self.key: self.params}

    # ------------------------------------------------------------------ encoding

    def encode(self, batch: FingerprintBatch, ids: Sequence[str], times: np.ndarray, sources: Sequence[Source],
               source_index: np.ndarray, offsets: np.ndarray, with_text: bool = True) -> list[bytes]:
        """One record per row of ``batch``: document ``ids[i]`` at ``times[i]``, input record
        ``offsets[i]`` of ``sources[source_index[i]]``; without ``with_text``, text-free
        records (version 5)."""
        self.params.require_same(batch.params)
        n = len(batch)
        source_index = np.ascontiguousarray(source_index, dtype=np.int64)
        if not (len(ids) == len(times) == source_index.shape[0] == len(offsets) == n):
            raise ValueError(f"{n} fingerprints with {len(ids)} ids, {len(times)} times, {source_index.shape[0]} sources, "
                             f"{len(offsets)} offsets")
        if n == 0:
            return []
        if source_index.min() < 0 or source_index.max() >= len(sources):
            raise ValueError(f"a source index is outside the {len(sources)} sources")
        ids_buf, ids_off = id_arrays(ids)
        topics_buf, topics_off = id_arrays([s.topic for s in sources])
        partitions = np.array([s.partition for s in sources], dtype=np.int64)
        keys = batch.index_keys
        sketch = evidence_sketch.NO_SKETCH if with_text else evidence_sketch.of_batch(batch, self.fp.hash_key)
        buf, off = K.encode_batch(
            self.key, self.bits, batch.empty, batch.digest_words, batch.minhash, keys, batch.lengths, batch.chars, batch.n_shingles,
            np.ascontiguousarray(times, dtype=np.int64), batch.fine_buf, batch.fine_start, batch.fine_len,
            ids_buf, ids_off, topics_buf, topics_off, partitions, source_index,
            np.ascontiguousarray(offsets, dtype=np.int64), batch.canon_buf, batch.canon_start, batch.anchors, batch.anchor_n,
            bool(with_text), sketch)
        raw = buf.tobytes()
        bounds = off.tolist()
        return [raw[bounds[i]:bounds[i + 1]] for i in range(n)]

    def encode_dead(self, source: Source, offset: int, stage: str, reason: str) -> bytes:
        """The record of an input record that prepare refused (``stage``, ``reason``)."""
        head = self._head[:1] + bytes([KIND_DEAD]) + self._head[2:]
        return head + _position(source, offset) + _text(stage) + _text(reason)

    def encode_params(self) -> bytes:
        """This configuration's params announcement (a worker sends it when it starts)."""
        p = self.params
        head = self._head[:1] + bytes([KIND_PARAMS]) + self._head[2:]
        return head + _varint(p.format_version) + _varint(p.bands) + _varint(p.rows) + _text(p.settings)

    def encode_prepared(self, prep: Prepared, sources: Sequence[Source], source_index: np.ndarray,
                        offsets: np.ndarray, with_text: bool = True) -> list[bytes]:
        """A fingerprint worker's step: the records of ``prep``'s input records ``lo..hi``, in
        order (fingerprints of its documents, dead letters of the rest). ``source_index`` and
        ``offsets`` are per record of ``prep``'s scan."""
        if len(prep.held):
            raise ValueError("a fingerprint worker holds no record back: every input record gets its record")
        out: list[bytes | None] = [None] * (prep.hi - prep.lo)
        docs = prep.docs
        if len(docs):
            ids, texts, times = prep.gather(docs)
            batch = self.fp.fingerprint_prepared(texts)
            for k, v in zip(docs.tolist(), self.encode(batch, ids, times, sources, source_index[docs], offsets[docs], with_text)):
                out[k - prep.lo] = v
        for k, why in prep.dead.items():
            out[k - prep.lo] = self.encode_dead(sources[int(source_index[k])], int(offsets[k]), why.stage, why.reason)
        return out  # type: ignore[return-value]

    # ------------------------------------------------------------------ decoding

    def decode(self, values: Sequence[bytes]) -> DecodedFingerprints:
        """Check and decode a list of records (one Numba pass each for positions and fields).

        Raises:
            FingerprintRecordError: a record is not bytes, of an unknown version, cut short or garbled.
            IncompatibleFingerprintError: a record was made with other fingerprint parameters.
        """
        n = len(values)
        try:
            lengths = np.fromiter(map(len, values), np.int64, n)
            joined = b"".join(values)
        except TypeError:
            bad = next(k for k, v in enumerate(values) if not isinstance(v, (bytes, bytearray, memoryview)))
            raise FingerprintRecordError(f"fingerprint record {bad} is {type(values[bad]).__name__}, not bytes", bad) from None
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=off[1:])
        # writable: the engine's kernels read the signatures from this buffer (a read-only
        # array would compile them a second time)
        buf = np.frombuffer(joined, dtype=np.uint8).copy()
        kinds = np.zeros(n, dtype=np.uint8)
        topic_id, t_start, t_len = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
        partition, offsets, rest = np.zeros(n, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64)
        info = np.zeros(3, dtype=np.int64)
        status = K.decode_sources(buf, off, self.key, kinds, topic_id, t_start, t_len, partition, offsets, rest, info)
        if status != K.OK:
            self._fail(values, status, int(info[0]), int(info[2]))
        for k in np.flatnonzero(kinds == KIND_PARAMS).tolist():
            self._check_announcement(values[k], k)
        topics = [_utf8(joined[s:s + ln], int(np.argmax(topic_id == m)), "topic")
                  for m, (s, ln) in enumerate(zip(t_start[:info[1]].tolist(), t_len[:info[1]].tolist()))]
        sources, source_index = _sources(topics, topic_id, partition)
        docs, ids, batch, times, no_text = self._prints(buf, off, kinds, rest, values)
        dead = {k: self._dead(values[k], int(rest[k] - off[k]), k) for k in np.flatnonzero(kinds == KIND_DEAD).tolist()}
        return DecodedFingerprints(kinds, sources, source_index, offsets, docs, ids, batch, times, dead, no_text)

    def _prints(self, buf: np.ndarray, off: np.ndarray, kinds: np.ndarray, rest: np.ndarray,
                values: Sequence[bytes]) -> tuple[np.ndarray, Ids, FingerprintBatch, np.ndarray, np.ndarray]:
        m = int(np.count_nonzero(kinds == KIND_FINGERPRINT))
        i64 = lambda: np.empty(m, np.int64)  # noqa: E731
        out = (np.empty(m, np.bool_), np.empty((m, 2), np.uint64), i64(), i64(), i64(), i64(), np.empty((m, self.num_perm), np.uint32),
               np.empty((m, self.bands), np.uint64), np.empty((m, self.lead_bands + self.char_bands), np.uint64), i64(), i64(),
               np.empty(buf.shape[0], np.uint8), np.zeros(m + 1, np.int64), np.empty((m, MAX_ANCHORS), np.uint32),
               np.zeros(m, np.int64), np.zeros(m, np.bool_))
        doc = i64()
        status, bad, _ = K.decode_prints(buf, off, kinds, rest, self.bits, MAX_ID_BYTES, MAX_SIGNATURE_SYMBOLS, doc, out)
        if status != K.OK:
            self._fail(values, status, bad, self.key)
        # the kernel reads the keys after the main bands into one array: lead bands, then character bands
        (empty, digests, times, lengths, chars, n_shingles, minhash, band_keys, extra_keys, sig_start, sig_len, ids_buf, ids_off,
         anchors, anchor_n, no_text) = out
        lead_keys, char_keys = extra_keys[:, :self.lead_bands], extra_keys[:, self.lead_bands:]
        ids = Ids(ids_buf, ids_off)
        try:
            ids_buf[:ids_off[-1]].tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            k = int(doc[np.searchsorted(ids_off, exc.start, side="right") - 1])
            raise FingerprintRecordError(f"fingerprint record {k}: its id is not UTF-8 (garbled)", k) from None
        none = np.zeros(0, np.uint8)
        # the canonical text follows the signature, or in a text-free record the evidence sketches
        after = sig_start + sig_len
        batch = FingerprintBatch(self.params, minhash, band_keys, lead_keys, lengths, n_shingles, empty, digests, buf, sig_start,
                                 sig_len, none, np.zeros(m, np.int64), np.zeros(m, np.int64), char_keys,
                                 np.zeros((m, 0), np.uint32), chars, buf, after, anchors, anchor_n)
        if no_text.any():
            batch.evidence_sketch = evidence_sketch.of_records(buf, after, lengths, no_text, self.fp.hash_key)
        return doc, ids, batch, times, no_text

    def _fail(self, values: Sequence[bytes], status: int, k: int, key: int) -> None:
        if status == K.BAD_VERSION:
            raise FingerprintRecordError(
                f"fingerprint record {k} has codec version {values[k][0]}, this streamdedup reads versions "
                f"{K.CODEC_VERSION} and {K.TEXT_FREE_VERSION}: "
                "the fingerprint workers run another streamdedup version (or the topic holds something else)", k)
        if status == K.BAD_KEY:
            for j, v in enumerate(values):  # an announcement in the same batch names the settings
                if len(v) > 1 and v[0] in (K.CODEC_VERSION, K.TEXT_FREE_VERSION) and v[1] == KIND_PARAMS:
                    self._check_announcement(v, j, raise_on_mismatch=False)
            theirs = self.announced.get(key)
            what = ("; ".join(self.params.differences(theirs)) if theirs else
                    "the worker's settings are unknown here: it names them in its params announcement")
            raise IncompatibleFingerprintError(
                f"fingerprint record {k} was made with fingerprint params {key:08x}, this decider's are {self.key:08x} "
                f"({what}); run the workers and the decider with one fingerprint configuration")
        raise FingerprintRecordError(f"fingerprint record {k} ({len(values[k])} bytes) {_PROBLEMS[status]}", k)

    def _check_announcement(self, value: bytes, k: int, raise_on_mismatch: bool = True) -> None:
        r = _Reader(value, K.HEAD, k)
        key = int.from_bytes(value[2:6], "little")
        version, bands, rows = r.varint(), r.varint(), r.varint()
        theirs = FingerprintParams(version, r.text(), bands, rows)
        r.end()
        if theirs.key != key:
            raise FingerprintRecordError(
                f"fingerprint record {k}: a params announcement whose key does not match its params (garbled)", k)
        if theirs.key == self.key:
            return
        try:  # the settings are the sender's text: they must read as settings before they are named
            theirs.differences(self.params)
        except (ValueError, TypeError, AttributeError, RecursionError):
            raise FingerprintRecordError(f"fingerprint record {k}: a params announcement whose settings are not "
                                         "settings (garbled)", k) from None
        if len(self.announced) >= MAX_ANNOUNCED:  # a sender of ever new settings keeps no memory here
            self.announced.pop(next(old for old in self.announced if old != self.key))
        self.announced[key] = theirs
        if raise_on_mismatch:
            self.params.require_same(theirs)

    def _dead(self, value: bytes, pos: int, k: int) -> Rejected:
        r = _Reader(value, pos, k)
        why = Rejected(r.text(), r.text())
        r.end()
        return why


def decide(engine: "Deduplicator", decoded: DecodedFingerprints, positions: dict[Source, int] | None = None,
           before_commit: "BeforeCommit | None" = None) -> Checkpoint:
    """The decider's step: ``engine.run_fingerprinted`` on the fingerprints of ``decoded``
    (decision j is record ``decoded.docs[j]``).

    Raises:
        IncompatibleFingerprintError: a text-free fingerprint reached an engine that keeps texts.
    """
    if decoded.no_text.any() and engine.cfg.state.keep_text:
        k = int(decoded.docs[int(np.argmax(decoded.no_text))])
        raise IncompatibleFingerprintError(
            f"fingerprint record {k} carries no text (a text-free fingerprint) and this decider keeps texts: run it with "
            "state.keep_text: false and verify.revisions: off, or send fingerprints with their texts")
    return engine.run_fingerprinted(decoded.ids, decoded.batch, decoded.times, decoded.engine_sources(engine),
                                    decoded.offsets[decoded.docs], positions, before_commit)


def _sources(topics: list[str], topic_id: np.ndarray, partition: np.ndarray) -> tuple[list[Source], np.ndarray]:
    """The distinct (topic, partition) pairs and each record's index among them (-1: none)."""
    has = topic_id >= 0
    index = np.full(topic_id.shape[0], -1, dtype=np.int64)
    if not has.any():
        return [], index
    pair = (topic_id[has] << 31) | partition[has]
    uniq, inverse = np.unique(pair, return_inverse=True)
    index[has] = inverse
    return [Source(topics[int(u >> 31)], int(u & (2**31 - 1))) for u in uniq], index


def _utf8(raw: bytes, k: int, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FingerprintRecordError(f"a fingerprint record's {what} is not UTF-8 (garbled)", k) from None


class _Reader:
    """Bounds-checked reads of the rare kinds (dead letters, announcements) in Python."""

    def __init__(self, value: bytes, pos: int, k: int):
        self.value, self.pos, self.k = value, pos, k

    def fail(self, problem: int) -> FingerprintRecordError:
        return FingerprintRecordError(f"fingerprint record {self.k} ({len(self.value)} bytes) {_PROBLEMS[problem]}", self.k)

    def varint(self) -> int:
        v = shift = 0
        while self.pos < len(self.value) and shift < 64:
            c = self.value[self.pos]
            self.pos += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v
            shift += 7
        raise self.fail(K.TRUNCATED)

    def text(self) -> str:
        n = self.varint()
        if n > len(self.value) - self.pos:
            raise self.fail(K.TRUNCATED)
        self.pos += n
        return _utf8(self.value[self.pos - n:self.pos], self.k, "text field")

    def end(self) -> None:
        if self.pos != len(self.value):
            raise self.fail(K.TRAILING)


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _text(s: str) -> bytes:
    b = s.encode("utf-8")
    return _varint(len(b)) + b


def _position(source: Source, offset: int) -> bytes:
    return _text(source.topic) + _varint(source.partition) + _varint((offset << 1) ^ (offset >> 63))
