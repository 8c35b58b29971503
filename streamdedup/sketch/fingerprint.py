"""The public fingerprinting API: one Numba call per batch.

>>> from streamdedup import Fingerprinter, load_config
>>> fp = Fingerprinter(load_config().fingerprint)
>>> batch = fp.fingerprint_batch(["The cat sat on the mat today.", "the CAT sat on the mat, today!"])
>>> batch.digests[0] == batch.digests[1]
True
>>> batch.minhash.shape, batch.band_keys.dtype
((2, 128), dtype('uint64'))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from streamdedup import _kernels
from streamdedup._kernels.anchors import ANCHOR_FIRST, ANCHOR_WINDOW, MAX_ANCHORS
from streamdedup.text.canonical import PreparedTexts, check_fold, prepare_batch  # noqa: F401 (PreparedTexts: part of this API)
from streamdedup.config import FingerprintConfig
from streamdedup.errors import InputError
from streamdedup.sketch.lsh import LSHChoice, choose
from streamdedup.sketch.params import FingerprintParams, hash_key, secret_id, signature_seed  # noqa: F401 (re-exported)
from streamdedup.text.scripts import token_classes
from streamdedup.text.unicode_map import UnicodeTables, built_tables, tables

#: Signatures are cut after this many symbols. About 1 window in C emits on ordinary text
#: (4096 symbols ~ 64 KB at C=16), but a repetitive text ("i i i ...") can emit at every
#: repeat of a selected window: uncapped, a 140 KB text gave 70,000 symbols, overflowed the
#: record's length prefix and would make each alignment slow (O(n*m/64) words bit-parallel;
#: seconds with the cell-by-cell DP it replaced). Past the cap the LD estimate covers the
#: beginning of the text; MinHash still covers all of it.
MAX_SIGNATURE_SYMBOLS = 4096
DIGEST_BYTES = 16


@dataclass
class FingerprintBatch:
    """Fingerprints of ``n`` texts, row i for text i.

    Attributes:
        minhash: ``(n, num_perm)`` uint32 slots; slot-wise equality rate estimates Jaccard.
        band_keys: ``(n, bands)`` uint64 LSH keys.
        lead_keys: ``(n, lead bands)`` uint64 LSH keys of the lead MinHash (first shingles).
        char_keys: ``(n, chars.bands)`` uint64 LSH keys of the byte-gram MinHash (``fingerprint.chars``).
        char_minhash: ``(n, chars.num_perm)`` uint32 slots of the byte-gram MinHash (0 columns
            when the character bands are off).
        signatures: fine-resolution Coates LD signature per text.
        coarse_signatures: the coarse resolution (C * coarse_factor); its window positions are a
            subset of the fine ones (its symbols come from other hash bits).
            Both are cut at ``MAX_SIGNATURE_SYMBOLS``.
        digests: 16-byte digest of the canonical UTF-8 text (the exact-duplicate fast path).
        lengths: canonical text length in UTF-8 bytes.
        chars: canonical text length in characters (``lengths / chars`` is the bytes per
            character the LD calibration needs: ``calibration.short_run_worth``).
        n_shingles: number of shingles (positions, not distinct) per text.
        empty: texts whose canonical form is empty; their MinHash is all ``EMPTY_SLOT`` and their
            band keys are 0, so callers must not index them.

    The per-text ``signatures``, ``coarse_signatures`` and ``digests`` are made on first use
    from the flat buffers the kernel wrote (``fine_buf[fine_start[i]:][:fine_len[i]]``,
    ``digest_words[i]`` as two little-endian words): the engine reads the buffers and never
    pays for a Python object per text.
    """

    params: FingerprintParams
    minhash: np.ndarray
    band_keys: np.ndarray
    lead_keys: np.ndarray
    lengths: np.ndarray
    n_shingles: np.ndarray
    empty: np.ndarray
    digest_words: np.ndarray  # (n, 2) uint64
    fine_buf: np.ndarray
    fine_start: np.ndarray
    fine_len: np.ndarray
    coarse_buf: np.ndarray
    coarse_start: np.ndarray
    coarse_len: np.ndarray
    char_keys: np.ndarray
    char_minhash: np.ndarray
    chars: np.ndarray
    #: the canonical texts (UTF-8), text i at ``canon_buf[canon_start[i]:][:lengths[i]]``: the
    #: engine stores them for exact evidence (``engine_evidence``)
    canon_buf: np.ndarray
    canon_start: np.ndarray
    #: ``(n, MAX_ANCHORS)`` uint32: the anchor keys (``_kernels.anchors``), text i's in
    #: ``anchors[i, :anchor_n[i]]``; none in a batch read from fingerprint records
    anchors: np.ndarray | None = None
    anchor_n: np.ndarray | None = None
    #: ``(n, SKETCH_BYTES)`` uint8: the evidence sketches (``sketch.evidence_sketch``), made
    #: only where no text is kept (None until then)
    evidence_sketch: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.anchors is None:
            n = self.minhash.shape[0]
            self.anchors = np.zeros((n, MAX_ANCHORS), dtype=np.uint32)
            self.anchor_n = np.zeros(n, dtype=np.int64)

    @property
    def index_keys(self) -> np.ndarray:
        """``(n, all bands)`` uint32: the low halves of the keys the engine indexes, main bands,
        then lead bands, then character bands (the order of records and the index)."""
        return (np.hstack((self.band_keys, self.lead_keys, self.char_keys)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)

    def __len__(self) -> int:
        return self.minhash.shape[0]

    @cached_property
    def signatures(self) -> list[bytes]:
        return _split(self.fine_buf, self.fine_start, self.fine_len)

    @cached_property
    def canonical(self) -> list[bytes]:
        """The canonical texts as bytes (explain, benchmarks; the engine reads ``canon_buf``)."""
        return _split(self.canon_buf, self.canon_start, self.lengths)

    @cached_property
    def coarse_signatures(self) -> list[bytes]:
        return _split(self.coarse_buf, self.coarse_start, self.coarse_len)

    @cached_property
    def digests(self) -> list[bytes]:
        dig = self.digest_words.astype("<u8").tobytes()
        return [dig[DIGEST_BYTES * i:DIGEST_BYTES * (i + 1)] for i in range(len(self))]


class Fingerprinter:
    """Turns texts into fingerprints with fixed parameters."""

    def __init__(self, cfg: FingerprintConfig):
        self.cfg = cfg
        self.lsh: LSHChoice = choose(cfg.lsh, cfg.minhash.num_perm)
        self.params = FingerprintParams.of(cfg)
        self._alphabet = np.frombuffer(cfg.signature.alphabet.encode("ascii"), dtype=np.uint8).copy()
        self._log2k = cfg.minhash.num_perm.bit_length() - 1
        self._cmap = _kernels.canonical_byte_map(cfg.canonical.casefold, cfg.canonical.punctuation_to_space)
        self._classes = token_classes()
        self._unicode: UnicodeTables | None = None  # built on the first non-ASCII text
        self._key = hash_key(cfg)
        #: the SipHash key of every hash (``fingerprint.secret``; the evidence sketches take it too)
        self.hash_key = self._key
        # keyed, the signature's windows are seeded from the secret too: someone without it
        # cannot compute the symbols of a guessed text
        self._sig_seed = signature_seed(cfg)
        check_fold(cfg.canonical)  # a fold that cannot run fails at start-up (~7 ms to load)

    def check_text(self, text: object, index: int = 0) -> str:
        """Return ``text`` as ``str`` or raise :class:`InputError` saying what is wrong."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"text {index}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        if not isinstance(text, str):
            raise InputError(f"text {index}: expected str or UTF-8 bytes, got {type(text).__name__}")
        limit = self.cfg.max_text_bytes
        if text.isascii():
            if len(text) > limit:
                raise InputError(f"text {index}: over fingerprint.max_text_bytes ({limit} bytes)")
            return text
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InputError(f"text {index}: not encodable as UTF-8 ({exc.reason} at {exc.start})") from None
        if size > limit:
            raise InputError(f"text {index}: over fingerprint.max_text_bytes ({limit} bytes)")
        return text

    def _all_plain_ascii(self, texts: Sequence[object]) -> bool:
        """True when every text is an ASCII ``str`` within the size limit (then check_text
        would pass them all): the common batch, checked with a few C-level passes."""
        try:
            joined = "".join(texts)  # type: ignore[arg-type]
        except TypeError:  # not all str
            return False
        return joined.isascii() and max(map(len, texts), default=0) <= self.cfg.max_text_bytes  # type: ignore[arg-type]

    def fingerprint_batch(self, texts: Sequence[object]) -> FingerprintBatch:
        """Fingerprint a batch of texts (``str`` or UTF-8 ``bytes``).

        Raises:
            InputError: for the first text that is not a string, not UTF-8 or too large. Callers
                that must keep going (file mode, Kafka) check each text with :meth:`check_text`
                first and dead-letter the bad ones.
        """
        if not self._all_plain_ascii(texts):
            texts = [self.check_text(t, i) for i, t in enumerate(texts)]
        try:
            raw, offsets = prepare_batch(list(texts), self.cfg.canonical)
        except UnicodeEncodeError as exc:  # lone surrogates cannot be UTF-8
            raise InputError(f"text is not encodable as UTF-8: {exc.reason}") from None
        return self._run(raw, offsets)

    def fingerprint_prepared(self, texts: PreparedTexts) -> FingerprintBatch:
        """Fingerprint texts already in the kernel's input form (no checks: the caller made them)."""
        return self._run(texts.raw, texts.offsets)

    def placeholder_batch(self, n: int, seed: int = 0) -> FingerprintBatch:
        """``n`` made-up fingerprints (random MinHash, keys, digests and 8-symbol signatures of
        non-empty texts; text 1 a copy of text 0) in exactly the arrays a real batch has.

        For compiling the kernels downstream of fingerprinting (decide, records, verification)
        without waiting for the fingerprint kernel: Numba compiles for the arrays' types, not
        their values (``streamdedup.warmup.fill``). Never a fingerprint of any text.
        """
        rng = np.random.default_rng(seed)
        out = self._outputs(n, 8 * n + 1)
        for name in ("minhash", "band_out", "lead_out", "char_mh", "char_out", "digests"):
            arr = out[name]
            arr[...] = rng.integers(1, np.iinfo(arr.dtype).max, arr.shape, dtype=arr.dtype, endpoint=False)
        for name in ("fine_buf", "coarse_buf", "canon"):
            out[name][...] = rng.integers(97, 123, out[name].shape, dtype=np.uint8)
        for name in ("canon_off", "fine_off", "coarse_off"):
            out[name][...] = 8 * np.arange(n + 1)
        out["n_shingles"][...] = 6
        out["chars"][...] = 8
        if n > 1:
            for name in ("minhash", "band_out", "lead_out", "char_mh", "char_out", "digests"):
                out[name][1] = out[name][0]
        return self._finish(out)

    def _outputs(self, n: int, size: int) -> dict[str, np.ndarray]:
        """The kernel's output arrays for ``n`` texts of ``size - 1`` raw bytes in all."""
        k = self.cfg.minhash.num_perm
        lead = self.cfg.lead
        return {
            "canon": np.empty(size, dtype=np.uint8),
            "canon_off": np.empty(n + 1, dtype=np.int64),
            "minhash": np.empty((n, k), dtype=np.uint32),
            "band_out": np.empty((n, self.lsh.bands), dtype=np.uint64),
            "n_shingles": np.empty(n, dtype=np.int64),
            "fine_buf": np.empty(size, dtype=np.uint8),
            "fine_off": np.empty(n + 1, dtype=np.int64),
            "coarse_buf": np.empty(size, dtype=np.uint8),
            "coarse_off": np.empty(n + 1, dtype=np.int64),
            "digests": np.empty((n, 2), dtype=np.uint64),
            "lead_out": np.zeros((n, lead.bands if lead.shingles > 0 else 0), dtype=np.uint64),
            "char_mh": np.zeros((n, self.cfg.chars.num_perm if self.cfg.chars.bands > 0 else 0), dtype=np.uint32),
            "char_out": np.zeros((n, self.cfg.chars.bands), dtype=np.uint64),
            "status": np.zeros(1, dtype=np.int64),
            "chars": np.empty(n, dtype=np.int64),
            "anchors": np.empty((n, MAX_ANCHORS), dtype=np.uint32),
            "anchor_n": np.zeros(n, dtype=np.int64),
        }

    def _run(self, raw: np.ndarray, offsets: np.ndarray) -> FingerprintBatch:
        c = self.cfg.canonical
        settings = (c.nfkc, c.casefold, c.punctuation_to_space, c.fold_traditional != "off")
        if self._unicode is None:  # built for this batch's pre-scan (prepare_batch), if it had non-ASCII text
            self._unicode = built_tables(*settings)
        out = self._kernel(raw, offsets, self._unicode or _NO_TABLES)
        if out["status"][0]:  # a non-ASCII text made elsewhere (PreparedTexts): build the tables, run again
            self._unicode = tables(*settings)
            out = self._kernel(raw, offsets, self._unicode)
        return self._finish(out)

    def _kernel(self, raw: np.ndarray, offsets: np.ndarray, u: UnicodeTables) -> dict[str, np.ndarray]:
        cfg = self.cfg
        n = offsets.shape[0] - 1
        k = cfg.minhash.num_perm
        out = self._outputs(n, raw.shape[0] + 1)
        lead = cfg.lead
        sig = cfg.signature
        ch = cfg.chars
        _kernels.fingerprint_batch(
            # read-only inputs whichever way they were made: one compiled kernel (see _kernels.readonly)
            _kernels.readonly(raw), _kernels.readonly(offsets), self._cmap, u.umap, u.repl_off, u.repl, self._classes,
            cfg.shingle.kind == "word", cfg.shingle.size, cfg.shingle.unspaced_size,
            k, self._log2k, cfg.minhash.method == "classic", np.uint64(cfg.minhash.seed),
            self.lsh.bands, self.lsh.rows,
            sig.neighbourhood, sig.compression, sig.compression * sig.coarse_factor, sig.residue,
            self._sig_seed, self._alphabet,
            out["canon"], out["canon_off"], out["minhash"], out["band_out"], out["n_shingles"],
            out["fine_buf"], out["fine_off"], out["coarse_buf"], out["coarse_off"], out["digests"],
            lead.shingles, lead.num_perm, lead.num_perm.bit_length() - 1, out["lead_out"].shape[1], lead.rows,
            out["lead_out"],
            ch.size, ch.sample_bits, ch.num_perm, ch.num_perm.bit_length() - 1, ch.bands, ch.rows, out["char_mh"], out["char_out"],
            out["status"], out["chars"], ANCHOR_WINDOW, ANCHOR_FIRST, out["anchors"], out["anchor_n"], *self._key,
        )
        return out

    def _finish(self, out: dict[str, np.ndarray]) -> FingerprintBatch:
        canon, canon_off, n_shingles = out["canon"], out["canon_off"], out["n_shingles"]
        band_out, lead_out, fine_off, coarse_off = out["band_out"], out["lead_out"], out["fine_off"], out["coarse_off"]
        empty = n_shingles == 0
        band_out[empty] = 0
        lead_out[empty] = 0
        out["char_out"][empty] = 0
        # signatures are cut at MAX_SIGNATURE_SYMBOLS (see there)
        fine_len = np.minimum(np.diff(fine_off), MAX_SIGNATURE_SYMBOLS)
        coarse_len = np.minimum(np.diff(coarse_off), MAX_SIGNATURE_SYMBOLS)
        return FingerprintBatch(
            params=self.params,
            minhash=out["minhash"],
            band_keys=band_out,
            lead_keys=lead_out,
            char_keys=out["char_out"],
            char_minhash=out["char_mh"],
            chars=out["chars"],
            lengths=np.diff(canon_off),
            n_shingles=n_shingles,
            empty=empty,
            digest_words=out["digests"],
            fine_buf=out["fine_buf"],
            fine_start=fine_off[:-1],
            fine_len=fine_len,
            coarse_buf=out["coarse_buf"],
            coarse_start=coarse_off[:-1],
            coarse_len=coarse_len,
            canon_buf=canon,
            canon_start=canon_off[:-1],
            anchors=out["anchors"],
            anchor_n=out["anchor_n"],
        )


def _readonly_empty(dtype: type) -> np.ndarray:
    return _kernels.readonly(np.zeros(0, dtype=dtype))


#: no tables yet: a batch with a non-ASCII text reports it (``status``) and runs again with them
_NO_TABLES = UnicodeTables(_readonly_empty(np.int32), _readonly_empty(np.int32), _readonly_empty(np.uint8),
                           _readonly_empty(np.uint8), _readonly_empty(np.uint8), _readonly_empty(np.uint8))


def _split(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """Texts ``buf[starts[i]:starts[i] + lengths[i]]`` (increasing, non-overlapping) as bytes."""
    if len(starts) == 0:
        return []
    # one bytes object, then slices: list indexing is several times cheaper than numpy
    # scalar indexing in this per-text loop
    raw = buf[:int(starts[-1] + lengths[-1])].tobytes()
    st = starts.tolist()
    ln = lengths.tolist()
    return [raw[s:s + n] for s, n in zip(st, ln)]
