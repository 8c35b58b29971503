"""A duplicate next to its original and the document that matched it (pure).

The model ``streamdedup inspect`` and the web inspector render: the copy, its cluster's root
(the *original*, ``duplicate_of``) and, when it is another document, the one that actually
matched (``matched``: a later copy of the root; the root itself may no longer be similar to the
copy), a word-level diff of each against the copy, and why the engine paired them.

The explanation is recomputed from the two texts with the engine's own comparison
(:func:`streamdedup.engine.verify.judge_pair`, as ``streamdedup explain`` does), so it shows every
estimate, not only the one that decided. It does not know the live index's boilerplate (hot)
bands: where the engine ignored some (its recorded reason says "boilerplate bands ignored"),
the recomputed figures can differ from the recorded ones, and both are shown.

>>> word_diff("the bank left rates unchanged", "the central bank left rates unchanged today")
[Segment(op='equal', words=('the',)), Segment(op='insert', words=('central',)), \
Segment(op='equal', words=('bank', 'left', 'rates', 'unchanged')), Segment(op='insert', words=('today',))]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher
from typing import NamedTuple, Sequence

from streamdedup.config import Config, VerifyConfig
from streamdedup.errors import InputError
from streamdedup.sketch.fingerprint import Fingerprinter, FingerprintBatch
from streamdedup.pipeline.tags import Tags
from streamdedup.engine.verify import judge_pair

EQUAL, DELETE, INSERT = "equal", "delete", "insert"
#: words per side above which a changed block is shown as deleted-then-inserted without a
#: word alignment: SequenceMatcher is quadratic in the worst case (a 1 MB text would take minutes)
MAX_ALIGNED_WORDS = 20_000


class Segment(NamedTuple):
    """A run of words: ``equal`` (in both), ``delete`` (only in the earlier text), ``insert``
    (only in the copy)."""

    op: str
    words: tuple[str, ...]


def _align(a: Sequence[str], b: Sequence[str], out: list[Segment]) -> None:
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(Segment(EQUAL, tuple(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(Segment(DELETE, tuple(a[i1:i2])))
        if j2 > j1:
            out.append(Segment(INSERT, tuple(b[j1:j2])))


def word_diff(earlier: str, copy: str) -> list[Segment]:
    """The word-level diff that turns ``earlier`` into ``copy`` (words split on whitespace).

    Lines are aligned first and the words of each changed block next, so a long text with a
    few changed paragraphs costs little; a changed block over :data:`MAX_ALIGNED_WORDS` words a
    side is reported as deleted and inserted whole. Adjacent segments of one kind are merged.
    """
    a_lines, b_lines = earlier.splitlines(), copy.splitlines()
    out: list[Segment] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        a = [w for line in a_lines[i1:i2] for w in line.split()]
        b = [w for line in b_lines[j1:j2] for w in line.split()]
        if tag == "equal":
            out.append(Segment(EQUAL, tuple(a)))
        elif len(a) > MAX_ALIGNED_WORDS or len(b) > MAX_ALIGNED_WORDS:
            out += [Segment(DELETE, tuple(a)), Segment(INSERT, tuple(b))]
        else:
            _align(a, b, out)
    return _merge(out)


def _merge(segments: list[Segment]) -> list[Segment]:
    merged: list[Segment] = []
    for s in segments:
        if not s.words:
            continue
        if merged and merged[-1].op == s.op:
            merged[-1] = Segment(s.op, merged[-1].words + s.words)
        else:
            merged.append(s)
    return merged


ELIDED = "elided"


def _equal_runs(words: tuple[str, ...], first: bool, last: bool, context: int) -> list[Segment]:
    """Unchanged words, the middle of a long run as an ``elided`` segment (``context`` words
    kept each side of a change; none before the first change or after the last)."""
    keep_head = 0 if first else context
    keep_tail = 0 if last else context
    if first and last:  # no change at all: the start of the text
        keep_head, keep_tail = 2 * context, 0
    if context < 0 or len(words) <= keep_head + keep_tail + 1:
        return [Segment(EQUAL, words)]
    out = [Segment(EQUAL, words[:keep_head]), Segment(ELIDED, words[keep_head:len(words) - keep_tail]),
           Segment(EQUAL, words[len(words) - keep_tail:])]
    return [s for s in out if s.words]


def side(diff: Sequence[Segment], which: str, context: int = 12) -> list[Segment]:
    """One column of a side-by-side diff: ``which`` ``"earlier"`` keeps the unchanged and the
    deleted words, ``"copy"`` the unchanged and the inserted ones. Long unchanged runs keep
    ``context`` words around each change and their middle becomes an ``elided`` segment (its
    words kept, for a view that unfolds it); ``context`` -1 elides nothing.

    >>> d = word_diff("a b c d e f g h", "a b c d e f g X h")
    >>> side(d, "copy", 2)
    [Segment(op='elided', words=('a', 'b', 'c', 'd', 'e')), Segment(op='equal', words=('f', 'g')), \
Segment(op='insert', words=('X',)), Segment(op='equal', words=('h',))]
    """
    own = DELETE if which == "earlier" else INSERT
    out: list[Segment] = []
    n = len(diff)
    for k, s in enumerate(diff):
        if s.op == EQUAL:
            out += _equal_runs(s.words, k == 0, k == n - 1, context)
        elif s.op == own:
            out.append(s)
    return out


def changed_words(diff: Sequence[Segment]) -> dict[str, int]:
    """How many words each kind of segment holds: ``equal``, ``delete``, ``insert``."""
    counts = {EQUAL: 0, DELETE: 0, INSERT: 0}
    for s in diff:
        counts[s.op] += len(s.words)
    return counts


@dataclass(frozen=True)
class Explanation:
    """Why two texts pair up: the engine's estimates for the earlier text and the copy."""

    relation: str
    is_duplicate: bool
    jaccard: float
    ld_similarity: float | None
    #: estimated share of the copy's shingles found in the earlier text, and the reverse
    containment_copy_in_earlier: float
    containment_earlier_in_copy: float
    #: LSH band keys the two fingerprints share (a candidate needs one), of ``bands``
    shared_bands: int
    bands: int
    #: lead band keys shared (the teaser path: the first shingles of both), of ``lead_bands``
    shared_lead_bands: int
    lead_bands: int
    #: character band keys shared (sampled byte 8-grams: noisy copies, scripts without spaces)
    shared_char_bands: int
    char_bands: int
    #: canonical forms equal (case, markup, spacing and punctuation aside)
    same_canonical: bool
    reasons: tuple[str, ...]
    #: exact character evidence: byte 8-gram Jaccard plain and digits as 0, near-word share
    #: (None where the pair did not need it)
    grams: tuple[float, float, float] | None = None

    @property
    def containment_direction(self) -> str:
        """Which text is (more) inside the other, in words."""
        c, e = self.containment_copy_in_earlier, self.containment_earlier_in_copy
        if abs(c - e) < 0.05:
            return "both ways"
        return "copy inside earlier" if c > e else "earlier inside copy"


