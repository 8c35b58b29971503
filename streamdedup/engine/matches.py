"""Who a duplicate matched, by id and by input position (pure core).

The decide kernel names a duplicate's root and matched document by seq. The runtimes and the
operator tools need their ids (tags ``duplicate_of``, ``matched``) and where they were read
(tags ``original``, ``matched_source``: the inspector fetches the original from there). A
document of the same batch is named by the batch itself; an earlier one by its stored record
(each record keeps its source id and offset), read for the duplicates only: one batched read
for the matched records, one more for roots that are not themselves matched.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from streamdedup.engine import record as engine_record
from streamdedup.engine.checkpoint import Source
from streamdedup.errors import StreamdedupError
from streamdedup.state.base import Store

FILE_PREFIX = "file:"
#: documents of recent batches whose ids and positions are kept in memory (~30 bytes each): a
#: copy's original is usually minutes old, and its record need not be read and parsed
RECENT_DOCUMENTS = 200_000


def where(sources: Sequence[Source], source_id: int, offset: int) -> str | None:
    """A document's input position: ``topic:partition:offset`` for Kafka, ``line:N`` for a file
    (or stdin); None when it has none (documents handed to the engine without a position)."""
    if 0 <= source_id < len(sources):
        src = sources[source_id]
        if not src.topic.startswith(FILE_PREFIX):
            return f"{src.topic}:{src.partition}:{offset}"
    return f"line:{offset}" if offset >= 0 else None


@dataclass
class Matches:
    """Per duplicate (by position in the batch): root id, matched id, and their input positions."""

    root_ids: dict[int, str] = field(default_factory=dict)
    matched_ids: dict[int, str] = field(default_factory=dict)
    originals: dict[int, str | None] = field(default_factory=dict)
    matched_sources: dict[int, str | None] = field(default_factory=dict)


class _Batch:
    """One decided batch's documents, by seq (indexed documents get consecutive seqs)."""

    def __init__(self, seqs: np.ndarray, ids: Sequence[str], root_ids: dict[int, str], source_ids: np.ndarray,
                 offsets: np.ndarray):
        self.rows = np.flatnonzero(seqs >= 0)
        self.first = int(seqs[self.rows[0]])
        self.end = self.first + self.rows.shape[0]
        self.ids, self.root_ids, self.source_ids, self.offsets = ids, root_ids, source_ids, offsets

    def fields(self, seq: int) -> tuple[str, str, int, int]:
        row = int(self.rows[seq - self.first])
        doc_id = self.ids[row]
        return doc_id, self.root_ids.get(row, doc_id), int(self.source_ids[row]), int(self.offsets[row])


class RecentDocuments:
    """The id, root id and input position of each document of recent batches: what its state
    record says of it (``record.match_fields``), without reading the record."""

    def __init__(self, limit: int = RECENT_DOCUMENTS):
        self.limit = limit
        self._batches: deque[_Batch] = deque()
        self._firsts: deque[int] = deque()
        self._docs = 0

    def remember(self, seqs: np.ndarray, ids: Sequence[str], root_ids: dict[int, str], source_ids: np.ndarray,
                 offsets: np.ndarray) -> None:
        """A decided batch (``root_ids``: its duplicates' roots, by row)."""
        if not (seqs >= 0).any():
            return
        b = _Batch(seqs, ids, root_ids, np.array(source_ids), np.array(offsets))  # copies: the caller's may be reused
        if self._batches and b.first < self._batches[-1].end:  # seqs began again (a rebuilt index)
            self._batches.clear()
            self._firsts.clear()
            self._docs = 0
        self._batches.append(b)
        self._firsts.append(b.first)
        self._docs += b.end - b.first
        while self._docs > self.limit and len(self._batches) > 1:
            old = self._batches.popleft()
            self._firsts.popleft()
            self._docs -= old.end - old.first

    def fields(self, seq: int) -> tuple[str, str, int, int] | None:
        """(id, root id, source id, offset) of the document ``seq``, or None when no recent batch has it."""
        k = bisect_right(self._firsts, seq) - 1
        if k >= 0 and seq < self._batches[k].end:
            return self._batches[k].fields(seq)
        return None


