"""route: decisions -> where each record goes and with which tags (pure, runtime-neutral).

Every record of a prepared batch goes to exactly one destination: ``unique``, ``duplicate``,
``dead_letter`` or, under ``verify.revisions: topic`` only, ``revision``; a revision goes to
``unique``, ``duplicate`` or ``revision`` as ``verify.revisions`` says, with its own tags
either way. A runtime turns a :class:`Routed` into its own outputs (Kafka records with
headers, file-mode lines) with :mod:`streamdedup.pipeline.tags`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from streamdedup.config import Config, VerifyConfig
from streamdedup.engine.decisions import DUPLICATE, EMPTY_TEXT_REASON, REJECTED, BatchDecisions, Decision
from streamdedup.pipeline.prepare import Prepared
from streamdedup.pipeline.tags import (UNIQUE_HEADERS, DeadLetterTags, DuplicateTags, dead_letter_headers, duplicate_headers,
                                       time_invalid_header)

UNIQUE_DEST, DUPLICATE_DEST, DEAD_LETTER_DEST, REVISION_DEST = "unique", "duplicate", "dead_letter", "revision"


@dataclass(frozen=True)
class Output:
    """One output, declared once: its destination (what routing, the counts and the
    ``records_out`` metric call it), the ``kafka.*`` setting that names its topic, and file
    mode's file (``<file>.jsonl``). ``topic_policy_only``: written only under
    ``verify.revisions: topic``."""

    dest: str
    setting: str
    file: str
    topic_policy_only: bool = False

    def topic(self, kcfg) -> str:
        """Its topic under the Kafka settings ``kcfg``."""
        return getattr(kcfg, self.setting)


#: every output a run can write, in the order they are listed, created and checked
OUTPUTS = (
    Output(UNIQUE_DEST, "unique_topic", "unique"),
    Output(DUPLICATE_DEST, "duplicates_topic", "duplicates"),
    Output(DEAD_LETTER_DEST, "dead_letter_topic", "dead_letter"),
    Output(REVISION_DEST, "revisions_topic", "revisions", topic_policy_only=True),
)
#: every destination; ``revision`` is used only under ``verify.revisions: topic``
DESTINATIONS = tuple(o.dest for o in OUTPUTS)
DEST_INDEX = {d: i for i, d in enumerate(DESTINATIONS)}


def outputs_in_use(revisions_topic: bool = False) -> tuple[Output, ...]:
    """The outputs a run writes: all of them, those of ``verify.revisions: topic`` only when it
    is the policy (``revisions_topic``)."""
    return tuple(o for o in OUTPUTS if revisions_topic or not o.topic_policy_only)


def duplicate_tags(d: Decision) -> DuplicateTags:
    """The tags of a duplicate or a revision."""
    return DuplicateTags(d.duplicate_of or "", d.relation or "", d.similarity, d.ld_similarity, d.matched or "", d.reason or "",
                         d.original or "", d.matched_source or "", d.status, d.changed)


def revision_dest(verify: VerifyConfig) -> str:
    """Where a revision goes under ``verify.revisions`` (``off``: nothing is a revision)."""
    return {"duplicates": DUPLICATE_DEST, "topic": REVISION_DEST}.get(verify.revisions, UNIQUE_DEST)


def output_topics(cfg: Config) -> dict[str, str]:
    """Each destination's Kafka topic; the revisions topic only under ``verify.revisions: topic``.

    >>> sorted(output_topics(Config()))
    ['dead_letter', 'duplicate', 'unique']
    """
    return {o.dest: o.topic(cfg.kafka) for o in outputs_in_use(cfg.verify.revisions == "topic")}


def kafka_output(tags: DuplicateTags | DeadLetterTags | None, time_invalid: str | None = None,
                 revisions: str = UNIQUE_DEST) -> tuple[str, list]:
    """A record's destination and the headers its tags become: the one mapping of every Kafka
    runtime (the single processor, the staged worker, the faust agent). A record decided at
    the stream's time instead of its own event time says why (not a dead letter: it has a stage).
    ``revisions``: where a revision goes (:func:`revision_dest`).

    >>> kafka_output(None)[0], kafka_output(DeadLetterTags("json", "invalid JSON", "t:0:1"))[0]
    ('unique', 'dead_letter')
    """
    if tags is None:
        dest, headers = UNIQUE_DEST, UNIQUE_HEADERS
    elif isinstance(tags, DuplicateTags):
        dest, headers = revisions if tags.status == "revision" else DUPLICATE_DEST, duplicate_headers(tags)
    else:
        dest, headers = DEAD_LETTER_DEST, dead_letter_headers(tags)
    if time_invalid is not None and dest != DEAD_LETTER_DEST:
        headers = [*headers, time_invalid_header(time_invalid)]
    return dest, headers


def rejected_tags(reason: str | None, source: str) -> DeadLetterTags:
    """A text the engine refused (nothing left after canonicalisation)."""
    return DeadLetterTags("text", reason or EMPTY_TEXT_REASON, source)


def decision_tags(d: Decision | None, source: str) -> DuplicateTags | DeadLetterTags | None:
    """A decided record's tags (None: unique); ``d`` None: a document the engine refused and
    kept no decision of (a replay reads no stored decision for it)."""
    if d is None or d.status == "rejected":
        return rejected_tags(None if d is None else d.reason, source)
    return duplicate_tags(d) if d.status in ("duplicate", "revision") else None


def destinations(codes: np.ndarray, revised: np.ndarray, verify: VerifyConfig) -> np.ndarray:
    """The routing rule, for a batch at once: each decided document's destination as an index
    into :data:`DESTINATIONS`. A refused text is a dead letter, a revision goes where
    ``verify.revisions`` says (:func:`revision_dest`), any other linked document to the
    duplicates and the rest to unique.

    >>> from streamdedup.config import VerifyConfig
    >>> destinations(np.array([0, 1, 2, 1]), np.array([False, False, False, True]), VerifyConfig(revisions="topic")).tolist()
    [0, 1, 2, 3]
    """
    out = np.where(codes == REJECTED, DEST_INDEX[DEAD_LETTER_DEST],
                   np.where(codes == DUPLICATE, DEST_INDEX[DUPLICATE_DEST], DEST_INDEX[UNIQUE_DEST])).astype(np.int8)
    out[revised & (codes != REJECTED)] = DEST_INDEX[revision_dest(verify)]
    return out


@dataclass
class Routed:
    """Records ``lo..hi`` of a prepared batch: the destination of each (``where``, an index into
    :data:`DESTINATIONS`) and the tags of those that have any (by row; the rest are unique);
    ``revisions``: how many of them are revisions (wherever they went)."""

    lo: int
    where: np.ndarray
    tags: dict[int, DuplicateTags | DeadLetterTags]
    relations: Counter = field(default_factory=Counter)
    revisions: int = 0

    def counts(self) -> Counter:
        """Records per destination (those with any)."""
        per = np.bincount(self.where, minlength=len(DESTINATIONS)).tolist()
        return Counter({d: c for d, c in zip(DESTINATIONS, per) if c})


def route(prep: Prepared, decisions: BatchDecisions, replayed: Mapping[int, Decision | None],
          source_of: Callable[[int], str]) -> Routed:
    """Destinations of every record of ``prep``: its dead letters, the engine's decisions for
    ``prep.docs`` (``decisions[j]`` is record ``docs[j]``), and the stored decisions of the held
    records (``replayed``: None for one the engine had refused). Plain unique records, most of
    them, cost no Python."""
    lo = prep.lo
    where = np.full(prep.hi - lo, DEST_INDEX[UNIQUE_DEST], np.int8)
    tags: dict[int, DuplicateTags | DeadLetterTags] = {}
    relations: Counter = Counter()
    revisions = 0
    revised = decisions.revised
    to_revision = DEST_INDEX[revision_dest(decisions.verify)]
    dead = DEST_INDEX[DEAD_LETTER_DEST]
    for k, why in prep.dead.items():
        where[k - lo] = dead
        tags[k - lo] = DeadLetterTags(why.stage, why.reason, source_of(k))
    if len(prep.docs):
        where[prep.docs - lo] = destinations(decisions.codes, revised, decisions.verify)
    docs = prep.docs.tolist()
    for j in np.flatnonzero((where[prep.docs - lo] != DEST_INDEX[UNIQUE_DEST]) | revised).tolist():
        k = docs[j]
        tags[k - lo] = decision_tags(decisions.decision(j), source_of(k))
    for k in prep.held.tolist():
        d = replayed.get(k)
        t = decision_tags(d, source_of(k))
        if t is not None:
            where[k - lo] = dead if isinstance(t, DeadLetterTags) else (
                to_revision if d.status == "revision" else DEST_INDEX[DUPLICATE_DEST])
            tags[k - lo] = t
    duplicate = DEST_INDEX[DUPLICATE_DEST]
    for r, t in tags.items():
        if isinstance(t, DuplicateTags):
            relations[t.relation] += int(where[r]) == duplicate  # the duplicates topic's records by relation
            revisions += t.status == "revision"
    return Routed(lo, where, tags, relations, revisions)
