"""One summary of where records went, for every runtime that writes outputs."""

from __future__ import annotations

import pytest

from streamdedup.pipeline.outputs import OutputCounts
from streamdedup.pipeline.route import DESTINATIONS


def test_counts_reconcile_only_when_every_record_has_one_destination() -> None:
    c = OutputCounts()
    c.add(5, {"unique": 2, "duplicate": 2, "dead_letter": 1, "replayed": 7}, {"exact": 1, "near_duplicate": 1}, revisions=1)
    assert (c.unique, c.duplicates, c.dead_letter, c.revisions_out, c.revisions) == (2, 2, 1, 0, 1)
    assert c.reconciles() and c.relations == {"exact": 1, "near_duplicate": 1}
    c.add(1, {})  # a record counted in, sent nowhere
    assert not c.reconciles()
    c.sent["revision"] += 1
    assert c.reconciles() and c.as_log()["revisions_out"] == 1 and set(c.sent) == set(DESTINATIONS)


@pytest.mark.parametrize("where, name", [("streamdedup.runtime.filemode", "Summary"),
                                         ("streamdedup.runtime.single.processor", "RunSummary"),
                                         ("streamdedup.runtime.staged.worker", "WorkerSummary")])
def test_each_runtime_that_writes_outputs_counts_them_with_the_one_type(where: str, name: str) -> None:
    import importlib

    summary = getattr(importlib.import_module(where), name)()
    assert isinstance(summary, OutputCounts)
    assert {"records", "unique", "duplicates", "dead_letter", "revisions_out", "revisions", "by_relation"} <= set(summary.as_log())


def test_the_faust_stage_counts_with_the_one_type() -> None:
    from streamdedup import load_config
    from streamdedup.runtime.faust.agent import FaustStage

    assert isinstance(FaustStage(load_config(), app=None).summary, OutputCounts)


def test_a_record_at_a_time_counts_as_a_batch_does() -> None:
    """``count`` (the staged worker's and the faust stage's per-record emit) and ``merge``: a
    duplicate counts its relation, a revision counts wherever it went, a dead letter only its
    destination."""
    from streamdedup.pipeline.tags import DeadLetterTags, DuplicateTags

    dup = DuplicateTags("a", "exact", 1.0, None, "a", "why")
    rev = DuplicateTags("a", "near_duplicate", 0.9, None, "a", "why", status="revision")
    batch = OutputCounts()
    for dest, tags in (("unique", None), ("duplicate", dup), ("revision", rev), ("unique", rev),
                       ("dead_letter", DeadLetterTags("json", "invalid JSON", "t:0:1"))):
        batch.count(dest, tags)
    assert (batch.records, batch.unique, batch.duplicates, batch.revisions_out, batch.dead_letter) == (5, 2, 1, 1, 1)
    assert batch.relations == {"exact": 1} and batch.revisions == 2 and batch.reconciles()
    total = OutputCounts()
    total.merge(batch)
    total.merge(batch)
    assert total.as_log() == {**batch.as_log(), "records": 10, "unique": 4, "duplicates": 2, "dead_letter": 2,
                              "revisions_out": 2, "revisions": 4, "by_relation": {"exact": 2}}
