"""The faust topology (the staged worker as a faust agent + the staged decider) on a real broker.

What must hold: records routed unchanged with the same tags as the single-index
processor, malformed records in dead-letter with their reasons, copies on different partitions
read by different faust workers caught, and SIGKILLs of the faust worker measured against an
uninterrupted run.
"""

from __future__ import annotations

import random
import signal
import threading
import time

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamdedup.bench.feeds import news_records

from .kafka_helpers import (Topics, assert_same_decisions, committed_offsets, consume_all, finish, logged, produce,
                            run_processor, stop_processors, wait_for)
from .test_staged import SETTINGS, Staged, _decider, _decisions, _distinct_stories, revisions_on_their_topic

pytest.importorskip("faust", reason="the faust extra (make test installs it)")


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _faust(t: Staged, idle: float = 6.0, log=None):
    return run_processor(t.staged_env(), None, idle, log, ("--topology", "faust"))


def _group(t: Staged) -> str:
    return f"group-{t.run_id}.faust"


def _counts(got: list, n: int) -> tuple[int, int]:
    """(lost, doubled) among ``n`` records with distinct keys."""
    keys = [k for _, k, _, _ in got]
    return n - len(set(keys)), len(keys) - len(set(keys))


def test_faust_decisions_and_tags_equal_the_single_index_processor(kafka_bootstrap, tmp_path) -> None:
    """One input partition: every decision (status, duplicate_of, relation) equals the single
    processor's; values, keys and the records' own headers pass through unchanged, a spoofed
    ``dedup.status`` becomes ``dedup.upstream.status``; malformed records go to dead-letter with
    the single processor's stage and reason."""
    records = news_records(3000, seed=5) + [(b"bad-1", b"{not json"), (b"bad-2", b'{"id": "x", "text": 3}')]
    single, staged = Topics(kafka_bootstrap, partitions=1), Staged(kafka_bootstrap)
    headers = [("trace", b"t-%d" % i) if i % 3 else ("dedup.status", b"unique") for i in range(len(records))]
    for t in (single, staged):
        t.create()
        p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20, "enable.idempotence": True})
        for (key, value), h in zip(records, headers):
            p.produce(t.input, value, key, headers=[h])
            p.poll(0)
        assert p.flush(60) == 0
    ref = run_processor(single.env(**SETTINGS), str(tmp_path / "single"), 4)
    dec, work = _decider(staged, str(tmp_path / "decider")), _faust(staged)
    assert ref.wait(300) == 0 and work.wait(300) == 0 and dec.wait(300) == 0
    want = consume_all(kafka_bootstrap, list(single.outputs.values()), len(records))
    got = consume_all(kafka_bootstrap, list(staged.outputs.values()), len(records))
    assert _counts(got, len(records)) == (0, 0)
    assert_same_decisions(_decisions(got, staged), _decisions(want, single))
    sent = {k: (v, h) for (k, v), h in zip(records, headers)}
    for _, key, value, h in got:
        v, (name, hv) = sent[key]
        assert value == v
        assert h.get("dedup.upstream.status" if name == "dedup.status" else name) == hv
    tags = {k: h for _, k, _, h in want}
    for _, key, _, h in got:  # the same tags, header by header, as the single processor wrote
        ours = {n: v for n, v in h.items() if n.startswith("dedup.") and not n.startswith("dedup.upstream.")}
        ref_tags = {n: v for n, v in tags[key].items() if n.startswith("dedup.") and not n.startswith("dedup.upstream.")}
        for name in ("dedup.original", "dedup.matched_source", "dedup.source"):  # positions name each run's own topic
            ours.pop(name, None), ref_tags.pop(name, None)
        assert ours == ref_tags, key
    dead = {k: h for t, k, _, h in got if t == staged.outputs["dead_letter"]}
    assert set(dead) == {b"bad-1", b"bad-2"}
    assert all(h["dedup.source"].startswith(staged.input.encode()) and h["dedup.reason"] for h in dead.values())


def test_revisions_on_a_topic_of_their_own(kafka_bootstrap, tmp_path) -> None:
    """verify.revisions: topic: the faust agent sends a story's correction and the feed's other
    revisions to the revisions topic, in its transactions; nothing else goes there, nothing is
    lost or doubled."""
    revisions_on_their_topic(kafka_bootstrap, tmp_path, ("--topology", "faust"))


