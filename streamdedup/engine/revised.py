"""Which of a batch's duplicates are revisions of the document they matched (pure core).

Runs after the decide kernel, before the records are written: a revision's record carries the
flag and what changed (``engine_record``), so a replay re-emits the same decision and a
restarted engine never needs to ask again. The two texts are the canonical texts exact
evidence reads (this batch, recent batches in memory, else the earlier document's record);
the test is :func:`streamdedup.engine.revisions.detect` (its cost per pair is stated there).
"""

from __future__ import annotations

import numpy as np

from streamdedup._kernels.records import F_REVISION
from streamdedup._kernels.verify import REL_EXACT
from streamdedup.engine.evidence import Evidence
from streamdedup.engine.revisions import detect


def mark(evidence: Evidence, canon_buf: np.ndarray, canon_start: np.ndarray, lengths: np.ndarray, seqs: np.ndarray,
         matched: np.ndarray, relations: np.ndarray, flags: np.ndarray) -> dict[int, tuple[str, ...]]:
    """Flag ``F_REVISION`` in ``flags`` for every duplicate of the batch that revises its match;
    returns what each changed, by batch row. An exact copy (same canonical text) is never one,
    nor a duplicate whose match keeps no text."""
    out: dict[int, tuple[str, ...]] = {}
    for i in np.flatnonzero((relations > 0) & (relations != REL_EXACT)).tolist():
        earlier = evidence.text_of(canon_buf, canon_start, lengths, i, seqs, int(matched[i]))
        if earlier is None:
            continue
        s = int(canon_start[i])
        later = canon_buf[s:s + int(lengths[i])]
        if earlier.shape == later.shape and np.array_equal(earlier, later):
            continue
        r = detect(earlier.tobytes().decode("utf-8"), later.tobytes().decode("utf-8"))
        if r.revised:
            flags[i] |= F_REVISION
            out[i] = r.changed
    return out
