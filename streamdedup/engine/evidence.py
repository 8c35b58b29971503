"""The engine's answers to the decide loop's exact-evidence questions (pure core).

When the sketches cannot settle a document (a pair below ``verify.ld_min_jaccard`` that aligns
well, a short text in a longer one, a short story under boilerplate blocks), the decide kernel
stops and asks for the exact byte 8-gram evidence of the two canonical texts
(``_kernels.evidence``, ``_kernels.questions``); the engine answers and the kernel decides that
document (``_kernels.decide``). The earlier text and its anchor keys come from this batch,
from recent batches kept here (no read, no Python object per document), or from the earlier
document's stored record, which ends with its canonical text: the answer depends only on the
two texts and the anchor counts stored with them, so a restarted engine (empty cache, records
on disk) answers the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamdedup._kernels import readonly
from streamdedup._kernels.blocks import block_mask, left_out
from streamdedup._kernels.evidence import table_size as gram_table_size
from streamdedup._kernels.questions import N_SAID, S_BLOCK_JACCARD
from streamdedup.engine import record as engine_record
from streamdedup.engine.recent import RecentBatches
from streamdedup.sketch import evidence_sketch
from streamdedup.state.base import Store
from streamdedup.engine.verify import EvidenceTables

#: canonical text bytes of recent batches kept in memory (a copy's original is usually minutes
#: or hours old: older ones are read from their records)
RECENT_TEXT_BYTES = 32 << 20
#: the least text a story keeps without its boilerplate blocks to be compared so: a story that
#: is all boilerplate (or nearly) is compared whole
BLOCK_MIN_BYTES = 100
#: the share of a text's block 8-grams the other text must hold to carry that block itself
BLOCK_SHARED = 0.5
_NO_KEYS = (np.zeros(0, np.uint32), np.zeros(0, np.uint8))


@dataclass(frozen=True)
class BatchTexts:
    """A batch's canonical texts (``buf[start[k]:][:length[k]]``) and anchor keys with the
    counts that judge their boilerplate blocks (``anchors[k, :anchor_n[k]]``, ``anchor_hot``);
    where no text is kept, their evidence sketches (``sketch[k]``) answer instead."""

    buf: np.ndarray
    start: np.ndarray
    length: np.ndarray
    anchors: np.ndarray
    anchor_n: np.ndarray
    anchor_hot: np.ndarray
    sketch: np.ndarray | None = None

    def text(self, k: int) -> np.ndarray:
        s = int(self.start[k])
        return self.buf[s:s + int(self.length[k])]

    def keys(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = int(self.anchor_n[k])
        return self.anchors[k, :n], self.anchor_hot[k, :n]


#: the anchor keys of an unkeyed fingerprint (no ``fingerprint.secret``)
NO_KEY = (np.uint64(0), np.uint64(0), False)


def _any_hot(hots: np.ndarray, hot: int) -> bool:
    """Whether one of a text's anchor keys has a count of ``hot`` or more (starts a block)."""
    return hots.shape[0] > 0 and int(hots.max()) >= hot


