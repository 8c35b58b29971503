"""Reading decided duplicates back: the model every source shares, filters, and pairing.

A *source* (:class:`DuplicateSource`) is where a run left its duplicates: a Kafka duplicates
topic (:mod:`.kafka_source`, read_committed) or a file-mode output directory
(:mod:`.file_source`). It reads them in pages by partition and offset (a file is one partition,
its line index the offset) and fetches documents by input position or id. :func:`pairs` turns
a page into :class:`~.pair.Pair` s (copy, original, matched, diffs, explanation) and
:func:`clusters` counts copies per root. ``streamdedup inspect`` and the web inspector both
use this API; nothing here renders.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence

from streamdedup.config import Config
from streamdedup.text.decode import Decoded, RecordDecoder
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline.tags import Tags
from streamdedup.tools.inspection.overview import Recent
from streamdedup.tools.inspection.pair import Doc, Pair, complete

#: partition -> the next offset to read
Cursor = dict[int, int]


@dataclass(frozen=True)
class Entry:
    """One duplicate as read from the output."""

    partition: int
    offset: int
    tags: Tags
    #: the copy's document, or why its record could not be decoded (a string)
    doc: Doc | str


@dataclass
class Page:
    entries: list[Entry]
    #: where the next page starts
    next: Cursor
    #: records read to make the page (filtered out ones included)
    scanned: int = 0
    #: every partition was read to its end
    at_end: bool = False


@dataclass(frozen=True)
class Filter:
    """Which duplicates to show (every field optional; all given ones must hold)."""

    relations: frozenset[str] | None = None
    min_similarity: float | None = None
    max_similarity: float | None = None
    #: a duplicate matches when its own id, its root's or its matched document's is one of these
    ids: frozenset[str] | None = None
    #: record time at or after (epoch ms); records without a time pass
    since_ms: int | None = None

    def accepts(self, e: Entry) -> bool:
        t = e.tags
        if self.relations is not None and t.relation not in self.relations:
            return False
        sim = t.similarity
        if self.min_similarity is not None and (sim is None or sim < self.min_similarity):
            return False
        if self.max_similarity is not None and (sim is None or sim > self.max_similarity):
            return False
        if self.ids is not None:
            own = e.doc.id if isinstance(e.doc, Doc) else None
            if not ({own, t.duplicate_of, t.matched} & self.ids):
                return False
        if self.since_ms is not None and isinstance(e.doc, Doc) and e.doc.time_ms is not None:
            return e.doc.time_ms >= self.since_ms
        return True


@dataclass(frozen=True)
class Wanted:
    """A document to fetch: its input position when the tags carry one, and its id."""

    position: str | None
    id: str | None


class DuplicateSource(Protocol):
    """What a source of duplicates offers (file mode and Kafka alike)."""

    #: whether the last :meth:`totals` counted records exactly (False: some counted as offsets)
    totals_exact: bool
    #: what a record's time is, in words (the overview says it under its rate chart)
    time_meaning: str

    def start(self, since: str | None) -> Cursor:
        """Where reading starts: ``None`` = the beginning, an offset (``N``: that offset in every
        partition; ``-N``: N records before each partition's end), or an ISO-8601 time."""

    def read(self, start: Cursor, limit: int, filt: Filter, max_scan: int) -> Page:
        """Up to ``limit`` accepted duplicates from ``start`` on, reading at most ``max_scan``
        records, stopping at the end of the output."""

    def latest(self, limit: int, filt: Filter, max_scan: int) -> Page:
        """The last ``limit`` accepted duplicates (reading backwards at most ``max_scan``)."""

    def older(self, before: Cursor | None, limit: int, filt: Filter, max_scan: int) -> Page:
        """The last ``limit`` accepted duplicates before ``before`` (each partition's offset,
        exclusive; None: the end), reading backwards at most ``max_scan`` records. ``next`` is
        where the page starts: pass it as ``before`` for the page before this one (nothing is
        skipped or shown twice); ``at_end``: every partition was read back to its start."""

    def entry_at(self, partition: int, offset: int) -> Entry | None:
        """The duplicate at that position, or None (no such record, or not one of ours)."""

    def totals(self) -> dict[str, int | None]:
        """Records per output (``unique``, ``duplicate``, ``dead_letter``, and ``revision``: the
        revisions topic or ``revisions.jsonl``, only under ``verify.revisions: topic``) now; None
        for an output that does not exist. Kafka reads the committed records (not offsets, which
        count transaction markers too); :attr:`totals_exact` says whether it read them all."""

    def recent(self, output: str, limit: int) -> Recent:
        """The newest ``limit`` records of an output (``unique``, ``duplicate``, ``dead_letter``):
        their times and tags, for the overview (:mod:`.overview`)."""

    def fetch(self, wanted: Sequence[Wanted]) -> dict[Wanted, Doc | str]:
        """The documents ``wanted``, each a :class:`Doc` or why it could not be fetched."""

    def close(self) -> None: ...


class DocDecoder:
    """A record's id and text with the run's ``input.*`` settings (the decoder the pipeline uses)."""

    def __init__(self, cfg: Config):
        self.decoder = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)
        self.has_time = cfg.input.time_field is not None

    def __call__(self, raw: bytes, position: str, time_ms: int | None = None, fallback_id: str | None = None) -> Doc | str:
        res = self.decoder(raw, fallback_id or position, 0)
        if not isinstance(res, Decoded):
            return f"{position}: {res.stage}: {res.reason}"
        # a time the record carries but the run could not use was decided at another time, which
        # the output does not hold: no time, rather than the placeholder it was decoded to
        if time_ms is None and self.has_time and res.event_time_ms and res.time_invalid is None:
            time_ms = res.event_time_ms
        return Doc(res.id, res.text, position, time_ms)


