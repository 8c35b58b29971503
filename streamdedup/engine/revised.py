"""Which of a batch's duplicates are revisions of the document they matched (pure core).

Runs after the decide kernel, before the records are written: a revision's record carries the
flag and what changed (``engine_record``), so a replay re-emits the same decision and a
restarted engine never needs to ask again. The two texts are the canonical texts exact
evidence reads (this batch, recent batches in memory, else the earlier document's record);
the test is :func:`streamdedup.engine.revision_kernel.detect_many`, once a batch (compiled; the rules are
:func:`streamdedup.engine.revisions.detect`'s, its cost bound in :mod:`streamdedup._kernels.revision`).
A revision read only in part (texts too long to align, or the work bound met) says so last in
what it changed.
"""

from __future__ import annotations

import numpy as np

from streamdedup._kernels.records import F_REVISION
from streamdedup._kernels.verify import REL_EXACT
from streamdedup.engine.evidence import BatchTexts, Evidence
from streamdedup.engine.revision_kernel import PARTIAL_ITEM, detect_many


def mark(evidence: Evidence, texts: BatchTexts, seqs: np.ndarray, matched: np.ndarray, relations: np.ndarray,
         flags: np.ndarray, roots: np.ndarray | None = None, threads: int = 1) -> dict[int, tuple[str, ...]]:
    """Flag ``F_REVISION`` in ``flags`` for every duplicate of the batch that revises its match;
    returns what each changed, by batch row. An exact copy (same canonical text) is never one,
    nor a duplicate whose match keeps no text, nor one whose changes vanish with the
    boilerplate blocks (``_kernels.blocks``, by the anchor counts each record keeps) left out of
    both texts: another outlet's disclaimer or newsletter notice is no change to the story.

    A duplicate that does not revise its match, when that match is a copy of another story
    (``roots``), is compared with that story too: the match may be a copy under a footer or a
    slug, and the update is of the story. It revises the story when the match does not (a copy
    of a revision is a copy of the revision, not one itself). The batch's pairs are tested in one
    kernel call, the second readings in another, and the few revised ones with blocks again, each
    on ``threads`` threads (``verify.revision_threads``)."""
    rows, pairs, keys = [], [], []
    for i in np.flatnonzero((relations > 0) & (relations != REL_EXACT)).tolist():
        found = evidence.prints_of(texts, i, seqs, int(matched[i]))
        if found is None:
            continue
        earlier, earlier_keys = found
        later = texts.text(i)
        if earlier.shape == later.shape and np.array_equal(earlier, later):
            continue
        rows.append(i)
        pairs.append((earlier, later))
        keys.append(earlier_keys)
    results = detect_many(pairs, threads=threads)
    if roots is not None:
        _of_the_story(evidence, texts, seqs, matched, roots, rows, pairs, keys, results, threads)
    revised, again, lefts = [], [], []
    for i, (earlier, later), earlier_keys, r in zip(rows, pairs, keys, results):
        if not r.revised:
            continue
        # a difference made of boilerplate blocks only is none: the texts without them are read
        # again (in one more kernel call), which only ever clears a revision or names its
        # changes without the blocks (the blocks are the one difference left out)
        left = evidence.blocks_left_out(earlier, earlier_keys, later, texts.keys(i))
        if left is None:
            revised.append((i, r))
        elif not np.array_equal(*left):
            again.append(i)
            lefts.append(left)
    revised += [(i, r) for i, r in zip(again, detect_many(lefts, threads=threads)) if r.revised]
    out: dict[int, tuple[str, ...]] = {}
    for i, r in revised:
        flags[i] |= F_REVISION
        out[i] = r.changed + (PARTIAL_ITEM,) if r.partial else r.changed
    return out


def _of_the_story(evidence: Evidence, texts: BatchTexts, seqs: np.ndarray, matched: np.ndarray, roots: np.ndarray,
                  rows: list, pairs: list, keys: list, results: list, threads: int) -> None:
    """The second reading of :func:`mark`: each pair not revised whose match is a copy of a
    story (its root) is read against the story, and so is the match; where the match does not
    revise the story and the later text does without a typo-like block, the pair becomes
    (story, later text)."""
    asked, second = [], []
    for q, (i, r) in enumerate(zip(rows, results)):
        root = int(roots[i])
        if r.revised or root < 0 or root == int(matched[i]):
            continue
        found = evidence.prints_of(texts, i, seqs, root)
        if found is None:
            continue
        story = found[0]
        asked.append((q, found))
        second += [(story, pairs[q][0]), (story, pairs[q][1])]
    if not asked:
        return
    got = detect_many(second, threads=threads)
    for k, (q, (story, story_keys)) in enumerate(asked):
        match_revises, later_revises = got[2 * k], got[2 * k + 1]
        # only a clean reading (no typo-like blocks against the story) overrules the match's:
        # the match's noise is what hid the change, not the later text's own
        if later_revises.revised and not later_revises.typos and not match_revises.revised:
            pairs[q] = (story, pairs[q][1])
            keys[q] = story_keys
            results[q] = later_revises
