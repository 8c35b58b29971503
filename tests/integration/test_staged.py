"""The staged topology (workers + one decider) against a real broker.

What must hold: every record in exactly one output, decisions equal to the
single-index processor's on a one-partition input, simultaneous copies on different
partitions caught, SIGKILLs of either role and a worker joining mid-stream change nothing.
"""

from __future__ import annotations

import json
import random
import signal
import time
from dataclasses import dataclass

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.bench.feeds import news_records
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.state.base import MemoryStore

from .kafka_helpers import (Topics, assert_same_decisions, committed_offsets, consume_all, decisions, logged, produce,
                            run_processor, stop_processors, wait_for)


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


@dataclass
class Staged(Topics):
    partitions: int = 1

    @property
    def fingerprints(self) -> str:
        return f"fp-{self.run_id}"

    @property
    def decisions(self) -> str:
        return f"dec-{self.run_id}"

    def create(self) -> None:
        super().create()
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = [NewTopic(self.fingerprints, 1, 1), NewTopic(self.decisions, self.partitions, 1)]
        for fut in admin.create_topics(new, request_timeout=30).values():
            fut.result(60)

    def staged_env(self) -> dict:
        return self.env(STREAMDEDUP_KAFKA__STAGED__FINGERPRINTS_TOPIC=self.fingerprints,
                        STREAMDEDUP_KAFKA__STAGED__DECISIONS_TOPIC=self.decisions, **SETTINGS)


#: the engine settings of every run here: compared runs must size their index alike (the
#: exact-digest table is sized from max_documents, and a collision there turns an exact copy
#: into a near-duplicate of the same original)
SETTINGS = {"STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]", "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "200000"}


def _decider(t: Staged, state: str, idle: float = 8.0, log=None):
    return run_processor(t.staged_env(), state, idle, log, ("--topology", "staged", "--role", "decider"))


def _worker(t: Staged, name: str, idle: float = 6.0, log=None):
    return run_processor(t.staged_env(), None, idle, log, ("--topology", "staged", "--role", "worker", "--instance", name))


def _decisions(out: list, topics: Topics) -> dict:
    return decisions(out, topics.outputs)


def _committed(t: Staged) -> int:
    return committed_offsets(t.bootstrap, f"group-{t.run_id}.workers", t.input)


def _exactly_once(got: list, n: int) -> None:
    keys = [k for _, k, _, _ in got]
    assert len(keys) == n and len(set(keys)) == n, f"{len(keys)} outputs, {len(set(keys))} distinct, of {n}: lost or doubled"


def test_staged_decisions_equal_the_single_index_processor(kafka_bootstrap, tmp_path) -> None:
    """One input partition: the fingerprints log is the input order, so every decision (status,
    duplicate_of, relation) equals the single-index processor's; malformed records too."""
    records = news_records(4000, seed=5) + [(b"bad-1", b"{not json"), (b"bad-2", b'{"id": "x", "text": 3}')]
    single, staged = Topics(kafka_bootstrap, partitions=1), Staged(kafka_bootstrap)
    for t in (single, staged):
        t.create()
        produce(kafka_bootstrap, t.input, records)
    ref = run_processor(single.env(**SETTINGS), str(tmp_path / "single"), 4)
    dec, work = _decider(staged, str(tmp_path / "decider")), _worker(staged, "w0")
    assert ref.wait(300) == 0 and work.wait(300) == 0 and dec.wait(300) == 0
    want = consume_all(kafka_bootstrap, list(single.outputs.values()), len(records))
    got = consume_all(kafka_bootstrap, list(staged.outputs.values()), len(records))
    _exactly_once(got, len(records))
    assert_same_decisions(_decisions(got, staged), _decisions(want, single))
    dead = {k: h for t, k, _, h in got if t == staged.outputs["dead_letter"]}
    dead_ref = {k: h for t, k, _, h in want if t == single.outputs["dead_letter"]}
    assert set(dead) == {b"bad-1", b"bad-2"}
    for k, h in dead.items():  # the same stage, reason and source as the single processor gives
        assert [h[f] for f in ("dedup.stage", "dedup.reason")] == [dead_ref[k][f] for f in ("dedup.stage", "dedup.reason")]
        assert h["dedup.source"].startswith(staged.input.encode())


def test_simultaneous_copies_on_two_partitions_are_caught(kafka_bootstrap, tmp_path) -> None:
    """100 stories, each sent at the same instant to partition 0 and (as a copy) to partition 1,
    two workers: each pair gives exactly one unique and one duplicate of the other."""
    t = Staged(kafka_bootstrap, partitions=2)
    t.create()
    log = tmp_path / "workers.log"
    dec = _decider(t, str(tmp_path / "decider"), idle=10)
    workers = [_worker(t, f"w{i}", idle=8, log=log) for i in range(2)]
    # both workers own a partition before the stream starts (a join later would only re-read)
    wait_for(lambda: logged(log, "assigned") and _assigned_both(log), 60, "two workers with a partition each")
    p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0, "enable.idempotence": True})
    for i, obj in enumerate(_distinct_stories(100)):
        for part, suffix in ((0, "a"), (1, "b")):
            p.produce(t.input, orjson.dumps({**obj, "id": f"pair{i}-{suffix}"}), f"pair{i}-{suffix}".encode(), partition=part)
        p.poll(0)
    assert p.flush(30) == 0
    assert all(w.wait(300) == 0 for w in workers) and dec.wait(300) == 0
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), 200)
    _exactly_once(got, 200)
    status = {k.decode(): (t_, h) for t_, k, _, h in got}
    for i in range(100):
        a, b = status[f"pair{i}-a"], status[f"pair{i}-b"]
        kinds = sorted(x[0] for x in (a, b))
        assert kinds == sorted([t.outputs["unique"], t.outputs["duplicate"]]), f"pair {i}: {kinds}"
        dup = a if a[0] == t.outputs["duplicate"] else b
        other = "b" if dup is a else "a"
        assert dup[1]["dedup.duplicate_of"] == f"pair{i}-{other}".encode()


