"""Queries against the index (``Deduplicator.query``): found as a new document would be
decided, without changing the index, the state or any later decision; answered from
text-free fingerprints; ``yes_no`` answers say nothing else."""

from __future__ import annotations

import random

import orjson

from streamdedup import load_config
from streamdedup.engine.checkpoint import Source
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
from streamdedup.pipeline.queries import Answerer, RateLimit
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.state import MemoryStore
from tests.unit.test_engine import story, typo

T0 = 1_700_000_000_000
NO_EVIDENCE = {"STREAMDEDUP_VERIFY__EXACT_EVIDENCE": "false", "STREAMDEDUP_VERIFY__REVISIONS": "off"}


def _indexed(cfg, n: int = 60) -> Deduplicator:
    engine = Deduplicator(cfg, MemoryStore())
    docs = [Document(f"s{k}", story(500 + k, 220), T0 + k) for k in range(n)]
    for lo in range(0, n, 16):
        engine.process(docs[lo:lo + 16])
    return engine


def _queries() -> list[tuple[str, str]]:
    out = []
    for k in range(0, 20):
        words = story(500 + k, 220).split()
        out.append((f"copy{k}", typo(" ".join(words), k, 2)))  # a copy with two typos
    for k in range(20, 30):
        words = story(500 + k, 220).split()
        out.append((f"part{k}", " ".join(words[60:140])))  # a modified part: a third of the story
    out += [(f"new{k}", story(9000 + k, 220)) for k in range(10)]
    return out


def _ask(engine: Deduplicator, queries, policy="ids"):
    fp = Fingerprinter(engine.cfg.fingerprint)
    batch = fp.fingerprint_batch([t for _, t in queries])
    return engine.query([i for i, _ in queries], batch, policy)


def test_a_query_is_found_as_deciding_it_would_find_it_and_changes_nothing() -> None:
    cfg = load_config(environ=NO_EVIDENCE)
    engine, twin = _indexed(cfg), _indexed(cfg)
    before = (engine.indexed_documents, engine.meta.dumps(), dict(engine.store._records))
    queries = _queries()
    answers = _ask(engine, queries)
    assert (engine.indexed_documents, engine.meta.dumps(), dict(engine.store._records)) == before
    by_id = {a.id: a for a in answers}
    assert all(by_id[f"copy{k}"].found and by_id[f"copy{k}"].matched == f"s{k}" for k in range(20))
    assert all(by_id[f"part{k}"].found and by_id[f"part{k}"].matched == f"s{k}" for k in range(20, 30))
    assert {by_id[f"part{k}"].relation for k in range(20, 30)} == {"contained_in"}
    assert all(by_id[f"part{k}"].query_in_match > 0.8 for k in range(20, 30))
    assert not any(by_id[f"new{k}"].found for k in range(10))
    # the queries are distinct stories: deciding them as a batch finds what each query found
    decided = twin.process([Document(i, t, T0 + 100) for i, t in queries])
    for a, d in zip(answers, decided):
        assert a.found == (d.status == "duplicate"), a.id
        if a.found:
            assert (a.matched, a.relation, a.jaccard, a.ld_similarity) == (d.matched, d.relation, d.similarity, d.ld_similarity), a.id
    # later decisions are those of an engine that was never asked
    later = [Document(f"later{k}", typo(story(500 + k, 220), 50 + k, 3), T0 + 200 + k) for k in range(0, 60, 7)]
    untouched = _indexed(cfg)
    assert list(engine.process(later)) == list(untouched.process(later))


def test_queries_in_one_call_do_not_match_each_other_and_yes_no_says_only_yes_or_no() -> None:
    engine = _indexed(load_config(environ=NO_EVIDENCE), 10)
    fresh = story(7777, 200)
    answers = _ask(engine, [("a", fresh), ("b", fresh), ("c", story(500, 220))], "yes_no")
    assert [(a.found, a.to_json()) for a in answers] == [
        (False, {"id": "a", "found": False}), (False, {"id": "b", "found": False}), (True, {"id": "c", "found": True})]