def _stored(store: Store, seqs: set[int]) -> dict[int, bytes | None]:
    want = sorted(seqs)
    return dict(zip(want, store.get_many(want)))


def resolve(ids: Sequence[str], seqs: np.ndarray, roots: np.ndarray, matched: np.ndarray, relations: np.ndarray,
            first_seq: int, source_ids: np.ndarray, offsets: np.ndarray, sources: Sequence[Source],
            store: Store, recent: RecentDocuments | None = None, kept_from: int = 0) -> Matches:
    """The :class:`Matches` of a decided batch (``seqs``, ``roots``, ``matched``, ``relations``:
    the kernel's outputs; ``source_ids``/``offsets``: where each document of the batch was read;
    ``recent``: the documents of recent batches, read instead of their records from ``kept_from``
    on, below which the state may have deleted them: those are read, a deleted one has no position)."""
    out = Matches()
    dups = np.flatnonzero(relations).tolist()
    if not dups:
        return out
    in_batch = np.flatnonzero(seqs >= 0)  # seq first_seq + k is document in_batch[k]
    match_list, root_list = matched.tolist(), roots.tolist()
    src_list, off_list = source_ids.tolist(), offsets.tolist()
    known: dict[int, tuple[str, str, int, int]] = {}  # earlier documents: (id, root id, source id, offset)
    if recent is not None:
        for seq in {match_list[i] for i in dups if kept_from <= match_list[i] < first_seq} | {
                root_list[i] for i in dups if kept_from <= root_list[i] < first_seq}:
            got = recent.fields(seq)
            if got is not None:
                known[seq] = got
    stored = _stored(store, {match_list[i] for i in dups if match_list[i] < first_seq and match_list[i] not in known})

    def earlier(seq: int) -> tuple[str, str, int, int]:
        got = known.get(seq)
        if got is not None:
            return got
        raw = stored[seq]
        if raw is None:
            raise StreamdedupError(f"state record {seq} is missing although the index holds it: the state is damaged")
        return engine_record.match_fields(raw, seq)

    for i in dups:
        m = match_list[i]
        if m >= first_seq:
            j = int(in_batch[m - first_seq])
            out.matched_ids[i] = ids[j]
            out.root_ids[i] = out.root_ids.get(j, ids[j])
            out.matched_sources[i] = where(sources, src_list[j], off_list[j])
        else:
            out.matched_ids[i], out.root_ids[i], sid, offset = earlier(m)
            out.matched_sources[i] = where(sources, sid, offset)
    # the roots' positions: most duplicates matched their root; the others' roots are in the
    # batch, among the matched records read above, or one more read (a root that left the window
    # has none: its record is gone)
    others = [i for i in dups if root_list[i] != match_list[i]]
    missing = {root_list[i] for i in others
               if root_list[i] < first_seq and root_list[i] not in stored and root_list[i] not in known}
    if missing:
        stored.update(_stored(store, missing))
    for i in dups:
        r = root_list[i]
        if r == match_list[i]:
            out.originals[i] = out.matched_sources[i]
        elif r >= first_seq:
            j = int(in_batch[r - first_seq])
            out.originals[i] = where(sources, src_list[j], off_list[j])
        elif r in known:
            out.originals[i] = where(sources, *known[r][2:])
        else:
            raw = stored.get(r)
            out.originals[i] = None if raw is None else where(sources, *engine_record.source_of(raw, r))
    return out


def stored_positions(store: Store, sources: Sequence[Source], seqs: set[int]) -> dict[int, str | None]:
    """Input positions of the stored documents ``seqs`` (None for those no longer held)."""
    return {s: None if raw is None else where(sources, *engine_record.source_of(raw, s))
            for s, raw in _stored(store, seqs).items()}
