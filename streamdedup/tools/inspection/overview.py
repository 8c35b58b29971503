"""What the web inspector's overview shows, computed from the newest records of each output (pure).

A source reads the last ``window`` records of each output (:class:`Recent`: their times and
tags, never their texts) and :func:`summarise` turns them into the figures the overview charts:
the duplicate rate per time bucket, the mix of relations, the similarity figures of the
duplicates, dead letters by stage and reason, the roots with the most copies, and the revisions
(duplicates whose content changed, on whichever output ``verify.revisions`` sends them, the
revisions topic's too). Every figure
says what it covers ("the last 10,000 duplicates"): a page never reads a whole topic.

The rate over time only counts the time range that *both* outputs cover: the last 10,000
unique records may span ten minutes while the last 10,000 duplicates span an hour, and a
bucket where only duplicates were read would show a rate of 100 %.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from streamdedup.pipeline.tags import Tags

#: bucket widths the rate chart picks from (ms): the smallest giving at most MAX_BUCKETS
STEPS_MS = (10, 20, 50, 100, 200, 500, 1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000,
            3_600_000, 3 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000, 86_400_000, 7 * 86_400_000)
MAX_BUCKETS = 48
#: histogram bins over 0..1
BINS = 50
#: how verify.reasons words a containment (the only place a duplicate's containment is recorded)
_CONTAINMENT = re.compile(r"containment of (?:new in earlier|earlier in new) ([0-9]*\.?[0-9]+)")
#: dead-letter reasons shown (most common first), each cut to this many characters
TOP_REASONS, REASON_CHARS = 8, 160
TOP_CLUSTERS = 10
#: the newest revisions listed with what changed
TOP_REVISIONS = 10


@dataclass
class Recent:
    """The newest records of one output, as read for the overview.

    ``records``: (record time in epoch ms or None, tags). ``complete``: every record of the
    output was read. ``since_ms``: from this time on no record of the output was left unread
    (None: complete, or no times); with several partitions it is the latest of their first
    read times.
    """

    output: str
    records: list[tuple[int | None, Tags]] = field(default_factory=list)
    complete: bool = True
    since_ms: int | None = None


def coverage_start(first_times: dict[int, int | None], read_to_start: dict[int, bool]) -> int | None:
    """``since_ms`` of :class:`Recent` from each partition's earliest time read and whether it
    was read to its start.

    >>> coverage_start({0: 100, 1: 250}, {0: False, 1: False}), coverage_start({0: 100}, {0: True})
    (250, None)
    """
    cut = [t for p, t in first_times.items() if not read_to_start.get(p, True) and t is not None]
    return max(cut) if cut else None


@dataclass
class RateBucket:
    start_ms: int
    unique: int = 0
    duplicate: int = 0

    @property
    def rate(self) -> float | None:
        n = self.unique + self.duplicate
        return None if n == 0 else self.duplicate / n


@dataclass
class Rate:
    """Duplicates / (unique + duplicates) per time bucket over the range both samples cover."""

    buckets: list[RateBucket]
    step_ms: int
    #: why there is no chart (no record times, nothing read), else None
    missing: str | None = None


def pick_step(span_ms: int) -> int:
    """The bucket width for a time span: at most ``MAX_BUCKETS`` buckets, also when a broken
    timestamp (a producer's clock in 1970) stretches the span over decades.

    >>> pick_step(40_000), pick_step(3_600_000), pick_step(10**10), len(range(0, 10**13, pick_step(10**13))) <= 48
    (1000, 300000, 604800000, True)
    >>> pick_step(1_500)  # a short run still gets bars enough to show a rate
    50
    """
    day = 86_400_000
    return next((s for s in STEPS_MS if span_ms / s < MAX_BUCKETS), -(-span_ms // (MAX_BUCKETS * day)) * day)


def rate_over_time(unique: Recent, duplicate: Recent) -> Rate:
    """The duplicate rate per bucket, counting only records at or after both samples' ``since_ms``."""
    times = [t for r in (unique, duplicate) for t, _ in r.records if t is not None]
    if not times:
        why = "nothing decided yet" if not (unique.records or duplicate.records) else \
            "the records carry no time (file mode without input.time_field)"
        return Rate([], 0, why)
    since = max((s for s in (unique.since_ms, duplicate.since_ms) if s is not None), default=min(times))
    kept = [t for t in times if t >= since]
    if not kept:  # defensive: each sample holds records from its since_ms on
        return Rate([], 0, "no record in the time both samples cover")
    step = pick_step(max(kept) - since)
    first = since - since % step
    buckets = [RateBucket(first + k * step) for k in range((max(kept) - first) // step + 1)]
    for sample, attr in ((unique, "unique"), (duplicate, "duplicate")):
        for t, _ in sample.records:
            if t is not None and t >= since:
                b = buckets[(t - first) // step]
                setattr(b, attr, getattr(b, attr) + 1)
    return Rate(buckets, step)


def containment_of(reason: str | None) -> float | None:
    """The containment a contains / contained_in duplicate's reason states (None if none).

    >>> containment_of("containment of new in earlier 0.912, signature embeds at 0.850")
    0.912
    """
    m = _CONTAINMENT.search(reason or "")
    return float(m.group(1)) if m else None


@dataclass
class Histogram:
    """Counts per bin over 0..1 (``BINS`` bins; 1.0 falls in the last), per relation."""

    name: str
    counts: dict[str, list[int]] = field(default_factory=dict)
    total: int = 0
    #: duplicates of the histogram's relations that state no figure for it (a short copy decided
    #: by its exact 8-grams or whole signature has no containment estimate): with ``total``,
    #: every duplicate of those relations
    unmeasured: int = 0

    def add(self, relation: str, x: float) -> None:
        row = self.counts.setdefault(relation, [0] * BINS)
        row[min(BINS - 1, max(0, int(x * BINS)))] += 1
        self.total += 1


@dataclass
class Cluster:
    root: str
    copies: int
    relations: Counter


@dataclass
class Summary:
    """The overview's figures (see the module doc) and what they cover."""

    window: int
    rate: Rate
    relations: list[tuple[str, int]]
    histograms: list[Histogram]
    dead_stages: list[tuple[str, int]]
    dead_reasons: list[tuple[str, str, int]]
    clusters: list[Cluster]
    roots: int
    read: dict[str, int]
    complete: dict[str, bool]
    #: revisions among the records read, and the newest of them (original, what changed)
    revisions: int = 0
    newest_revisions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def _histograms(duplicates: Recent) -> list[Histogram]:
    jac, ld, cont = Histogram("Jaccard"), Histogram("LD similarity"), Histogram("containment")
    for _, t in duplicates.records:
        rel = t.relation or "?"
        if t.similarity is not None:
            jac.add(rel, t.similarity)
        if t.ld_similarity is not None:
            ld.add(rel, t.ld_similarity)
        if rel in ("contains", "contained_in"):
            c = containment_of(t.reason)
            if c is None:
                cont.unmeasured += 1
            else:
                cont.add(rel, c)
    return [jac, ld, cont]


def _clusters(duplicates: Recent) -> tuple[list[Cluster], int]:
    by_root: dict[str, Cluster] = {}
    for _, t in duplicates.records:
        root = t.duplicate_of or "?"
        c = by_root.setdefault(root, Cluster(root, 0, Counter()))
        c.copies += 1
        c.relations[t.relation or "?"] += 1
    ranked = sorted(by_root.values(), key=lambda c: (-c.copies, c.root))
    return ranked[:TOP_CLUSTERS], len(ranked)


def _dead_letters(dead: Recent) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
    stages: Counter = Counter()
    reasons: Counter = Counter()
    for _, t in dead.records:
        stage = t.stage or "?"
        stages[stage] += 1
        reason = t.reason or ""
        reasons[(stage, reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 1] + "\u2026")] += 1
    return stages.most_common(), [(s, r, n) for (s, r), n in reasons.most_common(TOP_REASONS)]


def summarise(unique: Recent, duplicate: Recent, dead: Recent, window: int, revisions: Recent | None = None) -> Summary:
    """The overview's figures from the outputs' newest records (``revisions``: the revisions
    topic's, under ``verify.revisions: topic``)."""
    relations = Counter(t.relation or "?" for _, t in duplicate.records)
    stages, reasons = _dead_letters(dead)
    top, roots = _clusters(duplicate)
    samples = (unique, duplicate, dead)
    with_revisions = (unique, duplicate) + ((revisions,) if revisions is not None else ())
    revised = sorted(((t or 0, tags) for r in with_revisions for t, tags in r.records if tags.status == "revision"),
                     key=lambda x: -x[0])
    return Summary(window, rate_over_time(unique, duplicate), relations.most_common(), _histograms(duplicate),
                   stages, reasons, top, roots, {r.output: len(r.records) for r in samples},
                   {r.output: r.complete for r in samples}, len(revised),
                   [(tags.duplicate_of or "?", tags.changed) for _, tags in revised[:TOP_REVISIONS]])
