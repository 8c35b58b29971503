"""The decider's memory of which input positions it has decided (pure).

A worker that crashes re-reads its input from its committed offsets and sends those
fingerprints again; a zombie worker (one the group has moved on from) may send some twice,
interleaved with the new owner's. The decider must answer such a re-sent fingerprint with the
decision it already made (the first one), never decide it again: the index would hold the
story twice and the second answer would call it a copy of itself.

Per input partition the decided offsets and their seqs (-1: the text was empty, nothing was
indexed) are kept for the last ``per_partition`` decisions. A re-send comes from a worker's
uncommitted window (its in-flight batches, a few thousand records), far inside that bound; one
older than the bound is decided as new and logged (the answer is then "exact duplicate of
itself", visible in the tags, never a lost record).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence


@dataclass
class Resends:
    """A batch sorted out: which records to decide, which were decided before."""

    fresh: list[int]
    #: record index -> seq of its earlier decision (-1: it was rejected, nothing indexed)
    before: dict[int, int] = field(default_factory=dict)
    #: record index -> index of the same position's first record in this batch
    in_batch: dict[int, int] = field(default_factory=dict)


class RecentPositions:
    def __init__(self, per_partition: int = 200_000):
        if per_partition < 1:
            raise ValueError("per_partition must be >= 1")
        self.per_partition = per_partition
        self._seen: dict[Hashable, dict[int, int]] = {}
        self.forgotten = 0  # positions dropped by the bound (a re-send of one is decided again)

    def sort_out(self, parts: Sequence[Hashable], offsets: Sequence[int]) -> Resends:
        """Records ``k`` (input partition ``parts[k]``, offset ``offsets[k]``) of a batch."""
        out = Resends([])
        first: dict[tuple[Hashable, int], int] = {}
        seen = self._seen
        for k, (part, off) in enumerate(zip(parts, offsets)):
            known = seen.get(part)
            if known is not None and off in known:
                out.before[k] = known[off]
                continue
            j = first.setdefault((part, off), k)
            if j != k:
                out.in_batch[k] = j
            else:
                out.fresh.append(k)
        return out

    def remember(self, parts: Iterable[Hashable], offsets: Iterable[int], seqs: Iterable[int]) -> None:
        """The decided records of a batch (in order), with their seqs."""
        seen = self._seen
        for part, off, seq in zip(parts, offsets, seqs):
            known = seen.get(part)
            if known is None:
                known = seen[part] = {}
            known[off] = seq
        for known in seen.values():
            excess = len(known) - self.per_partition
            if excess > 0:
                # dicts keep insertion order: the oldest decisions go first, a tenth at a time
                drop = max(excess, self.per_partition // 10)
                for off in list(known)[:drop]:
                    del known[off]
                self.forgotten += drop

    def __len__(self) -> int:
        return sum(len(v) for v in self._seen.values())
