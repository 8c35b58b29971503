"""What a duplicate's tags say of the document it matched and of its original is the same
whether the engine reads them from its memory of recent batches or from their state records,
when the state evicts and deletes those records meanwhile too."""

from __future__ import annotations

import random

from streamdedup.engine.deduplicator import Deduplicator, Document, Source
from streamdedup.engine.matches import RecentDocuments
from streamdedup.state.rocks import RocksStore
from tests.engine_runs import cfg, in_batches
from tests.unit.test_engine import story


class _Forgetful(RecentDocuments):
    """Remembers nothing: every earlier document is read from its record."""

    def fields(self, seq: int):
        return None


class _Counting(RecentDocuments):
    def __init__(self) -> None:
        super().__init__()
        self.hits = 0

    def fields(self, seq: int):
        got = super().fields(seq)
        self.hits += got is not None
        return got


def _feed(n: int, seed: int = 5) -> list[Document]:
    """New stories and copies of earlier ones, some resent long after (their originals evicted)."""
    rng = random.Random(seed)
    src = Source("in", 0)
    docs, made = [], []
    for k in range(n):
        if made and rng.random() < 0.4:
            text = rng.choice(made[-8:] if rng.random() < 0.7 else made)
            text = text if rng.random() < 0.5 else text + " the company said on friday"
        else:
            text = story(1000 + k)
            made.append(text)
        docs.append(Document(f"d{k}", text, 1_700_000_000_000 + k, src, k))
    return docs


def _tags(memory: RecentDocuments, path: str, docs: list[Document]) -> list[dict]:
    engine = Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="48"), RocksStore(path))
    engine.recent_documents = memory
    out = [d.tags() for d in in_batches(engine, docs, 7)]
    engine.close()
    return out


def test_recent_documents_tag_as_their_records_do(tmp_path) -> None:
    docs = _feed(400)
    counting = _Counting()
    remembered = _tags(counting, str(tmp_path / "a"), docs)
    read = _tags(_Forgetful(), str(tmp_path / "b"), docs)
    assert remembered == read
    dups = [t for t in remembered if t["status"] != "unique"]
    assert len(dups) > 100 and counting.hits > 50
    # copies of evicted stories: the original's position is gone with its record, as it was
    assert any(t["original"] is None for t in dups) and any(t["original"] for t in dups)


def test_recent_documents_keep_a_bounded_number_and_start_again_with_the_seqs() -> None:
    import numpy as np

    recent = RecentDocuments(limit=10)
    for first in (0, 4, 8, 12):
        seqs = np.arange(first, first + 4)
        recent.remember(seqs, [f"d{s}" for s in seqs], {1: "root"}, np.zeros(4, np.int64), seqs)
    assert recent.fields(3) is None  # forgotten: over the limit
    assert recent.fields(9) == ("d9", "root", 0, 9) and recent.fields(10) == ("d10", "d10", 0, 10)
    assert recent.fields(16) is None
    recent.remember(np.array([-1, 0, 1]), ["x", "y", "z"], {}, np.zeros(3, np.int64), np.arange(3))
    assert recent.fields(0) == ("y", "y", 0, 1) and recent.fields(9) is None  # a rebuilt index