def _key_arrays(keys: np.ndarray, hots: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    return (readonly(np.ascontiguousarray(keys, np.uint32)), readonly(np.ascontiguousarray(hots, np.uint8)),
            keys.shape[0])


def block_mask_of(text: np.ndarray, keys: np.ndarray, hots: np.ndarray, hot: int,
                  key: tuple = NO_KEY) -> np.ndarray | None:
    """The boilerplate block (1, 2, ...; 0: none) each byte of ``text`` is in, its keys of
    count ``hot`` or more starting one (``_kernels.blocks``), or None when it has none.
    ``key``: the anchor keys' secret (``sketch.fingerprint.hash_key``)."""
    if not _any_hot(hots, hot):
        return None
    mask = np.empty(text.shape[0], np.int32)
    # read-only whichever way the arrays came (batch, record): one compiled kernel
    blocks = block_mask(readonly(text), *_key_arrays(keys, hots), hot, mask, *key)
    return mask if blocks else None


class Evidence:
    """Exact-evidence answers for one engine: recent texts in memory, older ones from ``store``
    (records decoded with the index's ``bands`` and ``num_perm``); an anchor key of count ``hot``
    (``engine.hot_bucket_clusters``) starts a boilerplate block."""

    def __init__(self, store: Store, bands: int, num_perm: int, hot: int, budget: int = RECENT_TEXT_BYTES,
                 key: tuple = NO_KEY, sketches: bool = False):
        self.store = store
        #: no texts kept: questions are answered from the evidence sketches (:meth:`from_sketches`)
        self.sketches = sketches
        self.key = key
        self.bands, self.num_perm, self.hot = bands, num_perm, hot
        #: recent batches' texts, at most ``budget`` bytes of them
        self._recent: RecentBatches[BatchTexts] = RecentBatches(budget)
        #: the batch being decided (its seqs array) and its first document's seq
        self._batch_first: tuple[np.ndarray, int] | None = None
        self._tables = EvidenceTables()
        #: questions answered, and how many needed a record read (metrics, benchmarks)
        self.asked = 0
        self.read = 0

    def respond(self, out, texts: BatchTexts, i: int, seqs: np.ndarray) -> bool:
        """Whether the decide kernel stopped at document ``i`` with a question (``out``: its
        ``decide.outputs``); if so, its answer is in ``out.said[i]`` (:meth:`answer`)."""
        if out.ask[i] < 0 or not np.isnan(out.said[i, 0]):
            return False
        blocks = not np.isnan(out.said[i, S_BLOCK_JACCARD])  # a question about boilerplate blocks
        out.said[i] = self.answer(texts, i, seqs, int(out.ask[i]), blocks)
        return True

    def answer(self, texts: BatchTexts, i: int, seqs: np.ndarray, seq: int, blocks: bool = False) -> tuple[float, ...]:
        """The exact evidence (``_kernels.questions.S_*``) of this batch's document ``i`` (seqs so
        far ``seqs[:i]``) against the document ``seq``: :meth:`EvidenceTables.measure` of the two
        texts and -1.0 for the three block columns; for a question about ``blocks``, -1.0 for
        the whole texts' five (the kernel reads only the others) and the 8-gram Jaccard, digits
        as 0 and near-word share of the texts without their boilerplate blocks (-1.0 each when
        :meth:`blocks_left_out` leaves none out)."""
        self.asked += 1
        if self.sketches:
            return self.from_sketches(texts, i, seqs, seq, blocks)
        b = texts.text(i)
        earlier = self.prints_of(texts, i, seqs, seq, keys=blocks)
        if earlier is None:
            return (0.0,) * 5 + (-1.0,) * 3  # no earlier text: no evidence
        a, a_keys = earlier
        if not blocks:
            return self._tables.measure(a, b) + (-1.0,) * 3
        left = self.blocks_left_out(a, a_keys, b, texts.keys(i))
        return (-1.0,) * 5 + ((-1.0,) * 3 if left is None else self._tables.measure(*left)[:3])

    def from_sketches(self, texts: BatchTexts, i: int, seqs: np.ndarray, seq: int, blocks: bool) -> tuple[float, ...]:
        """:meth:`answer` without texts: the 8-gram Jaccard and the same with digits read as 0
        estimated from the two texts' evidence sketches (``sketch.evidence_sketch``), and
        ``NEAR_UNMEASURED`` for the near-word share, which no sketch holds (the digits' rule and
        the threshold still judge). A short text in a longer one and a story without its
        boilerplate blocks need the texts: those questions are answered no (-1.0), as is a pair
        whose earlier record keeps no sketch (one written before sketches were kept)."""
        if blocks or texts.sketch is None:
            return (-1.0,) * N_SAID
        earlier = self.sketch_of(texts, i, seqs, seq)
        if earlier is None:
            return (0.0,) * 5 + (-1.0,) * 3
        plain, folded = evidence_sketch.jaccards(earlier, texts.sketch[i])
        return (plain, folded, evidence_sketch.NEAR_UNMEASURED, -1.0, -1.0) + (-1.0,) * 3

    def sketch_of(self, texts: BatchTexts, i: int, seqs: np.ndarray, seq: int) -> np.ndarray | None:
        """The evidence sketches of the earlier document ``seq`` (None when its record keeps none)."""
        held = self._held(texts, i, seqs, seq)
        if held is not None and held[0].sketch is not None:
            return held[0].sketch[held[1]]
        self.read += 1
        raw = self.store.get_many([seq])[0]
        return None if raw is None else engine_record.evidence_sketch(raw)

    def _held(self, texts: BatchTexts, i: int, seqs: np.ndarray, seq: int) -> tuple[BatchTexts, int] | None:
        """Where the earlier document ``seq`` is in memory: this batch before row ``i`` (seqs
        so far ``seqs[:i]``) or a recent batch, as (its texts, its row); None when only its
        record has it."""
        row = self._in_batch(seqs, i, seq)
        if row >= 0:
            return texts, row
        return self._recent.find(seq)

    def _in_batch(self, seqs: np.ndarray, i: int, seq: int) -> int:
        """The row of ``seq`` among the batch's rows before ``i``, or -1. The batch's documents
        have its highest seqs: one before its first is in an earlier batch, found without a
        search of the batch (most are)."""
        first = self._batch_first
        if first is None or first[0] is not seqs:
            rows = np.flatnonzero(seqs[:i] >= 0)
            if not rows.shape[0]:
                return -1
            # rows are decided in order: the first indexed one before i is the batch's first
            first = self._batch_first = (seqs, int(seqs[rows[0]]))
        if seq < first[1]:
            return -1
        same = np.flatnonzero(seqs[:i] == seq)
        return int(same[0]) if same.shape[0] else -1

    def blocks_left_out(self, a: np.ndarray, a_keys, b: np.ndarray, b_keys) -> tuple[np.ndarray, np.ndarray] | None:
        """Both texts without their boilerplate blocks, or None: when neither has one, or either
        keeps less than :data:`BLOCK_MIN_BYTES` (a story that is all boilerplate is compared
        whole). A block is left out only where the other text does not carry it (it does not
        have the block's anchor key, and less than :data:`BLOCK_SHARED` of the block's 8-grams):
        another outlet's notice goes, while a sentence both texts have (a template's opening, a
        block whose key a typo broke in the other) stays in both and is no difference between
        them. One compiled call (``_kernels.blocks.left_out``)."""
        (ak, ah), (bk, bh) = a_keys, b_keys
        if not (_any_hot(ah, self.hot) or _any_hot(bh, self.hot)):
            return None  # most pairs (the revision test reads every linked pair): no block to leave out
        keys, states = self._tables.gram_tables(gram_table_size(a.shape[0], b.shape[0]))
        longer = max(a.shape[0], b.shape[0])
        out_a, out_b = np.empty(a.shape[0], np.uint8), np.empty(b.shape[0], np.uint8)
        # read-only whichever way the arrays came (batch, record): one compiled kernel
        kept_a, kept_b = left_out(readonly(a), *_key_arrays(ak, ah), readonly(b), *_key_arrays(bk, bh), self.hot,
                                  *self.key, BLOCK_SHARED, BLOCK_MIN_BYTES, keys, states, np.empty(longer, np.int32),
                                  np.empty(longer + 1, np.float64), out_a, out_b)
        return None if kept_a < 0 else (out_a[:kept_a], out_b[:kept_b])

    def prints_of(self, texts: BatchTexts, i: int, seqs: np.ndarray, seq: int,
                  keys: bool = True) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None:
        """The canonical text of the earlier document ``seq`` and its anchor keys with their
        stored counts (None when no record of it keeps a text)."""
        held = self._held(texts, i, seqs, seq)
        if held is not None:
            return held[0].text(held[1]), held[0].keys(held[1])
        self.read += 1
        raw = self.store.get_many([seq])[0]
        if raw is None:
            return None  # its record is gone (evicted since)
        if not keys:
            text = engine_record.canonical_text(raw, seq)
            return None if text is None else (np.frombuffer(text, dtype=np.uint8), _NO_KEYS)
        text, anchors, anchor_hot = engine_record.text_and_anchors(seq, raw, self.bands, self.num_perm)
        # a record written with state.keep_text: false keeps no text
        return None if text is None else (np.frombuffer(text, dtype=np.uint8), (anchors, anchor_hot))

    def remember(self, seqs: np.ndarray, texts: BatchTexts) -> None:
        """Keep a decided batch's texts (its arrays, not copies), dropping the oldest over budget."""
        # what keeping it holds (a decoded staged batch: its records)
        self._recent.add(seqs, texts, int(texts.buf.nbytes) + (0 if texts.sketch is None else int(texts.sketch.nbytes)))
