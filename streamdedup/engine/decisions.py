"""What the engine says about each document, and why (pure core).

The engine decides a micro-batch in one Numba call and hands back a :class:`BatchDecisions`:
columns of codes and estimates, with :class:`Decision` objects made only when asked for. Callers
that route thousands of documents per second look at :attr:`BatchDecisions.codes` first and
build a ``Decision`` for the duplicates and revisions (a unique document's tags are the same
every time).

A revision (``engine.revisions``) is a duplicate whose content changed: linked like one (its
root and the version it revises), status ``revision``, and routed by ``verify.revisions``: its
code is UNIQUE (the default policy) or DUPLICATE (``duplicates``, and ``topic``, where the
router sends it to the revisions output), and :attr:`BatchDecisions.revised` marks it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from streamdedup._kernels.decide import F_BLOCKS, F_BOILERPLATE, F_EXACT_EVIDENCE
from streamdedup._kernels.records import F_REVISION
from streamdedup._kernels.verify import RELATION_NAMES
from streamdedup.config import VerifyConfig
from streamdedup.engine.verify import reasons

#: status codes in :attr:`BatchDecisions.codes`
UNIQUE, DUPLICATE, REJECTED = 0, 1, 2
EMPTY_TEXT_REASON = "no words left after canonicalisation"
#: the tags of every unique document (file mode's ``_dedup`` object, Kafka's headers)
UNIQUE_TAGS = {"status": "unique", "duplicate_of": None, "relation": None, "similarity": None}


@dataclass(slots=True)  # not frozen: a frozen class's __init__ cost ~2 us, paid per duplicate
class Decision:
    id: str
    status: str  # unique | duplicate | revision | rejected
    duplicate_of: str | None = None
    relation: str | None = None  # exact | near_duplicate | contains | contained_in
    similarity: float | None = None  # estimated Jaccard with the matched document
    ld_similarity: float | None = None  # calibrated LD similarity with the matched document
    matched: str | None = None  # the document that matched (may be a later copy of the root)
    reason: str | None = None  # why a document was rejected, or what decided a duplicate
    seq: int = -1
    #: where the root (the original) and the matched document were read: ``topic:partition:offset``
    #: of the input or ``line:N`` (file mode); None when the engine no longer holds that document
    original: str | None = None
    matched_source: str | None = None
    #: what a revision changed (``"old -> new"``, ``"+new"``, ``"-old"``, a marker), at most 8 items
    changed: tuple[str, ...] = ()

    def tags(self) -> dict:
        if self.status == "unique":
            return dict(UNIQUE_TAGS)
        out: dict = {"status": self.status, "duplicate_of": self.duplicate_of, "relation": self.relation,
                     "similarity": None if self.similarity is None else round(self.similarity, 4)}
        if self.status in ("duplicate", "revision"):
            out["ld_similarity"] = None if self.ld_similarity is None else round(self.ld_similarity, 4)
            out["matched"] = self.matched
            out["reason"] = self.reason
            out["original"] = self.original
            out["matched_source"] = self.matched_source
        if self.status == "revision":
            out["changed"] = list(self.changed)
        return out


def _opt(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def duplicate(doc_id: str, seq: int, root_id: str, matched_id: str, relation: int, numbers: Sequence[float],
              flags: int, verify: VerifyConfig, original: str | None = None, matched_source: str | None = None,
              changed: tuple[str, ...] | None = None) -> Decision:
    """A duplicate's decision from its stored form (the same for a live run and a replay);
    ``flags``: the decide kernel's (``F_BOILERPLATE``: hot bands left out of the estimates;
    ``F_EXACT_EVIDENCE``: decided on exact evidence, numbers 5-7 are its figures; ``F_BLOCKS``:
    with boilerplate blocks left out); ``changed``: what it changed if it is a revision (None:
    it is not)."""
    j, ld, c_ba, c_ab, emb, gram, folded, near = map(float, numbers)
    why = reasons(relation, j, _opt(ld), c_ba, c_ab, emb, bool(flags & F_BOILERPLATE), None, None, verify,
                  (gram, folded, near) if flags & F_EXACT_EVIDENCE else None, bool(flags & F_BLOCKS))
    return Decision(doc_id, "duplicate" if changed is None else "revision", root_id, RELATION_NAMES[relation], _opt(j),
                    _opt(ld), matched_id, "; ".join(why), seq, original, matched_source, changed or ())


class BatchDecisions(Sequence[Decision]):
    """The decisions of one micro-batch, in input order.

    ``codes[i]`` is UNIQUE, DUPLICATE or REJECTED: where the document goes (a revision where
    ``verify.revisions`` sends it; under ``topic`` DUPLICATE, and ``revised`` picks its output); ``revised[i]`` whether it is a revision; ``seqs[i]`` the
    document's seq (-1 when rejected). ``decision(i)`` / ``self[i]`` build the full :class:`Decision`.
    """

    def __init__(self, ids: Sequence[str], seqs: np.ndarray, relations: np.ndarray, numbers: np.ndarray, flags: np.ndarray,
                 root_ids: dict[int, str], matched_ids: dict[int, str], verify: VerifyConfig,
                 sources: tuple[dict[int, str], dict[int, str]] = ({}, {}), changed: dict[int, tuple[str, ...]] | None = None):
        """``sources``: the input positions of each duplicate's root and matched document;
        ``changed``: what each revision (flag ``F_REVISION``) changed."""
        self.ids = ids
        self.seqs = seqs
        self.relations = relations
        self.numbers = numbers
        self.flags = flags
        self.root_ids = root_ids
        self.matched_ids = matched_ids
        self.verify = verify
        self.originals, self.matched_sources = sources
        self.changed = changed or {}
        self.revised = (flags & F_REVISION) != 0
        linked = (relations > 0) & ~self.revised if verify.revisions == "unique" else relations > 0
        self.codes = np.where(seqs < 0, REJECTED, np.where(linked, DUPLICATE, UNIQUE)).astype(np.int8)
        self._lists: tuple[list, ...] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def _rows(self) -> tuple[list, ...]:
        """The per-document arrays as lists, made once a batch when a decision is first built:
        reading them element by element as numpy scalars cost more than the decision."""
        if self._lists is None:
            self._lists = (self.codes.tolist(), self.seqs.tolist(), self.relations.tolist(), self.numbers.tolist(),
                           self.flags.tolist(), self.revised.tolist())
        return self._lists

    def decision(self, i: int) -> Decision:
        codes, seqs, relations, numbers, flags, revised = self._rows()
        if codes[i] == REJECTED:
            return Decision(self.ids[i], "rejected", reason=EMPTY_TEXT_REASON)
        if relations[i] == 0:
            return Decision(self.ids[i], "unique", seq=seqs[i])
        return duplicate(self.ids[i], seqs[i], self.root_ids[i], self.matched_ids[i], relations[i], numbers[i], flags[i],
                         self.verify, self.originals.get(i), self.matched_sources.get(i),
                         self.changed.get(i, ()) if revised[i] else None)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.decision(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.decision(i)

    def __iter__(self) -> Iterator[Decision]:
        return (self.decision(i) for i in range(len(self)))

    @classmethod
    def empty(cls, verify: VerifyConfig) -> "BatchDecisions":
        z = np.zeros(0, dtype=np.int64)
        return cls([], z, z.astype(np.int8), np.zeros((0, 8), np.float32), z.astype(np.uint8), {}, {}, verify)
