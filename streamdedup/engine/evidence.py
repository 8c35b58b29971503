"""The engine's answers to the decide loop's exact-evidence questions (issue 11; pure core).

When a document's only pairs sit below ``verify.ld_min_jaccard`` and the best of them aligns
at ``verify.exact_min_ld`` or more, the decide kernel stops and asks for the exact byte 8-gram
Jaccard of the two canonical texts (``_kernels.evidence``); the engine answers and the kernel
decides that document (``_kernels.decide``). The earlier text comes from this batch, from the
texts of recent batches kept here (no read, no Python object per document), or from the
earlier document's stored record, which ends with its canonical text: the answer depends
only on the two texts, so a restarted engine (empty cache, records on disk) answers the same.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from streamdedup.engine import record as engine_record
from streamdedup.state.base import Store
from streamdedup.engine.verify import EvidenceTables

#: canonical text bytes of recent batches kept in memory (a copy's original is usually minutes
#: or hours old: older ones are read from their records)
RECENT_TEXT_BYTES = 32 << 20


class _Texts:
    """The canonical texts of one decided batch, by seq."""

    def __init__(self, seqs: np.ndarray, buf: np.ndarray, start: np.ndarray, length: np.ndarray):
        kept = np.flatnonzero(seqs >= 0)
        self.first = int(seqs[kept[0]])
        self.end = self.first + kept.shape[0]  # indexed documents get consecutive seqs
        self.row = kept
        self.buf, self.start, self.length = buf, start, length
        self.nbytes = int(buf.nbytes)  # what keeping it holds (a decoded staged batch: its records)

    def text(self, seq: int) -> np.ndarray:
        k = int(self.row[seq - self.first])
        s = int(self.start[k])
        return self.buf[s:s + int(self.length[k])]


class Evidence:
    """Exact-evidence answers for one engine: recent texts in memory, older ones from ``store``."""

    def __init__(self, store: Store, budget: int = RECENT_TEXT_BYTES):
        self.store = store
        self.budget = budget
        self._recent: deque[_Texts] = deque()
        self._bytes = 0
        self._tables = EvidenceTables()
        #: questions answered, and how many needed a record read (metrics, benchmarks)
        self.asked = 0
        self.read = 0

    def answer(self, buf: np.ndarray, start: np.ndarray, length: np.ndarray, i: int, seqs: np.ndarray,
               seq: int) -> tuple[float, float, float, float, float]:
        """The exact evidence (:meth:`EvidenceTables.measure`) of this batch's document ``i``
        (canonical texts ``buf``/``start``/``length``, seqs so far ``seqs[:i]``) against the
        document ``seq``."""
        self.asked += 1
        b = buf[int(start[i]):int(start[i]) + int(length[i])]
        a = self.text_of(buf, start, length, i, seqs, seq)
        if a is None:
            return 0.0, 0.0, 0.0, 0.0, 0.0  # no earlier text: no evidence
        return self._tables.measure(a, b)

    def text_of(self, buf, start, length, i: int, seqs: np.ndarray, seq: int) -> np.ndarray | None:
        """The canonical text of the earlier document ``seq`` that this batch's document ``i``
        is compared with (None when no record of it keeps one)."""
        same = np.flatnonzero(seqs[:i] == seq)
        if same.shape[0]:
            k = int(same[0])
            return buf[int(start[k]):int(start[k]) + int(length[k])]
        for t in reversed(self._recent):
            if t.first <= seq < t.end:
                return t.text(seq)
        self.read += 1
        raw = self.store.get_many([seq])[0]
        text = None if raw is None else engine_record.canonical_text(raw, seq)
        # its record is gone (evicted since) or keeps no text (written with state.keep_text: false)
        return None if text is None else np.frombuffer(text, dtype=np.uint8)

    def remember(self, seqs: np.ndarray, buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> None:
        """Keep a decided batch's texts (its arrays, not copies), dropping the oldest over budget."""
        if not (seqs >= 0).any():
            return
        t = _Texts(seqs, buf, start, length)
        self._recent.append(t)
        self._bytes += t.nbytes
        while self._bytes > self.budget and len(self._recent) > 1:
            self._bytes -= self._recent.popleft().nbytes
