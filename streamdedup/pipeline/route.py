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

from streamdedup.config import Config, VerifyConfig
from streamdedup.engine.decisions import EMPTY_TEXT_REASON, REJECTED, UNIQUE, BatchDecisions, Decision
from streamdedup.pipeline.prepare import Prepared
from streamdedup.pipeline.tags import (UNIQUE_HEADERS, DeadLetterTags, DuplicateTags, dead_letter_headers, duplicate_headers,
                                       time_invalid_header)

UNIQUE_DEST, DUPLICATE_DEST, DEAD_LETTER_DEST, REVISION_DEST = "unique", "duplicate", "dead_letter", "revision"
#: every destination; ``revision`` is used only under ``verify.revisions: topic``
DESTINATIONS = (UNIQUE_DEST, DUPLICATE_DEST, DEAD_LETTER_DEST, REVISION_DEST)


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
    k = cfg.kafka
    out = {UNIQUE_DEST: k.unique_topic, DUPLICATE_DEST: k.duplicates_topic, DEAD_LETTER_DEST: k.dead_letter_topic}
    if cfg.verify.revisions == "topic":
        out[REVISION_DEST] = k.revisions_topic
    return out


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


@dataclass
class Routed:
    """Records ``lo..hi`` of a prepared batch: destination and tags (None for unique) of each;
    ``revisions``: how many of them are revisions (wherever they went)."""

    lo: int
    dest: list[str]
    tags: list[DuplicateTags | DeadLetterTags | None]
    relations: Counter = field(default_factory=Counter)
    revisions: int = 0

    def counts(self) -> Counter:
        return Counter(self.dest)


def route(prep: Prepared, decisions: BatchDecisions, replayed: Mapping[int, Decision | None],
          source_of: Callable[[int], str]) -> Routed:
    """Destinations of every record of ``prep``: its dead letters, the engine's decisions for
    ``prep.docs`` (``decisions[j]`` is record ``docs[j]``), and the stored decisions of the held
    records (``replayed``: None for one the engine had refused)."""
    n = prep.hi - prep.lo
    dest: list[str] = [UNIQUE_DEST] * n
    tags: list = [None] * n
    relations: Counter = Counter()
    revisions = 0
    revised = decisions.revised.tolist()
    to_revision = revision_dest(decisions.verify)
    lo = prep.lo
    for k, why in prep.dead.items():
        dest[k - lo] = DEAD_LETTER_DEST
        tags[k - lo] = DeadLetterTags(why.stage, why.reason, source_of(k))
    codes = decisions.codes.tolist()
    for j, k in enumerate(prep.docs.tolist()):
        code = codes[j]
        if code == UNIQUE and not revised[j]:
            continue
        if code == REJECTED:
            dest[k - lo], tags[k - lo] = DEAD_LETTER_DEST, rejected_tags(decisions.decision(j).reason, source_of(k))
            continue
        t = duplicate_tags(decisions.decision(j))
        dest[k - lo], tags[k - lo] = to_revision if revised[j] else DUPLICATE_DEST, t
        relations[t.relation] += dest[k - lo] == DUPLICATE_DEST  # the duplicates topic's records by relation
        revisions += revised[j]
    for k in prep.held.tolist():
        d = replayed.get(k)
        if d is None:
            dest[k - lo], tags[k - lo] = DEAD_LETTER_DEST, rejected_tags(None, source_of(k))
        elif d.status in ("duplicate", "revision"):
            t = duplicate_tags(d)
            dest[k - lo], tags[k - lo] = to_revision if d.status == "revision" else DUPLICATE_DEST, t
            relations[t.relation] += dest[k - lo] == DUPLICATE_DEST
            revisions += d.status == "revision"
    return Routed(lo, dest, tags, relations, revisions)
