"""Replay what-if: decide the same records under two configurations and diff the decisions (pure core).

``streamdedup tune --replay`` reads recent input once (a JSONL file, or records of a topic) and
runs it through the whole pipeline (prepare: decoding and dead letters as file mode and Kafka
do; then the engine) with the current configuration and with a candidate one, each on a fresh
in-memory store: no outputs, and the live state is never opened. The report counts the records
whose decision would change and lists them with their figures, so a person can look at them
before changing the configuration.

The replay starts with an empty index: a record whose original came before the replayed range
is unique under both configurations (the same for both, so it never shows as a flip).

Fingerprints are made once per (input, fingerprint, batch size) settings and reused, so
comparing or sweeping verification thresholds (``verify.*``) runs only the decide kernel again.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from streamdedup.config import Config, with_settings
from streamdedup.engine.decisions import REJECTED
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.sketch.fingerprint import FingerprintBatch, Fingerprinter
from streamdedup.text.ids import Ids
from streamdedup.pipeline import Prepared, Preparer
from streamdedup.state.base import MemoryStore

UNIQUE_S, DUPLICATE_S, DEAD_LETTER_S = "unique", "duplicate", "dead_letter"
#: a duplicate whose content changed (``verify.revisions``): linked like a duplicate, counted apart
REVISION_S = "revision"
LINKED = (DUPLICATE_S, REVISION_S)
UNIQUE_TO_DUPLICATE, DUPLICATE_TO_UNIQUE, DUPLICATE_CHANGED = "unique->duplicate", "duplicate->unique", "duplicate changed"


@dataclass(frozen=True)
class ReplayInput:
    """The records to replay, read once: the lines of a JSONL file (``data``, scanned as file
    mode scans its chunks) or separate record values (``values``: Kafka)."""

    data: bytes | None = None
    values: list[bytes] | None = None
    #: per record: its name (``line:17``, ``news:0:42``) and, for Kafka, its timestamp (the
    #: event time of a record without one); a file's records are named by line from ``first_line``
    names: list[str] | None = None
    times: np.ndarray | None = None
    first_line: int = 1

    def __post_init__(self) -> None:
        if (self.data is None) == (self.values is None):
            raise ValueError("give the lines of a file (data) or record values (values), not both")
        if self.values is not None and (self.names is None or len(self.names) != len(self.values)):
            raise ValueError("record values need one name each")

    @classmethod
    def from_lines(cls, data: bytes, skip: int = 0, limit: int | None = None) -> "ReplayInput":
        """Lines ``skip+1 .. skip+limit`` of a file's bytes (``\\n`` ends a line, as in file mode)."""
        start = _line_start(data, skip)
        end = len(data) if limit is None else _line_start(data, skip + limit, start, skip)
        return cls(data=data[start:end], first_line=skip + 1)

    @classmethod
    def from_file(cls, path: str, skip: int = 0, limit: int | None = None) -> "ReplayInput":
        """Lines ``skip+1 .. skip+limit`` of a JSONL file, reading no further than them."""
        with open(path, "rb") as f:
            lines = itertools.islice(f, skip, None if limit is None else skip + limit)  # splits after b"\n" only
            return cls(data=b"".join(lines), first_line=skip + 1)

    def name(self, k: int) -> str:
        return self.names[k] if self.names is not None else f"line:{self.first_line + k}"


def _line_start(data: bytes, n: int, pos: int = 0, at: int = 0) -> int:
    """Where line ``n + 1`` starts, counting from ``pos`` at line ``at + 1`` (the end when the data has fewer)."""
    while at < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return len(data)
        pos, at = nl + 1, at + 1
    return pos


@dataclass(frozen=True)
class Outcome:
    """What one configuration did with a record."""

    status: str  # unique | duplicate | revision | dead_letter
    id: str | None = None
    duplicate_of: str | None = None  # the cluster's root
    matched: str | None = None  # the document that matched (a later copy of the root, or the root)
    relation: str | None = None
    jaccard: float | None = None
    ld_similarity: float | None = None
    #: estimated containment of this record in the matched document, and of that one in this
    containment_in_matched: float | None = None
    containment_of_matched: float | None = None
    #: what decided a duplicate, or why a record is a dead letter
    reason: str | None = None
    #: what a revision changed
    changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Flip:
    """A record decided differently by the candidate configuration."""

    record: int  # index in the replayed input
    name: str
    kind: str  # unique->duplicate | duplicate->unique | duplicate changed | other "a->b"
    current: Outcome
    candidate: Outcome

    @property
    def id(self) -> str | None:
        return self.current.id or self.candidate.id