def test_copies_on_two_partitions_read_by_two_faust_workers_are_caught(kafka_bootstrap, tmp_path) -> None:
    """100 stories, each sent at the same instant to partition 0 and (as a copy) to partition 1,
    each partition read by its own faust worker: each pair gives one unique and one duplicate
    of the other (a per-partition faust Table would call both unique)."""
    t = Staged(kafka_bootstrap, partitions=2)
    t.create()
    dec = _decider(t, str(tmp_path / "decider"), idle=12)
    workers = [_faust(t, idle=8) for _ in range(2)]
    wait_for(lambda: _members_with_partitions(kafka_bootstrap, _group(t)) == 2, 90,
             "two faust workers owning a partition each", proc=workers[0])
    p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0, "enable.idempotence": True})
    for i, obj in enumerate(_distinct_stories(100)):
        for part, suffix in ((0, "a"), (1, "b")):
            p.produce(t.input, orjson.dumps({**obj, "id": f"pair{i}-{suffix}"}), f"pair{i}-{suffix}".encode(), partition=part)
        p.poll(0)
    assert p.flush(30) == 0
    assert all(w.wait(300) == 0 for w in workers) and dec.wait(300) == 0
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), 200)
    assert _counts(got, 200) == (0, 0)
    status = {k.decode(): (t_, h) for t_, k, _, h in got}
    for i in range(100):
        a, b = status[f"pair{i}-a"], status[f"pair{i}-b"]
        assert sorted(x[0] for x in (a, b)) == sorted([t.outputs["unique"], t.outputs["duplicate"]]), f"pair {i}"
        dup, other = (a, "b") if a[0] == t.outputs["duplicate"] else (b, "a")
        assert dup[1]["dedup.duplicate_of"] == f"pair{i}-{other}".encode()


def _members_with_partitions(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    except Exception:  # noqa: BLE001 - not there yet: polled again
        return 0
    return sum(1 for m in desc.members if m.assignment and m.assignment.topic_partitions)


def test_sigkill_of_the_faust_worker_changes_nothing(kafka_bootstrap, tmp_path) -> None:
    """The faust worker is SIGKILLed at 3 random moments of a 12k stream fed at ~1,500 records/s
    and restarted, each kill while records are left to emit (the worker commits a transaction
    per batch and keeps batches in flight, so a kill finds fingerprints sent and outputs
    unsent or in an open transaction): read_committed outputs compared with an uninterrupted
    run, lost and doubled counted."""
    n = 12000
    records = news_records(n, seed=13)
    ref, crashy = Staged(kafka_bootstrap), Staged(kafka_bootstrap)
    for t in (ref, crashy):
        t.create()
    produce(kafka_bootstrap, ref.input, records)
    whole = [_decider(ref, str(tmp_path / "ref"), idle=10), _faust(ref)]
    rng = random.Random(4)
    log = tmp_path / "faust.log"
    # the decider outlives the gaps while a restarted worker rejoins (up to the 10 s session)
    dec, work = _decider(crashy, str(tmp_path / "crashy"), idle=30), _faust(crashy, log=log)
    wait_for(lambda: logged(log, "faust stage: started"), 120, "the faust worker started", proc=work)
    feeder = threading.Thread(target=_feed, args=(kafka_bootstrap, crashy.input, records, 1500))
    feeder.start()
    try:
        # a restarted worker joins after the killed one's session (10 s), when the 8 s feed is over,
        # and catches up at ~8k/s, one transaction covering every batch in flight (on a loaded
        # machine the rest of the stream): waiting for its commits found the stream all committed.
        # So the first kill comes at 10% committed, amid the feed's transactions, and each later
        # one soon after the restarted worker claims the partition, its fingerprints sent and
        # nothing of its own committed yet
        for kill in range(3):
            if kill == 0:
                wait_for(lambda: committed_offsets(kafka_bootstrap, _group(crashy), crashy.input) >= 0.1 * n, 300,
                         "10% committed before the first kill", proc=work)
                time.sleep(rng.uniform(0.0, 0.2))  # a random moment of the batch cycle
            else:
                wait_for(lambda: log.read_bytes().count(b"claimed in generation") > kill, 300,
                         f"the restarted worker's claim (after kill {kill})", proc=work)
                time.sleep(rng.uniform(0.2, 0.6))
            assert work.poll() is None, "the faust worker ended before its kill"
            assert committed_offsets(kafka_bootstrap, _group(crashy), crashy.input) < n, "nothing left to kill"
            work.send_signal(signal.SIGKILL)
            work.wait(30)
            work = _faust(crashy, log=log)
    finally:
        feeder.join()
    # the worker stops once it has emitted everything; the decider, idle since, is not waited out
    assert work.wait(600) == 0 and finish(dec) == 0 and all(p.wait(600) == 0 for p in whole)
    want = consume_all(kafka_bootstrap, list(ref.outputs.values()), n)
    got = consume_all(kafka_bootstrap, list(crashy.outputs.values()), n)
    lost, doubled = _counts(got, n)
    print(f"faust kill test: {len(got)} outputs for {n} records: lost {lost}, doubled {doubled}")
    assert (lost, doubled) == (0, 0), f"lost {lost}, doubled {doubled} of {n}"
    assert_same_decisions(_decisions(got, crashy), _decisions(want, ref))


def test_a_faust_worker_joining_then_leaving_mid_stream_changes_nothing(kafka_bootstrap, tmp_path) -> None:
    """Two input partitions, one faust worker; while 9,000 records arrive at ~300/s a second
    worker joins (a rebalance hands it a partition) and later stops (the partition comes back):
    every record comes out once (read_committed), none lost, none doubled."""
    n = 9000
    t = Staged(kafka_bootstrap, partitions=2)
    t.create()
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    dec, first = _decider(t, str(tmp_path / "decider"), idle=30), _faust(t, idle=10, log=first_log)
    wait_for(lambda: logged(first_log, "faust stage: started"), 120, "the first faust worker started", proc=first)
    feeder = threading.Thread(target=_feed, args=(kafka_bootstrap, t.input, news_records(n, seed=21), 300))
    feeder.start()
    try:
        wait_for(lambda: committed_offsets(kafka_bootstrap, _group(t), t.input) >= 0.1 * n, 120,
                 "10% committed by the first worker", proc=first)
        second = _faust(t, idle=600, log=second_log)
        wait_for(lambda: _members_with_partitions(kafka_bootstrap, _group(t)) == 2, 120,
                 "two faust workers owning a partition each", proc=second)
        joined = committed_offsets(kafka_bootstrap, _group(t), t.input)
        wait_for(lambda: logged(second_log, "claimed in generation") and
                 committed_offsets(kafka_bootstrap, _group(t), t.input) >= joined + 0.1 * n, 120,
                 "the second worker emitting", proc=second)
        assert feeder.is_alive(), "the stream ended before the second worker left: feed more slowly"
        second.send_signal(signal.SIGTERM)
        assert second.wait(120) == 0
        done = [orjson.loads(line) for line in second_log.read_bytes().splitlines() if b'"msg": "done"' in line]
        assert done and done[-1]["records"] > 0, "the second worker emitted nothing"
    finally:
        feeder.join()
    assert first.wait(600) == 0 and finish(dec) == 0
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), n)
    lost, doubled = _counts(got, n)
    print(f"faust rebalance test: {len(got)} outputs for {n} records: lost {lost}, doubled {doubled}")
    assert (lost, doubled) == (0, 0), f"lost {lost}, doubled {doubled} of {n}"


