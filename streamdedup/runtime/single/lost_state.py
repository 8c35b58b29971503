"""Noticing a lost state directory: the group committed further than the state holds.

The state always lands before the offsets that cover it (exactly-once and at-least-once
alike), so a partition whose committed offset is beyond the state's position for it means the
state is not the one that made those commits: a new, emptied or lost directory, or an older
copy. Going on would index only what comes next; in the run that found this 959 of
1,000 resends of stories already seen came out unique, silently. The processor refuses by
default; the operator rebuilds the index from the input (``--rebuild-from-input SINCE``) or
goes on knowingly (``--accept-empty-state``).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamdedup.engine.deduplicator import Source
from streamdedup.errors import StreamdedupError


class LostStateError(StreamdedupError):
    """The state holds less than the consumer group committed; the message gives the options."""


@dataclass(frozen=True)
class Gap:
    """A partition the group committed through ``committed`` while the state holds ``state`` (None: nothing)."""

    topic: str
    partition: int
    committed: int
    state: int | None


def state_gaps(committed: dict[tuple[str, int], int], positions: dict[Source, int]) -> list[Gap]:
    """Partitions whose committed offset is beyond the state's position (no commit: no gap).

    >>> state_gaps({("news", 0): 120, ("news", 1): -1001}, {})
    [Gap(topic='news', partition=0, committed=120, state=None)]
    >>> state_gaps({("news", 0): 120}, {Source("news", 0): 120})
    []
    """
    gaps = []
    for (topic, partition), offset in sorted(committed.items()):
        if offset < 0:  # OFFSET_INVALID: the group never committed here
            continue
        have = positions.get(Source(topic, partition))
        if have is None or have < offset:
            gaps.append(Gap(topic, partition, offset, have))
    return gaps


def refusal(gaps: list[Gap], group: str, state_dir: str) -> LostStateError:
    """The error that stops the processor: what happened, what it would cost, the two ways on."""
    total = sum(g.committed - (g.state or 0) for g in gaps)
    where = ", ".join(f"{g.topic}[{g.partition}] at {g.committed:,}" + ("" if g.state is None else f" (state {g.state:,})")
                      for g in gaps[:4]) + (f" and {len(gaps) - 4} more" if len(gaps) > 4 else "")
    what = ("holds none of them (a new, emptied or lost state directory)" if all(g.state is None for g in gaps)
            else "is behind them (an older copy of the state?)")
    return LostStateError(
        f"consumer group {group!r} has committed offsets on {len(gaps)} input partition(s) ({where}) but the state "
        f"directory {state_dir} {what}: up to {total:,} records already seen are missing from the index and their "
        f"resends would come out unique. Restart with --rebuild-from-input SINCE to index the input from SINCE "
        f"(earliest, an offset, -N for the last N records, a time such as 2026-11-20T06:00, or an age such as 48h) "
        f"up to the committed offsets "
        f"without emitting anything, or with --accept-empty-state to go on with the state as it is."
    )