def time_order(e: Entry) -> tuple[int, int, int]:
    """Record time (0 when unknown), then partition and offset: the order pages are shown in."""
    t = e.doc.time_ms if isinstance(e.doc, Doc) else None
    return (t or 0, e.partition, e.offset)


def newest(found: Sequence[Entry], limit: int, floor: Cursor) -> tuple[list[Entry], Cursor]:
    """The newest ``limit`` of ``found`` (read back to ``floor`` in each partition) and where
    that page starts per partition.

    Kept entries are a suffix of each partition (an older-by-time entry above a kept one in its
    partition is kept too, so the page can exceed ``limit`` by a few): the page before it, read
    up to the returned cursor, then neither skips nor repeats a record.

    >>> from .pair import Doc
    >>> e = lambda p, o, t: Entry(p, o, Tags("duplicate"), Doc(f"{p}.{o}", "", None, t))
    >>> kept, start = newest([e(0, 5, 10), e(0, 7, 30), e(1, 2, 20), e(1, 3, 40)], 2, {0: 4, 1: 0})
    >>> [x.doc.id for x in kept], start
    (['0.7', '1.3'], {0: 7, 1: 3})
    """
    by_time = sorted(found, key=time_order)
    lowest: dict[int, int] = {}
    for e in by_time[-limit:] if limit > 0 else []:
        lowest[e.partition] = min(lowest.get(e.partition, e.offset), e.offset)
    start = dict(floor)
    for e in found:
        p = e.partition
        start[p] = lowest[p] if p in lowest else max(start.get(p, 0), e.offset + 1)
    return [e for e in by_time if e.partition in lowest and e.offset >= lowest[e.partition]], start


def _original_of(t: Tags) -> Wanted:
    return Wanted(t.original, t.duplicate_of)


def _matched_of(t: Tags) -> Wanted:
    return Wanted(t.matched_source, t.matched)


def pairs(source: DuplicateSource, entries: Sequence[Entry], cfg: Config, fp: Fingerprinter | None = None) -> list[Pair]:
    """The entries as pairs: originals and matched documents fetched in one call, diffs and
    explanations computed (one fingerprint batch). An undecodable copy keeps no pair."""
    out: list[Pair] = []
    wanted: set[Wanted] = set()
    for e in entries:
        if isinstance(e.doc, Doc):
            p = Pair(e.doc, e.tags)
            out.append(p)
            wanted.add(_original_of(e.tags))
            if not p.matched_is_root:
                wanted.add(_matched_of(e.tags))
    got = source.fetch(sorted(wanted, key=lambda w: (w.position or "", w.id or ""))) if wanted else {}
    for p in out:
        orig = got.get(_original_of(p.tags))
        if isinstance(orig, Doc):
            p.original = orig
        elif orig is not None:
            p.missing.append(f"original {p.tags.duplicate_of}: {orig}")
        if p.matched_is_root:
            p.matched = p.original
            continue
        m = got.get(_matched_of(p.tags))
        if isinstance(m, Doc):
            p.matched = m
        elif m is not None:
            p.missing.append(f"matched {p.tags.matched}: {m}")
    complete(out, cfg, fp)
    return out


@dataclass
class Cluster:
    """A root and the copies of it that were read."""

    root: str
    copies: int = 0
    relations: Counter = field(default_factory=Counter)
    min_similarity: float | None = None
    first_ms: int | None = None
    last_ms: int | None = None
    #: the root's input position, when a copy's tags carry it
    position: str | None = None

    def add(self, e: Entry) -> None:
        self.copies += 1
        self.relations[e.tags.relation] += 1
        sim = e.tags.similarity
        if sim is not None and (self.min_similarity is None or sim < self.min_similarity):
            self.min_similarity = sim
        t = e.doc.time_ms if isinstance(e.doc, Doc) else None
        if t is not None:
            self.first_ms = t if self.first_ms is None else min(self.first_ms, t)
            self.last_ms = t if self.last_ms is None else max(self.last_ms, t)
        self.position = self.position or e.tags.original


def clusters(entries: Sequence[Entry]) -> list[Cluster]:
    """Roots with their copies among ``entries``, most copies first."""
    by_root: dict[str, Cluster] = {}
    for e in entries:
        root = e.tags.duplicate_of or "?"
        by_root.setdefault(root, Cluster(root)).add(e)
    return sorted(by_root.values(), key=lambda c: (-c.copies, c.root))


def follow(source: DuplicateSource, start: Cursor, filt: Filter, batch: int = 100, poll_s: float = 0.5,
           idle_s: float | None = None) -> Iterator[list[Entry]]:
    """Pages of accepted duplicates from ``start`` on, then of new ones as they arrive (a tail;
    a burst comes as one page, to be paired in one batch); ends after ``idle_s`` seconds
    without a new record (None: never)."""
    import time

    cursor = dict(start)
    quiet_since = time.monotonic()
    while True:
        page = source.read(cursor, batch, filt, max_scan=max(batch, 10_000))
        if page.entries:
            yield page.entries
        if page.next != cursor:
            quiet_since = time.monotonic()
        elif idle_s is not None and time.monotonic() - quiet_since >= idle_s:
            return
        cursor = page.next
        if page.at_end:
            time.sleep(poll_s)  # the output's end: wait for the processor to write more
