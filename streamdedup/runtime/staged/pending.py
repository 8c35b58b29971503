"""A worker's consumed records waiting for their decisions (pure, no Kafka calls).

Per input partition the records wait in consumption order. Decisions of that partition come
from its decisions partition in the decider's order: usually one per record in offset order,
but after a worker or decider crash some come twice (a re-sent fingerprint, a decision whose
delivery was not confirmed) and may start below what is pending. The rule that makes
duplicates harmless: the first decision for an offset at or above the partition's *floor* (its
committed input offset, then each released record's next) is kept until its record is
released; any decision below the floor, or for an offset that already has one, is stale and
skipped. Decisions may arrive before their records are consumed (a restarted worker reads
both topics at once), so they are never judged by what is pending, only by the floor.

What to commit with the outputs of a released prefix: the input partition's next offset, and
the decisions partition's offset of the first decision still needed (so a restart reads every
decision a pending record may wait for, and skips the ones it has used).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

M = TypeVar("M")


@dataclass
class _Lane(Generic[M]):
    floor: int
    records: deque = field(default_factory=deque)  # (offset, record), consumption order
    #: decisions above the head, by input offset: (decision, its decisions-topic offset)
    early: dict[int, tuple[Any, int]] = field(default_factory=dict)
    #: decisions-topic offset to resume from: after the last decision read, or (when a
    #: decision held in ``early`` is still needed) at the smallest such decision
    read_to: int | None = None
    stale: int = 0


class Pending(Generic[M]):
    """Records of the assigned input partitions and the decisions that release them."""

    def __init__(self) -> None:
        self._lanes: dict[Any, _Lane] = {}

    def assign(self, part: Any, committed: int) -> None:
        """``part`` is ours from its committed input offset on (records below it are released)."""
        self._lanes[part] = _Lane(committed)

    def add(self, part: Any, offset: int, record: M) -> None:
        self._lanes[part].records.append((offset, record))

    def offer(self, part: Any, offset: int, decision: Any, dec_offset: int) -> None:
        """A decision for input ``offset`` of ``part``, read at ``dec_offset`` of its decisions partition."""
        lane = self._lanes[part]
        lane.read_to = dec_offset + 1
        if offset < lane.floor or offset in lane.early:
            lane.stale += 1  # the first decision for an offset is the one
            return
        lane.early[offset] = (decision, dec_offset)

    def release(self, part: Any) -> list[tuple[M, Any]]:
        """The decided prefix of ``part``'s queue, in order: (record, decision)."""
        lane = self._lanes.get(part)
        if lane is None:
            return []
        out = []
        while lane.records and lane.records[0][0] in lane.early:
            offset, record = lane.records.popleft()
            decision, _ = lane.early.pop(offset)
            out.append((record, decision))
            lane.floor = offset + 1
        return out

    def has(self, part: Any) -> bool:
        return part in self._lanes

    def parts(self) -> list:
        return list(self._lanes)

    def floor(self, part: Any) -> int:
        """Next input offset to commit for ``part``: every record below it is released."""
        return self._lanes[part].floor

    def decisions_resume(self, part: Any) -> int | None:
        """Decisions-topic offset a restart must read from for ``part`` (None: nothing read)."""
        lane = self._lanes.get(part)
        if lane is None:
            return None
        if lane.early:
            return min(d for _, d in lane.early.values())
        return lane.read_to

    def waiting(self, part: Any | None = None) -> int:
        if part is not None:
            lane = self._lanes.get(part)
            return len(lane.records) if lane else 0
        return sum(len(lane.records) for lane in self._lanes.values())

    def drop(self, part: Any) -> int:
        """Forget ``part`` (revoked: its records are re-read by the next owner); how many were waiting."""
        lane = self._lanes.pop(part, None)
        return len(lane.records) if lane else 0

    def stale(self, part: Any) -> int:
        lane = self._lanes.get(part)
        return lane.stale if lane else 0