def thresholds(verify: VerifyConfig) -> dict:
    """The ``verify.*`` settings a decision is made with, by their config names."""
    return {"jaccard_threshold": verify.jaccard_threshold, "ld_similarity_threshold": verify.ld_similarity_threshold,
            "ld_min_jaccard": verify.ld_min_jaccard, "containment_threshold": verify.containment_threshold,
            "contained_min_estimate": verify.contained_min_estimate, "exact_evidence": verify.exact_evidence,
            "exact_min_ld": verify.exact_min_ld, "exact_gram_jaccard": verify.exact_gram_jaccard,
            "exact_max_digit_gain": verify.exact_max_digit_gain, "exact_min_near_words": verify.exact_min_near_words,
            "duplicate_relations": list(verify.duplicate_relations)}


def _explain_rows(batch: FingerprintBatch, i: int, j: int, cfg: Config) -> Explanation:
    judged = judge_pair(batch, i, j, cfg)  # the engine's judgement of the two alone (explain's)
    c = judged.comparison
    live = not (batch.empty[i] or batch.empty[j])
    shared = int((batch.band_keys[i] == batch.band_keys[j]).sum()) if live else 0
    lead = int((batch.lead_keys[i] == batch.lead_keys[j]).sum()) if live else 0
    chars = int((batch.char_keys[i] == batch.char_keys[j]).sum()) if live else 0
    return Explanation(c.relation, judged.is_duplicate, c.jaccard, c.ld_similarity, c.containment_b_in_a,
                       c.containment_a_in_b, shared, batch.band_keys.shape[1], lead, batch.lead_keys.shape[1],
                       chars, batch.char_keys.shape[1], judged.same_digest, c.reasons, c.grams)