def _distinct_stories(n: int) -> list[dict]:
    """``n`` Reuters stories none of which the engine calls a copy of another (the corpus has
    its own repeats, which would make a pair's copy match another pair)."""
    engine = Deduplicator(Config(), MemoryStore())
    stories = [s for s in load_reuters() if len(s.body) > 300][:3 * n]
    docs = [Document(f"s{i}", f"{s.title}\n{s.body}", 0) for i, s in enumerate(stories)]
    unique = [i for i, d in enumerate(engine.process(docs)) if d.status == "unique"]
    return [{"title": stories[i].title, "text": stories[i].body} for i in unique[:n]]


def _assigned_both(log) -> bool:
    lines = [json.loads(ln) for ln in log.read_text().splitlines() if ln.startswith("{")]
    return len({ln["msg"].split(":")[0] for ln in lines if "assigned" in ln["msg"]}) >= 2


def test_sigkill_of_each_role_changes_nothing(kafka_bootstrap, tmp_path) -> None:
    """A worker and the decider are each SIGKILLed at random moments of a 20k stream: the
    worker is restarted, the decider's standby (waiting on the state's lock) takes over and a
    new standby starts. Nothing lost or doubled, decisions equal to an uninterrupted run."""
    n = 20000
    records = news_records(n, seed=13)
    ref, crashy = Staged(kafka_bootstrap), Staged(kafka_bootstrap)
    for t in (ref, crashy):
        t.create()
        produce(kafka_bootstrap, t.input, records)
    whole = [_decider(ref, str(tmp_path / "ref")), _worker(ref, "w0")]
    rng = random.Random(4)
    state = str(tmp_path / "crashy")
    dec, work = _decider(crashy, state, idle=10), _worker(crashy, "w0")
    standby = _decider(crashy, state, idle=10)
    for victim, goal in (("worker", 0.2), ("decider", 0.45), ("worker", 0.65), ("decider", 0.8)):
        wait_for(lambda: _committed(crashy) >= goal * n, 300, f"{goal:.0%} committed before killing the {victim}",
                 proc=work)
        time.sleep(rng.uniform(0.0, 0.5))  # a random moment of the batch cycle, which is what the test is about
        proc = work if victim == "worker" else dec
        assert proc.poll() is None, f"the {victim} ended before its kill"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        if victim == "worker":
            work = _worker(crashy, "w0")
        else:
            dec, standby = standby, _decider(crashy, state, idle=10)
    assert work.wait(600) == 0 and dec.wait(600) == 0 and standby.wait(600) == 0
    assert all(p.wait(600) == 0 for p in whole)
    want = consume_all(kafka_bootstrap, list(ref.outputs.values()), n)
    got = consume_all(kafka_bootstrap, list(crashy.outputs.values()), n)
    _exactly_once(got, n)
    assert_same_decisions(_decisions(got, crashy), _decisions(want, ref))


