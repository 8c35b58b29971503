"""Records per output topic, counted by reading them.

A topic's offsets are not its records: a transactional producer writes a commit marker per
partition per transaction (the processor's dead letters, a few per batch, took two offsets
each), and an aborted transaction's records keep their offsets. A ``read_committed`` consumer
skips both, so reading is the one exact count. :class:`RecordCounter` reads each partition once
and then only what was added since (it keeps the position and the count per partition), within
a time budget per call; a partition it could not finish is estimated by its remaining offsets,
and the call says so (``exact`` False).

What "exact" means: every committed record between the partition's low watermark (retention
may have deleted older ones; they are no longer counted) and its last stable offset at the time
of the call; a transaction still open then is counted once it commits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition


@dataclass
class Counted:
    """Records of one topic, and whether the figure is exact (see the module doc)."""

    records: int
    exact: bool


class RecordCounter:
    """Counts the committed records of topics, incrementally (one instance per inspector)."""

    def __init__(self, consumer, timeout_s: float = 15.0, budget_s: float = 5.0):
        """``consumer``: a read_committed consumer with ``enable.partition.eof``, committing
        nothing (the inspector's own: its calls are serial, and each read assigns what it reads)."""
        self.timeout_s = timeout_s
        self.budget_s = budget_s
        self.consumer = consumer
        #: (topic, partition) -> (next offset to read, committed records before it since ``low``, low)
        self._done: dict[tuple[str, int], tuple[int, int, int]] = {}

    def deadline(self) -> float:
        """The end of one call's time budget (share it among the topics of one page)."""
        return time.monotonic() + self.budget_s

    def count(self, topic: str, partitions: list[int], deadline: float | None = None) -> Counted:
        deadline = self.deadline() if deadline is None else deadline
        total, exact = 0, True
        for p in partitions:
            lo, hi = self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=self.timeout_s, cached=False)
            pos, n, low = self._done.get((topic, p), (lo, 0, lo))
            if lo > low:  # retention removed records it had counted: count this partition again
                pos, n = lo, 0
            at_end = pos >= hi
            if not at_end:
                pos, n, at_end = self._read(topic, p, pos, n, deadline)
            self._done[(topic, p)] = (pos, n, lo)
            total += n
            if not at_end:
                exact = False
                total += max(0, hi - pos)  # what it could not read in time, counted as offsets
        return Counted(total, exact)

    def _read(self, topic: str, p: int, pos: int, n: int, deadline: float) -> tuple[int, int, bool]:
        """Read one partition from ``pos`` to where a read_committed reader ends now (the last
        stable offset), or until the deadline; returns the next position, the count and whether
        it got to the end. The consumer skips markers and aborted records without a message;
        the end-of-partition event carries the offset it reached past them."""
        self.consumer.assign([TopicPartition(topic, p, pos)])
        try:
            while time.monotonic() < deadline:
                for m in self.consumer.consume(1000, 0.2):
                    err = m.error()
                    if err is None:
                        n += 1
                        pos = m.offset() + 1
                    elif err.code() == KafkaError._PARTITION_EOF:
                        return max(pos, m.offset()), n, True
            return pos, n, False
        finally:
            self.consumer.unassign()
