"""The dedup engine: decisions, clusters, window, bounds, boilerplate, restarts."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from streamdedup import load_config
from streamdedup.bench.synthetic import LONG_FOOTERS
from streamdedup.engine.deduplicator import Deduplicator, Document, Source
from streamdedup.engine.stored import stored_decisions, unconfirmed_decisions
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.pipeline.decide import FingerprintAndDecide, warm_up
from streamdedup.state import MemoryStore
from streamdedup.state.rocks import RocksStore

HOUR = 3_600_000
VOCAB = ("market shares company profit bank rate oil price minister government said year percent "
         "billion million dollar trade export import growth quarter analyst forecast sales tax budget "
         "crude barrel futures index stock bond yield central inflation demand supply output plant").split()


def story(seed: int, words: int = 160) -> str:
    rng = random.Random(seed)
    sents = []
    while sum(len(s.split()) for s in sents) < words:
        sents.append(" ".join(rng.choice(VOCAB) for _ in range(rng.randint(8, 16))).capitalize() + ".")
    return " ".join(sents)


def typo(text: str, seed: int, n: int = 3) -> str:
    rng = random.Random(seed)
    chars = list(text)
    for _ in range(n):
        i = rng.randrange(len(chars))
        chars[i] = "q"
    return "".join(chars)


def cfg(**env: str):
    return load_config(environ={f"STREAMDEDUP_{k}": v for k, v in env.items()})


def run(engine: Deduplicator, docs: list[Document], batch: int = 4):
    out = []
    for i in range(0, len(docs), batch):
        out.extend(engine.process(docs[i:i + batch]))
    return out


@dataclass
class SplitRun:
    decisions: list
    stored_after: int  # records left in the store after the second half
    cells_after: int  # index table size after the second half


def _run_in_two(c, docs: list[Document], path: str, split: int, second_batch: int) -> SplitRun:
    """First ``split`` documents, close, reopen the same RocksDB state, then the rest."""
    first = Deduplicator(c, RocksStore(path))
    part1 = run(first, docs[:split], batch=16)
    first.close()
    second = Deduplicator(c, RocksStore(path))
    part2 = run(second, docs[split:], batch=second_batch)
    result = SplitRun(part1 + part2, len(list(second.store.iter_from(0))), second.index.n_cells)
    second.close()
    return result


def test_duplicate_within_one_batch_and_root_not_chain() -> None:
    a = story(1)
    docs = [Document("a", a, 0), Document("a-typo", typo(a, 2), 1), Document("b", story(3), 2),
            Document("a-typo-2", typo(typo(a, 2), 4), 3)]
    out = Deduplicator(cfg(), MemoryStore()).process(docs)
    assert [d.status for d in out] == ["unique", "duplicate", "unique", "duplicate"]
    assert out[1].duplicate_of == "a"
    # the third copy is closest to the second, but duplicate_of names the cluster's first document
    assert out[3].duplicate_of == "a"
    assert out[1].relation == "near_duplicate" and out[1].similarity > 0.8


def test_exact_after_formatting_and_reordered_paragraphs() -> None:
    paras = [story(10 + k, 60) for k in range(5)]
    text = "\n\n".join(paras)
    docs = [Document("orig", text, 0),
            Document("html", "<p>" + "</p><p>".join(p.upper() for p in paras) + "</p>", 1),
            Document("reordered", "\n\n".join(paras[2:] + paras[:2]), 2)]
    out = run(Deduplicator(cfg(), MemoryStore()), docs)
    assert (out[1].status, out[1].relation, out[1].duplicate_of) == ("duplicate", "exact", "orig")
    assert (out[2].status, out[2].duplicate_of) == ("duplicate", "orig")


def test_teaser_is_contained_in_and_unrelated_story_is_unique() -> None:
    full = story(20, 400)
    teaser = full[: int(len(full) * 0.3)]
    out = run(Deduplicator(cfg(), MemoryStore()), [Document("full", full, 0), Document("teaser", teaser, 1), Document("other", story(21), 2)])
    assert (out[1].status, out[1].relation) == ("duplicate", "contained_in")
    assert out[2].status == "unique"


def test_boilerplate_both_directions() -> None:
    footer = LONG_FOOTERS[0]
    engine = Deduplicator(cfg(), MemoryStore())
    # many different short-ish stories carrying the same long footer: none duplicates another
    stories = [story(100 + k, 90) for k in range(30)]
    out = run(engine, [Document(f"s{k}", f"{s}\n{footer}", k) for k, s in enumerate(stories)])
    assert [d.status for d in out].count("duplicate") == 0
    # ... while the same story without the footer, and with it again, is a duplicate
    again = run(engine, [Document("s3-bare", stories[3], 100), Document("s5-again", f"{stories[5]}\n{footer}", 101)])
    assert [(d.status, d.duplicate_of) for d in again] == [("duplicate", "s3"), ("duplicate", "s5")]


def test_event_time_window() -> None:
    text = story(30)
    engine = Deduplicator(cfg(ENGINE__WINDOW_HOURS="72"), MemoryStore())
    out = run(engine, [Document("a", text, 0), Document("b", text, 71 * HOUR), Document("c", story(31), 200 * HOUR),
                       Document("d", text, 200 * HOUR)])
    assert out[1].status == "duplicate"
    # 200 h: "a" and "b" left the window when "c" moved the watermark
    assert out[3].status == "unique"


def test_documents_that_leave_the_window_leave_the_store(tmp_path) -> None:
    store = RocksStore(str(tmp_path / "s"))
    engine = Deduplicator(cfg(ENGINE__WINDOW_HOURS="1"), store)
    run(engine, [Document(f"old{k}", story(80 + k), k * 60_000) for k in range(10)])
    assert len(list(store.iter_from(0))) == 10
    # two hours later: the old documents are out of the window, then out of the store
    run(engine, [Document(f"new{k}", story(95 + k), 2 * HOUR + k) for k in range(8)])
    assert [engine_record_id(raw) for _, raw in store.iter_from(0)] == [f"new{k}" for k in range(8)]
    engine.close()


def engine_record_id(raw: bytes) -> str:
    from streamdedup.engine.record import ids

    return ids(raw)[0]


@pytest.mark.parametrize("split", [37, 120])
def test_restart_with_a_short_window_gives_identical_decisions(tmp_path, split: int) -> None:
    # one document a minute in a 40-minute window: most of the stream leaves the window (and
    # the store) while it runs
    c = cfg(ENGINE__WINDOW_HOURS="0.67", ENGINE__BATCH_SIZE="16")
    docs = [Document(d.id, d.text, k * 60_000) for k, d in enumerate(_stream())]
    whole = run(Deduplicator(c, MemoryStore()), docs, batch=16)
    split_run = _run_in_two(c, docs, str(tmp_path / f"w-{split}"), split, second_batch=5)
    assert split_run.stored_after < 60
    assert [_key(d) for d in split_run.decisions] == [_key(d) for d in whole]
    assert sum(d.status == "duplicate" for d in whole) > 30


def test_max_documents_evicts_oldest_and_deletes_its_record(tmp_path) -> None:
    store = RocksStore(str(tmp_path / "s"))
    engine = Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="16"), store)
    docs = [Document("first", story(40), 0)] + [Document(f"f{k}", story(41 + k), k + 1) for k in range(20)]
    run(engine, docs)
    assert len(list(store.iter_from(0))) == 16
    out = engine.process([Document("first-again", story(40), 50)])
    assert out[0].status == "unique"
    engine.close()


def test_delete_by_id() -> None:
    engine = Deduplicator(cfg(), MemoryStore())
    text = story(50)
    run(engine, [Document("x", text, 0), Document("y", story(51), 1)])
    assert engine.delete("x") == 1
    assert engine.delete("nope") == 0
    assert engine.process([Document("x2", text, 2)])[0].status == "unique"


def test_rejects_text_without_words() -> None:
    out = Deduplicator(cfg(), MemoryStore()).process([Document("p", "!!! ... ---", 0), Document("ok", story(60), 1)])
    assert out[0].status == "rejected" and "canonicalisation" in out[0].reason
    assert out[1].status == "unique"


def _stream(n: int = 240) -> list[Document]:
    rng = random.Random(7)
    bases = [story(1000 + k) for k in range(n // 3)]
    docs = []
    for k in range(n):
        if k % 3 == 0 or k < 10:
            text = bases[(k // 3) % len(bases)]
        elif k % 3 == 1:
            text = typo(bases[rng.randrange(max(1, k // 3))], k)
        else:
            text = f"{bases[rng.randrange(max(1, k // 3))]}\n{LONG_FOOTERS[k % 3]}"
        docs.append(Document(f"d{k}", text, k * 60_000))
    return docs


def _key(d):
    return (d.id, d.status, d.duplicate_of, d.relation, None if d.similarity is None else round(d.similarity, 9))


@pytest.mark.parametrize("sizing", ["grow", "full"])
@pytest.mark.parametrize("split", [1, 77, 150])
def test_restart_gives_identical_decisions(tmp_path, split: int, sizing: str) -> None:
    c = cfg(ENGINE__MAX_DOCUMENTS="64", ENGINE__BATCH_SIZE="16", ENGINE__INDEX_SIZING=sizing)
    docs = _stream()
    whole = run(Deduplicator(c, MemoryStore()), docs, batch=16)
    # other batch boundaries after the restart too
    split_run = _run_in_two(c, docs, str(tmp_path / f"state-{split}-{sizing}"), split, second_batch=7)
    assert [_key(d) for d in split_run.decisions] == [_key(d) for d in whole]
    assert sum(d.status == "duplicate" for d in whole) > 50  # the stream really exercises the index


def test_state_from_other_parameters_is_refused(tmp_path) -> None:
    path = str(tmp_path / "s")
    e = Deduplicator(cfg(), RocksStore(path))
    e.process([Document("a", story(70), 0)])
    e.close()
    with pytest.raises(IncompatibleFingerprintError, match="new state directory"):
        Deduplicator(cfg(FINGERPRINT__MINHASH__NUM_PERM="64"), RocksStore(path))


def test_full_tables_and_warm_up(monkeypatch) -> None:
    docs = _stream(120)
    full = Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="4096", ENGINE__INDEX_SIZING="full"), MemoryStore())
    assert full.index.n_cells == full.index.max_cells and not full.index.cells.any()  # touching writes zeros only
    assert Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="4096"), MemoryStore(), auto_sizing="full").index.full  # auto, Kafka
    assert not Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="4096"), MemoryStore()).index.full  # auto, file mode
    cold = run(Deduplicator(cfg(ENGINE__MAX_DOCUMENTS="4096", ENGINE__INDEX_SIZING="full"), MemoryStore()), docs, batch=16)
    warm_up(full.cfg)
    assert full.indexed_documents == 0 and full.meta.next_seq == 0  # the warm-up used a scratch engine
    assert [_key(d) for d in run(full, docs, batch=16)] == [_key(d) for d in cold]
    assert full.index.n_cells == full.index.max_cells  # never grew


def test_tables_grow_mid_batch_like_one_document_at_a_time(monkeypatch) -> None:
    from streamdedup.engine import index

    monkeypatch.setattr(index, "MIN_CELLS", 16)
    docs = _stream(240)
    c = cfg(ENGINE__MAX_DOCUMENTS="200")
    big_batches = Deduplicator(c, MemoryStore())
    assert big_batches.index.n_cells == 25  # 400 / 4 / 4: it grows at seqs 12 and 50, inside the first batch
    out = []
    for i in range(0, len(docs), 100):
        out.extend(big_batches.process(docs[i:i + 100]))
    assert big_batches.index.n_cells == 400
    one_by_one = run(Deduplicator(c, MemoryStore()), docs, batch=1)
    assert [_key(d) for d in out] == [_key(d) for d in one_by_one]


@pytest.mark.parametrize("split", [30, 99, 101, 170])
def test_restart_across_table_growth_gives_identical_decisions(tmp_path, monkeypatch, split: int) -> None:
    from streamdedup.engine import index

    monkeypatch.setattr(index, "MIN_CELLS", 16)  # tables of 16, 64 and 256 cells: growth at seqs 8 and 32
    c = cfg(ENGINE__MAX_DOCUMENTS="128", ENGINE__BATCH_SIZE="16")
    docs = _stream()
    whole = run(Deduplicator(c, MemoryStore()), docs, batch=16)
    split_run = _run_in_two(c, docs, str(tmp_path / f"state-{split}"), split, second_batch=9)
    assert split_run.cells_after == 256
    assert [_key(d) for d in split_run.decisions] == [_key(d) for d in whole]


def test_duplicates_name_where_their_original_and_match_were_read() -> None:
    # the inspector fetches the original from these positions: each must be the root's and the
    # matched document's own (topic, partition, offset), whether the match was decided in the
    # same batch or an earlier one, live or from the stored records (a replay, a re-sent record)
    docs = [Document(d.id, d.text, d.event_time_ms, Source("news", k % 3), 1000 + k) for k, d in enumerate(_stream(90))]
    at = {d.id: f"news:{d.source.partition}:{d.offset}" for d in docs}
    engine = Deduplicator(cfg(), MemoryStore())
    live = run(engine, docs, batch=30)
    dups = [d for d in live if d.status == "duplicate"]
    assert len(dups) > 20 and any(d.duplicate_of != d.matched for d in dups)
    for d in dups:
        assert (d.original, d.matched_source) == (at[d.duplicate_of], at[d.matched])
        assert d.tags()["original"] == d.original
    stored = stored_decisions(engine, [d.seq for d in live])
    assert [stored[d.seq] for d in live if d.seq >= 0] == [d for d in live if d.seq >= 0]


def test_positions_of_file_lines_and_of_documents_without_one() -> None:
    engine = Deduplicator(cfg(), MemoryStore())
    text = story(5)
    lines = engine.process([Document("a", text, 0, Source("file:/in.jsonl"), 4), Document("b", text, 0, Source("file:/in.jsonl"), 9)])
    assert (lines[1].original, lines[1].matched_source) == ("line:4", "line:4")
    bare = Deduplicator(cfg(), MemoryStore()).process([Document("a", text, 0), Document("b", text, 0)])
    assert bare[1].status == "duplicate" and bare[1].original is None


def test_input_positions_never_move_back() -> None:
    # a crashed Kafka processor re-reads batches the state already holds: the end of a replayed
    # batch must not lower the position, or the next re-read batch would be decided again
    engine = Deduplicator(cfg(), MemoryStore())
    t0, t1 = Source("t", 0), Source("t", 1)
    engine.process([Document("a", story(1), 0, t0, 10)], {t0: 2000})
    engine.process([], {t0: 1024})
    engine.process([Document("b", story(2), 0, t0, 2001)], {t0: 1536, t1: 5})
    assert engine.resume_positions() == {t0: 2000, t1: 5}


def test_checkpoint_contract_across_a_restart(tmp_path) -> None:
    """Positions and sources survive a restart in the engine's own terms; decisions of batches
    the caller has not confirmed are kept for a replay, keyed by (source, offset)."""
    path = str(tmp_path / "s")
    a, b = Source("news", 0), Source("wires", 3)
    engine = Deduplicator(cfg(), RocksStore(path), explicit_confirm=True)
    docs = [Document("x", story(1), 0, a, 7), Document("y", story(1), 0, b, 40)]
    first = FingerprintAndDecide(engine)(["x"], [docs[0].text], np.zeros(1, np.int64), np.array([engine.source_id(a)]),
                             np.array([7]), {a: 8})
    first.wait_durable()
    assert first.through == 1 and first.decisions[0].status == "unique"
    engine.confirm_outputs(first.through)
    second = engine.process([docs[1]], {b: 41})
    assert second[0].status == "duplicate" and second[0].duplicate_of == "x"
    engine.close()
    again = Deduplicator(cfg(), RocksStore(path), explicit_confirm=True)
    assert again.resume_positions() == {a: 8, b: 41}
    replay = unconfirmed_decisions(again)
    assert list(replay) == [(b, 40)]  # the confirmed batch is not replayed
    assert replay[(b, 40)].duplicate_of == "x" and replay[(b, 40)].relation == second[0].relation
    assert again.source_id(b) == 1 and again.source_id(Source("new", 0)) == 2
    again.close()


def test_reported_estimates_are_those_of_the_kept_pair() -> None:
    """The decide loop skips a candidate's LD estimate and signature embedding where its relation
    is decided already (exact, or near by Jaccard) and computes them for the match it keeps: what
    a duplicate reports is what ``compare`` says of it and its match (NaN where not reported)."""
    from streamdedup import Fingerprinter
    from streamdedup.sketch import record
    from streamdedup.engine.verify import Fingerprint, compare

    c = cfg(VERIFY__REVISIONS="duplicates")  # a revision is a duplicate here: its estimates are checked too
    ct, bits = c.verify.containment_threshold, c.fingerprint.minhash.storage_bits
    texts: dict[str, str] = {}
    docs = []
    for k in range(6):
        base = story(500 + k, 300)
        # several copies per cluster: each later copy has several candidates of its cluster
        for name, text in (("", base), ("t1", typo(base, k, 4)), ("t2", typo(base, k + 50, 6)), ("t3", typo(base, k + 90, 40)),
                           ("tease", base[: len(base) // 3]), ("more", base + " " + story(900 + k, 60))):
            texts[f"s{k}{name}"] = text
            docs.append(Document(f"s{k}{name}", text, len(docs)))
    engine = Deduplicator(c, MemoryStore())
    fp = Fingerprinter(c.fingerprint)
    checked = embedded_near = 0
    for lo in range(0, len(docs), 5):
        out = engine.process(docs[lo:lo + 5])
        for k in range(len(out)):
            if out.codes[k] != 1 or out.decision(k).relation == "exact":
                continue
            d = out.decision(k)
            batch = fp.fingerprint_batch([texts[d.matched], texts[d.id]])
            a = Fingerprint.from_record(record.decode(record.encode(batch, 0, bits), c.fingerprint.minhash.num_perm))
            want = compare(a, Fingerprint.from_batch(batch, 1), c.verify, c.fingerprint.signature)
            if out.flags[k] & 2:  # exact character evidence: test_exact_evidence_*
                continue
            j, ld, c_ba, c_ab, emb = (float(x) for x in out.numbers[k][:5])
            assert (j, c_ba, c_ab) == pytest.approx((want.jaccard, want.containment_b_in_a, want.containment_a_in_b), rel=1e-6)
            assert np.isnan(ld) if want.ld_similarity is None else ld == pytest.approx(want.ld_similarity, rel=1e-6), d
            if want.containment_b_in_a >= c.verify.contained_min_estimate or want.containment_a_in_b >= ct:
                assert emb == pytest.approx(want.embedding_similarity, rel=1e-6), d
                embedded_near += d.relation == "near_duplicate"
            else:
                assert np.isnan(emb), d
            checked += 1
    assert checked >= 20 and embedded_near >= 5, (checked, embedded_near)