def test_text_free_query_records_get_the_answers_of_the_texts() -> None:
    """The partner sends fingerprints only; the index keeps its texts (exact evidence is not
    asked of an index that keeps texts, so a text-free query needs no text-free index)."""
    cfg = load_config()
    engine = _indexed(cfg)
    queries = _queries()
    fp = TextFingerprinter(cfg, "partner")
    values = [f'{{"id": "{i}", "text": "{t}"}}'.encode() for i, t in queries]
    dec = fp.codec.decode(fp.records(values, 0, T0 + 100))
    assert dec.no_text.all()
    got = engine.query(dec.ids, dec.batch)
    assert [a.to_json() for a in got] == [a.to_json() for a in _ask(engine, queries)]
    assert sum(a.found for a in got) == 30


def test_noisy_copies_asked_without_text_of_an_index_without_text_are_found_on_the_sketches() -> None:
    """Character noise (3%) leaves a copy's estimates below the thresholds: an index without
    texts whose records keep the evidence sketches finds the copies a text-free query asks
    for, on the query's own sketches; with exact evidence off it finds almost none. Neither
    finds another story's copy, and the index does not change."""
    from streamdedup.bench.hard_edits import char_noise

    rng = random.Random(3)
    queries = [(f"noisy{k}", char_noise(story(500 + k, 220), 0.03, rng)) for k in range(40)]
    queries += [(f"new{k}", char_noise(story(9000 + k, 220), 0.03, rng)) for k in range(10)]
    values = [orjson.dumps({"id": i, "text": t}) for i, t in queries]
    found = {}
    for exact in ("true", "false"):
        cfg = load_config(environ={"STREAMDEDUP_STATE__KEEP_TEXT": "false", "STREAMDEDUP_VERIFY__REVISIONS": "off",
                                   "STREAMDEDUP_VERIFY__EXACT_EVIDENCE": exact})
        engine = _indexed(cfg)
        before = dict(engine.store._records)
        fp = TextFingerprinter(cfg, "partner")
        dec = fp.codec.decode(fp.records(values, 0, T0 + 100))
        got = engine.query(dec.ids, dec.batch)
        assert dict(engine.store._records) == before
        assert all(a.matched == a.id.replace("noisy", "s") for a in got if a.found)
        found[exact] = sum(a.found for a in got)
    assert found["true"] >= 36 and found["false"] <= 10, found  # measured 38 and 0


def test_each_query_record_gets_one_answer_and_a_client_past_its_rate_an_error() -> None:
    cfg = load_config(environ=NO_EVIDENCE)
    engine = _indexed(cfg, 20)
    fp = TextFingerprinter(cfg, "asker")
    now = [0.0]
    answerer = Answerer(fp.codec, engine.query, "ids", RateLimit(2.0, lambda: now[0]))
    good = fp.records([f'{{"id": "q{k}", "text": "{story(500 + k, 220)}"}}'.encode() for k in range(3)])
    other = TextFingerprinter(load_config(environ={**NO_EVIDENCE, "STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM": "64"}))
    values = [good[0], b"", fp.announcement(), good[1], other.records([b'{"id": "x", "text": "a story of its own"}'])[0],
              fp.codec.encode_dead(Source("asker"), 9, "json", "not JSON"), good[2]]
    out = answerer.answer(values, ["a"] * len(values))
    assert [o.get("matched") for o in out] == ["s0", None, None, "s1", None, None, "s2"]
    assert "cut short" in out[1]["error"] and out[2] == {"params": "the fingerprint settings of this index"}
    assert "num_perm" in answerer.answer([other.announcement()], ["a"])[0]["error"]
    assert "fingerprint params" in out[4]["error"] and "dead-letter" in out[5]["error"]
    burst = answerer.answer([good[0]] * 25, ["b"] * 25)  # 20 at once (ten seconds at 2 a second), then none
    assert sum("error" in o for o in burst) == 5 and all("past its rate" in o["error"] for o in burst[20:])
    assert answerer.answer([good[0]], ["c"])[0]["found"]  # another client has its own rate
    now[0] += 1.0
    assert [("error" in o) for o in answerer.answer([good[0]] * 3, ["b"] * 3)] == [False, False, True]


