"""Where a run's records went (pure): one count per destination, the summary every runtime
keeps (file mode, the single processor, the staged worker, the faust stage), so each output
is counted, reconciled and logged the same way.

Every record read ends in exactly one destination (``route.DESTINATIONS``), so the counts
reconcile when they sum to the records. A revision is counted with the destination
``verify.revisions`` sends it to, and once more in ``revisions``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from streamdedup.pipeline.route import DEAD_LETTER_DEST, DESTINATIONS, DUPLICATE_DEST, REVISION_DEST, UNIQUE_DEST
from streamdedup.pipeline.tags import DuplicateTags


@dataclass
class OutputCounts:
    """Records read, how many went to each destination, revisions wherever they went, and the
    duplicates topic's records by relation."""

    records: int = 0
    sent: Counter = field(default_factory=Counter)
    revisions: int = 0
    relations: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, records: int, sent: Mapping[str, int], relations: Mapping[str, int] | None = None,
            revisions: int = 0) -> None:
        """One batch's (or record's) outputs; ``sent`` may hold other keys, which are not destinations."""
        self.records += records
        for dest in DESTINATIONS:
            self.sent[dest] += sent.get(dest, 0)
        if relations:
            self.relations.update(relations)
        self.revisions += revisions

    def count(self, dest: str, tags: object) -> None:
        """One record sent to ``dest`` with ``tags`` (``kafka_output``'s answer for a decided record)."""
        self.records += 1
        self.sent[dest] += 1
        if isinstance(tags, DuplicateTags):  # the duplicates' relations, and revisions wherever they went
            if dest == DUPLICATE_DEST:
                self.relations[tags.relation] += 1
            self.revisions += tags.status == "revision"

    def merge(self, other: "OutputCounts") -> None:
        """Add ``other``'s counts (a committed batch's) to these."""
        self.add(other.records, other.sent, other.relations, other.revisions)

    @property
    def unique(self) -> int:
        return self.sent[UNIQUE_DEST]

    @property
    def duplicates(self) -> int:
        return self.sent[DUPLICATE_DEST]

    @property
    def dead_letter(self) -> int:
        return self.sent[DEAD_LETTER_DEST]

    @property
    def revisions_out(self) -> int:
        """Records sent to the revisions output (``verify.revisions: topic``)."""
        return self.sent[REVISION_DEST]

    def reconciles(self) -> bool:
        """Every record read went to exactly one destination."""
        return sum(self.sent[d] for d in DESTINATIONS) == self.records

    def as_log(self) -> dict:
        """The counts as a run's ``done`` log line names them.

        >>> c = OutputCounts(); c.add(3, {"unique": 2, "duplicate": 1}, {"exact": 1})
        >>> c.as_log()["duplicates"], c.as_log()["by_relation"], c.reconciles()
        (1, {'exact': 1}, True)
        """
        return {"records": self.records, "unique": self.unique, "duplicates": self.duplicates,
                "dead_letter": self.dead_letter, "revisions_out": self.revisions_out, "revisions": self.revisions,
                "by_relation": dict(self.relations), "seconds": round(self.seconds, 3)}