def test_more_faust_workers_than_partitions_a_standby_takes_over_a_killed_owner(kafka_bootstrap, tmp_path) -> None:
    """One input partition, two faust workers (one owns it, one waits); the owner is SIGKILLed
    while 6,000 records arrive at ~600/s and the waiting worker takes the partition over after
    the session timeout: every record comes out once, none lost, none doubled."""
    n = 6000
    t = Staged(kafka_bootstrap, partitions=1)
    t.create()
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    dec = _decider(t, str(tmp_path / "decider"), idle=30)
    workers = [_faust(t, idle=600, log=log) for log in logs]
    for w, log in zip(workers, logs):
        wait_for(lambda: logged(log, "faust stage: started"), 120, "both faust workers started", proc=w)
    wait_for(lambda: _members(kafka_bootstrap, _group(t)) == 2, 120, "two members in the faust group", proc=workers[0])
    feeder = threading.Thread(target=_feed, args=(kafka_bootstrap, t.input, news_records(n, seed=8), 600))
    feeder.start()
    try:
        wait_for(lambda: committed_offsets(kafka_bootstrap, _group(t), t.input) >= 0.2 * n, 120, "20% committed")
        owner = next(i for i, log in enumerate(logs) if logged(log, "claimed in generation"))
        workers[owner].send_signal(signal.SIGKILL)
        workers[owner].wait(30)
        standby = workers[1 - owner]
        wait_for(lambda: logged(logs[1 - owner], "claimed in generation"), 120, "the standby took over", proc=standby)
    finally:
        feeder.join()
    wait_for(lambda: committed_offsets(kafka_bootstrap, _group(t), t.input) >= n, 300, "all committed", proc=standby)
    standby.send_signal(signal.SIGTERM)
    assert standby.wait(120) == 0 and finish(dec) == 0
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), n)
    lost, doubled = _counts(got, n)
    print(f"faust standby test: {len(got)} outputs for {n} records: lost {lost}, doubled {doubled}")
    assert (lost, doubled) == (0, 0), f"lost {lost}, doubled {doubled} of {n}"


def _members(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return len(admin.describe_consumer_groups([group], request_timeout=10)[group].result(15).members)
    except Exception:  # noqa: BLE001 - not there yet: polled again
        return 0


def _feed(bootstrap: str, topic: str, records: list, rate: float) -> None:
    """``records`` to ``topic`` at about ``rate`` per second, in order."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    t0, step = time.perf_counter(), 100
    for i in range(0, len(records), step):
        while (wait := t0 + i / rate - time.perf_counter()) > 0:
            time.sleep(wait)
        for key, value in records[i:i + step]:
            p.produce(topic, value, key)
        p.poll(0)
    assert p.flush(60) == 0