@dataclass
class ReplayReport:
    records: int
    current: Counter = field(default_factory=Counter)  # status -> records, current configuration
    candidate: Counter = field(default_factory=Counter)
    flips: list[Flip] = field(default_factory=list)
    #: duplicates the candidate did not flip, by the rule that accepted them (:data:`RULES`)
    kept: Counter = field(default_factory=Counter)

    def counts(self) -> Counter:
        """Flipped records per kind (unique->duplicate, duplicate->unique, duplicate changed, ...)."""
        return Counter(f.kind for f in self.flips)

    def to_json(self) -> dict:
        return {"records": self.records, "current": dict(self.current), "candidate": dict(self.candidate),
                "flips": {k: self.counts().get(k, 0) for k in (UNIQUE_TO_DUPLICATE, DUPLICATE_TO_UNIQUE, DUPLICATE_CHANGED)}
                | dict(self.counts()),
                "kept_by_rule": dict(self.kept),
                "flipped": [{"record": f.record, "name": f.name, "id": f.id, "kind": f.kind,
                             "current": asdict(f.current), "candidate": asdict(f.candidate)} for f in self.flips]}


@dataclass
class _Fingerprinted:
    """A configuration's view of the input: sorted-out records and the engine's batches."""

    prep: Prepared
    batches: list[tuple[np.ndarray, Ids, np.ndarray, FingerprintBatch]]  # record indices, ids, times, fingerprints


class Replayer:
    """Decides :class:`ReplayInput` records under any number of configurations."""

    def __init__(self, source: ReplayInput, now_ms: int):
        """``now_ms``: the event time of a file record without one (processing time, fixed for
        every configuration so that they see the same times)."""
        self.source = source
        self.now_ms = now_ms
        self._cache: dict[str, _Fingerprinted] = {}

    def _prepared(self, cfg: Config) -> _Fingerprinted:
        key = "\0".join(m.model_dump_json() for m in (cfg.input, cfg.fingerprint)) + f"\0{cfg.engine.batch_size}"
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        src = self.source
        preparer = Preparer(cfg)
        if src.values is not None:
            data, scan = preparer.scan_values(src.values)
            default_time = src.times if src.times is not None else self.now_ms
        else:
            data = src.data
            scan, _ = preparer.scanner.scan(np.frombuffer(data, dtype=np.uint8), final=True)
            default_time = self.now_ms
        prep = preparer.prepare(data, scan, 0, scan.n, src.name, default_time)
        fp = Fingerprinter(cfg.fingerprint)
        batches = []
        size = cfg.engine.batch_size
        for b in range(0, len(prep.docs), size):
            docs = prep.docs[b:b + size]
            ids, texts, times = prep.gather(docs)
            batches.append((docs, ids, times, fp.fingerprint_prepared(texts)))
        self._cache[key] = hit = _Fingerprinted(prep, batches)
        return hit

    def decide(self, cfg: Config) -> list[Outcome]:
        """Every record's outcome under ``cfg``, in input order (a fresh in-memory engine)."""
        fx = self._prepared(cfg)
        prep = fx.prep
        out: list[Outcome | None] = [None] * prep.scan.n
        for k, why in prep.dead.items():
            out[k] = Outcome(DEAD_LETTER_S, reason=f"{why.stage}: {why.reason}")
        engine = Deduplicator(cfg, MemoryStore())
        try:
            for docs, ids, times, fb in fx.batches:
                n = len(docs)
                d = engine.run_fingerprinted(ids, fb, times, np.full(n, -1, np.int64), docs.astype(np.int64)).decisions
                codes = d.codes.tolist()
                for j, k in enumerate(docs.tolist()):
                    out[k] = _outcome(d, j, codes[j])
        finally:
            engine.close()
        return out  # type: ignore[return-value]

    def compare(self, current: Config, candidate: Config) -> ReplayReport:
        """The decisions of ``candidate`` against those of ``current``, record by record."""
        return diff(self.decide(current), self.decide(candidate), self.source.name)

    def sweep(self, cfg: Config, setting: str, values: Sequence[float]) -> list[tuple[float, int]]:
        """(value, duplicates found) with ``setting`` (a dotted name) at each value (revisions
        count: they are linked to their original as duplicates are)."""
        out = []
        for v in values:
            outcomes = self.decide(with_settings(cfg, [f"{setting}={v}"]))
            out.append((float(v), sum(o.status in LINKED for o in outcomes)))
        return out


