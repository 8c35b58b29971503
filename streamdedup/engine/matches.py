"""Who a duplicate matched, by id and by input position (pure core).

The decide kernel names a duplicate's root and matched document by seq. The runtimes and the
operator tools need their ids (tags ``duplicate_of``, ``matched``) and where they were read
(tags ``original``, ``matched_source``: the inspector fetches the original from there). A
document of the same batch is named by the batch itself; an earlier one by its stored record
(each record keeps its source id and offset), read for the duplicates only: one batched read
for the matched records, one more for roots that are not themselves matched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from streamdedup.engine import record as engine_record
from streamdedup.engine.checkpoint import Source
from streamdedup.engine.recent import RecentBatches
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


class RecentDocuments:
    """The id, root id and input position of each document of recent batches: what its state
    record says of it (``record.match_fields``), without reading the record."""

    def __init__(self, limit: int = RECENT_DOCUMENTS):
        #: per batch: its ids, its duplicates' roots by row, and each document's source and offset
        self._batches: RecentBatches[tuple[Sequence[str], dict[int, str], np.ndarray, np.ndarray]] = RecentBatches(limit)

    def remember(self, seqs: np.ndarray, ids: Sequence[str], root_ids: dict[int, str], source_ids: np.ndarray,
                 offsets: np.ndarray) -> None:
        """A decided batch (``root_ids``: its duplicates' roots, by row)."""
        # copies of the positions: the caller's arrays may be reused
        self._batches.add(seqs, (ids, root_ids, np.array(source_ids), np.array(offsets)), int((seqs >= 0).sum()))

    def fields(self, seq: int) -> tuple[str, str, int, int] | None:
        """(id, root id, source id, offset) of the document ``seq``, or None when no recent batch has it."""
        found = self._batches.find(seq)
        if found is None:
            return None
        (ids, root_ids, source_ids, offsets), row = found
        doc_id = ids[row]
        return doc_id, root_ids.get(row, doc_id), int(source_ids[row]), int(offsets[row])


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