def test_hostile_announcements_are_error_answers_of_bounded_size_and_leave_no_memory() -> None:
    """A params announcement is the sender's text: settings that are not JSON, not an object,
    nested past the recursion limit or huge, with a key made to match, must be an error answer
    (the owner answering them crashed before, and crashed again on the same record after every
    restart), short, and not kept."""
    from streamdedup._kernels import fprecords as K
    from streamdedup.pipeline.fingerprints import MAX_ANNOUNCED, _text, _varint
    from streamdedup.sketch.params import FingerprintParams

    cfg = load_config(environ=NO_EVIDENCE)
    engine = _indexed(cfg, 5)
    fp = TextFingerprinter(cfg, "asker")
    answerer = Answerer(fp.codec, engine.query, "ids", RateLimit(1e6, lambda: 0.0))

    def announcement(settings: str) -> bytes:
        key = FingerprintParams(3, settings, 30, 4).key
        return bytes([K.CODEC_VERSION, K.KIND_PARAMS]) + key.to_bytes(4, "little") + _varint(3) + _varint(30) + \
            _varint(4) + _text(settings)

    hostile = ["not json", "[1, 2]", "[" * 100_000 + "]" * 100_000, '{"a": ' * 5000 + "1" + "}" * 5000,
               orjson.dumps({f"k{i}": {"x" * 50: "y" * 200} for i in range(2000)}).decode()]
    for settings in hostile:
        out = answerer.answer([announcement(settings)], ["h"])
        assert len(out) == 1 and "error" in out[0] and len(orjson.dumps(out[0])) < 1000, settings[:40]
    for i in range(3 * MAX_ANNOUNCED):
        answerer.answer([announcement(orjson.dumps({"n": i}).decode())], ["h"])
    assert len(fp.codec.announced) <= MAX_ANNOUNCED
    assert answerer.answer([fp.records([b'{"id": "q", "text": "%s"}' % story(500, 220).encode()])[0]], ["h"])[0]["found"]


def test_the_query_topic_survives_a_reply_topic_that_fails_and_a_consumer_that_dies() -> None:
    """A flush that fails leaves the queries to be read and answered again, a fatal query
    consumer stops the queries alone: neither may stop the index's owner."""
    from confluent_kafka import KafkaError

    from streamdedup.runtime.kafka.clients import Clients
    from streamdedup.runtime.kafka.queries import QueryTopic
    from tests.unit.fake_kafka import Admin, Broker, Consumer, Producer, kafka_error

    cfg = load_config(environ={**NO_EVIDENCE, "STREAMDEDUP_KAFKA__QUERIES__TOPIC": "q",
                               "STREAMDEDUP_KAFKA__QUERIES__REPLY_TOPIC": "a"})
    engine = _indexed(cfg, 5)
    b = Broker()
    for t in ("q", "a"):
        b.create(t)
    fp = TextFingerprinter(cfg, "asker")
    b.append("q", [(b"k%d" % k, r) for k, r in enumerate(
        fp.records([b'{"id": "q%d", "text": "%s"}' % (k, story(500 + k, 220).encode()) for k in range(3)]))])
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf),
                      admin=lambda conf: Admin(b, conf))
    topic = QueryTopic(cfg, clients, engine.query)
    b.fail("flush", kafka_error(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"))
    assert topic.serve() == 0  # not delivered: rewound
    assert topic.serve() == 3
    answered = {key for _, key, _, _ in b.read_committed(["a"])}
    assert answered == {b"k0", b"k1", b"k2"}
    b.consumer_events[b.calls["consume"] + 1] = KafkaError(KafkaError._FATAL, "Fatal error: fenced")
    assert topic.serve() == 0 and topic.stopped and topic.serve() == 0