def _outcome(d, j: int, code: int) -> Outcome:
    if code == REJECTED:
        return Outcome(DEAD_LETTER_S, d.ids[j], reason=f"text: {d.decision(j).reason}")
    if d.relations[j] == 0:
        return Outcome(UNIQUE_S, d.ids[j])
    dec = d.decision(j)  # a duplicate or a revision (wherever verify.revisions sends it)
    c_in, c_of = (float(x) for x in d.numbers[j][2:4])
    return Outcome(dec.status, dec.id, dec.duplicate_of, dec.matched, dec.relation, dec.similarity, dec.ld_similarity,
                   _finite(c_in), _finite(c_of), dec.reason, dec.changed)


def _finite(x: float) -> float | None:
    return None if np.isnan(x) else x


def flip_kind(a: Outcome, b: Outcome) -> str | None:
    """How ``b`` (candidate) differs from ``a`` (current) for one record; None: the same.

    >>> flip_kind(Outcome("unique"), Outcome("duplicate", relation="near_duplicate", duplicate_of="x"))
    'unique->duplicate'
    >>> flip_kind(Outcome("duplicate", relation="exact", duplicate_of="x"), Outcome("duplicate", relation="exact", duplicate_of="y"))
    'duplicate changed'
    """
    if a.status != b.status:
        return f"{a.status}->{b.status}"
    if a.status in LINKED and (a.relation != b.relation or a.duplicate_of != b.duplicate_of):
        return DUPLICATE_CHANGED
    return None


#: the rules that accept a pair as a duplicate, each with the settings that tighten it
RULES = {
    "exact": "equal canonical texts (only verify.duplicate_relations drops them)",
    "character evidence": "verify.exact_gram_jaccard, verify.exact_min_ld (verify.exact_evidence=false turns it off)",
    "Jaccard": "verify.jaccard_threshold",
    "LD similarity": "verify.ld_similarity_threshold and verify.ld_min_jaccard (the Jaccard the LD rule needs)",
    "containment": "verify.containment_threshold, verify.contained_min_estimate",
}


def accepted_by(o: Outcome) -> str | None:
    """The rule of :data:`RULES` that made ``o`` a duplicate (None: not a duplicate).

    >>> accepted_by(Outcome("duplicate", relation="near_duplicate", reason="LD similarity 0.810 >= 0.65 with Jaccard 0.450"))
    'LD similarity'
    """
    if o.status not in LINKED:
        return None
    if o.relation == "exact":
        return "exact"
    if o.relation in ("contains", "contained_in"):
        return "containment"
    why = o.reason or ""
    if "character noise" in why:
        return "character evidence"
    return "LD similarity" if "LD similarity" in why else "Jaccard"


def diff(current: list[Outcome], candidate: list[Outcome], name_of: Callable[[int], str]) -> ReplayReport:
    """Record-by-record differences between two runs over the same input."""
    if len(current) != len(candidate):
        raise ValueError(f"the runs saw {len(current)} and {len(candidate)} records: not the same input")
    report = ReplayReport(len(current), Counter(o.status for o in current), Counter(o.status for o in candidate))
    for k, (a, b) in enumerate(zip(current, candidate)):
        kind = flip_kind(a, b)
        if kind is not None:
            report.flips.append(Flip(k, name_of(k), kind, a, b))
        if b.status == DUPLICATE_S:  # every duplicate the candidate keeps, changed or not: they sum to its count
            report.kept[accepted_by(b)] += 1
    return report