def test_a_worker_joining_mid_stream_changes_nothing(kafka_bootstrap, tmp_path) -> None:
    """A second worker joins while the first is half way: the group rebalances (the partition
    may move), nothing is lost or doubled and the decisions equal the single-index processor's.
    One input partition, so that the order, and with it every decision, is fixed."""
    n = 20000
    records = news_records(n, seed=17)
    single, staged = Topics(kafka_bootstrap, partitions=1), Staged(kafka_bootstrap)
    for t in (single, staged):
        t.create()
        produce(kafka_bootstrap, t.input, records)
    ref = run_processor(single.env(**SETTINGS), str(tmp_path / "single"), 4)
    log = tmp_path / "workers.log"
    dec, first = _decider(staged, str(tmp_path / "decider"), idle=10), _worker(staged, "w0", log=log)
    wait_for(lambda: _committed(staged) >= n // 2, 300, "half the stream committed", proc=first)
    second = _worker(staged, "w1", log=log)
    wait_for(lambda: logged(log, "worker w1: assigned") or logged(log, "revoked"), 60, "a rebalance", proc=second)
    assert first.wait(600) == 0 and second.wait(600) == 0 and dec.wait(600) == 0 and ref.wait(600) == 0
    want = consume_all(kafka_bootstrap, list(single.outputs.values()), n)
    got = consume_all(kafka_bootstrap, list(staged.outputs.values()), n)
    _exactly_once(got, n)
    assert_same_decisions(_decisions(got, staged), _decisions(want, single))


def test_revisions_on_a_topic_of_their_own(kafka_bootstrap, tmp_path) -> None:
    """verify.revisions: topic: the worker sends a story's correction and the feed's other
    revisions to the revisions topic, nothing else goes there, nothing is lost or doubled."""
    revisions_on_their_topic(kafka_bootstrap, tmp_path, ("--topology", "staged", "--role", "worker", "--instance", "w0"))


def revisions_on_their_topic(kafka_bootstrap: str, tmp_path, worker: tuple[str, ...]) -> None:
    """A story's correction and the feed's other revisions through the decider and one ``worker``
    (its ``streamdedup run`` arguments) under verify.revisions: topic."""
    from .test_processor import _correction

    records = news_records(2000, seed=5)
    correction, (original, change) = _correction(records[:500])
    records.insert(600, correction)
    staged = Staged(kafka_bootstrap)
    staged.create()
    revisions_topic = f"revisions-{staged.run_id}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(revisions_topic, 1, 1)], request_timeout=30)[revisions_topic].result(60)
    produce(kafka_bootstrap, staged.input, records)
    env = {"STREAMDEDUP_VERIFY__REVISIONS": "topic", "STREAMDEDUP_KAFKA__REVISIONS_TOPIC": revisions_topic}
    dec = run_processor({**staged.staged_env(), **env}, str(tmp_path / "decider"), 8.0, None,
                        ("--topology", "staged", "--role", "decider"))
    work = run_processor({**staged.staged_env(), **env}, None, 6.0, None, worker)
    assert work.wait(300) == 0 and dec.wait(300) == 0
    outputs = {**staged.outputs, "revision": revisions_topic}
    got = consume_all(kafka_bootstrap, list(outputs.values()), len(records))
    values = [v for _, _, v, _ in got]  # not keys: the correction has its story's key
    assert len(values) == len(records) and len(set(values)) == len({v for _, v in records}), "lost or doubled"
    for topic, _, _, h in got:
        assert outputs[h["dedup.status"].decode()] == topic  # a revision on the revisions topic, and only a revision
    fixed = [(t, h) for t, _, v, h in got if v == correction[1]]
    assert fixed[0][0] == revisions_topic and fixed[0][1]["dedup.duplicate_of"] == original
    assert change in fixed[0][1]["dedup.changed"].split(b"; ")
    assert sum(t == revisions_topic for t, *_ in got) > 5