def explain_pairs(pairs: Sequence[tuple[str, str]], cfg: Config, fp: Fingerprinter | None = None) -> list[Explanation | str]:
    """An :class:`Explanation` per (earlier, copy) pair, fingerprinted in one batch; a text the
    fingerprinter refuses gives the reason (a string) instead."""
    fp = fp or Fingerprinter(cfg.fingerprint)
    texts: list[str] = [t for pair in pairs for t in pair]
    try:
        batch = fp.fingerprint_batch(texts)
    except InputError:
        # one bad text must not hide the other explanations: fall back to one pair at a time
        if len(pairs) == 1:
            raise
        out: list[Explanation | str] = []
        for pair in pairs:
            try:
                out += explain_pairs([pair], cfg, fp)
            except InputError as exc:
                out.append(str(exc))
        return out
    return [_explain_rows(batch, 2 * k, 2 * k + 1, cfg) for k in range(len(pairs))]


@dataclass(frozen=True)
class Doc:
    """A record's document: id, text and where it sits (``topic:partition:offset``,
    ``line:N`` of the input, or ``duplicates.jsonl:N`` in a file-mode output)."""

    id: str
    text: str
    position: str | None = None
    #: record time (Kafka timestamp, or the event time in file mode), epoch ms
    time_ms: int | None = None


@dataclass
class Pair:
    """A duplicate with what it was matched against. ``original`` / ``matched`` are None when
    they could not be fetched, ``missing`` says why."""

    copy: Doc
    tags: Tags
    original: Doc | None = None
    matched: Doc | None = None
    #: original -> copy
    diff: list[Segment] | None = None
    #: matched -> copy, only when the matched document is not the root
    matched_diff: list[Segment] | None = None
    #: copy against the matched document (the comparison that decided), or the original when
    #: the matched one is the root or could not be fetched
    why: Explanation | None = None
    #: copy against the root, when the matched document is another one
    why_original: Explanation | None = None
    missing: list[str] = field(default_factory=list)

    @property
    def matched_is_root(self) -> bool:
        t = self.tags
        if t.matched_source and t.original:
            return t.matched_source == t.original
        return not t.matched or t.matched == t.duplicate_of

    def to_json(self) -> dict:
        """A JSON-ready dict (``--json`` and the web inspector): diffs as ``{"op", "text"}``."""
        def diff(d):
            return None if d is None else [{"op": s.op, "text": " ".join(s.words)} for s in d]

        def why(e):
            return None if e is None else {**asdict(e), "reasons": list(e.reasons),
                                           "containment_direction": e.containment_direction}

        t = self.tags
        return {
            "copy": asdict(self.copy), "original": None if self.original is None else asdict(self.original),
            "matched": None if self.matched is None else asdict(self.matched), "matched_is_root": self.matched_is_root,
            "tags": {"duplicate_of": t.duplicate_of, "relation": t.relation, "similarity": t.similarity,
                     "ld_similarity": t.ld_similarity, "matched": t.matched, "reason": t.reason,
                     "original": t.original, "matched_source": t.matched_source, "malformed": list(t.malformed)},
            "diff": diff(self.diff), "matched_diff": diff(self.matched_diff),
            "why": why(self.why), "why_original": why(self.why_original), "missing": list(self.missing),
        }


def complete(pairs: Sequence[Pair], cfg: Config, fp: Fingerprinter | None = None) -> None:
    """Fill in the diffs and explanations of ``pairs`` (their documents already set), with one
    fingerprint batch for all of them."""
    jobs: list[tuple[Pair, str, Doc]] = []
    for p in pairs:
        if p.original is not None:
            p.diff = word_diff(p.original.text, p.copy.text)
        if p.matched is not None and not p.matched_is_root:
            p.matched_diff = word_diff(p.matched.text, p.copy.text)
            jobs.append((p, "why", p.matched))
            if p.original is not None:
                jobs.append((p, "why_original", p.original))
        elif p.original is not None or p.matched is not None:
            jobs.append((p, "why", p.original or p.matched))
    if not jobs:
        return
    results = explain_pairs([(doc.text, p.copy.text) for p, _, doc in jobs], cfg, fp)
    for (p, attr, _), res in zip(jobs, results):
        if isinstance(res, str):
            p.missing.append(f"no explanation: {res}")
        else:
            setattr(p, attr, res)
