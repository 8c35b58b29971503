"""The Kafka processor against a real broker: routing, external clients, bad input, crashes."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer

from streamdedup.bench.feeds import news_records

from .kafka_helpers import (Topics, assert_same_decisions, broker_data_dir, committed_offsets, consume_all, cpu_neighbour, decisions,
                            finish, free_ports, logged, produce, run_processor, start_broker, stop_broker, stop_processors, wait_for)

MALFORMED = [b"not json", b'{"id": "m", "text": 12}', b"\xff\xfe\xfa", b'{"id": "e", "text": "  "}', b"[1, 2]",
             b'{"id": "n"}', b'{"id": "p", "text": "?!?!"}', b'{"id": "big", "text": "' + b"w " * 60_000 + b'"}']


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _env(topics: Topics):
    return topics.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[title, text]", STREAMDEDUP_INPUT__MAX_RECORD_BYTES="100000",
                      STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000")


def _by_input(records: list) -> dict:
    out = {}
    for topic, key, value, headers in records:
        out.setdefault(value, []).append((topic, key, headers))
    return out


def _correction(records: list) -> tuple[tuple[bytes, bytes], tuple[bytes, bytes]]:
    """A story of the feed with a figure in it, and a correction of it (a new slug and the figure
    changed): the correction must reach the unique topic, tagged as a revision of the story."""
    for _, value in records:
        story = json.loads(value)
        words = story["text"].split()
        figure = next((w for w in words[20:] if w.isdigit() and len(w) >= 2), None)
        if story["title"] and figure:
            fixed = str(int(figure) + 7)
            corrected = {"id": "corrected", "title": "CORRECTED - " + story["title"],
                         "text": story["text"].replace(f" {figure} ", f" {fixed} ", 1)}
            # the story's key (a wire correction keeps its slug): the same partition, so it is read after the story
            return (story["id"].encode(), json.dumps(corrected).encode()), (story["id"].encode(), f"{figure} -> {fixed}".encode())
    raise AssertionError("no story with a figure in the feed")


def test_every_record_in_exactly_one_topic_with_headers(topics, tmp_path) -> None:
    records = news_records(2500)
    correction, (original, change) = _correction(records[:500])
    records.insert(600, correction)
    produce(topics.bootstrap, topics.input, records)
    proc = run_processor(_env(topics), str(tmp_path / "state"))
    assert proc.wait(300) == 0
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), len(records))
    assert len(out) == len(records)
    got = _by_input(out)
    assert all(len(v) == 1 for v in got.values()) and len(got) == len({v for _, v in records})
    by_topic = Counter(t for t, *_ in out)
    assert by_topic[topics.outputs["duplicate"]] > 200 and by_topic[topics.outputs["unique"]] > 1500
    unique_ids = {k.decode() for t, k, _, _ in out if t == topics.outputs["unique"]}
    for (key, value) in records:
        topic, out_key, headers = got[value][0]
        assert out_key == key  # key and value byte for byte
        status = headers["dedup.status"].decode()
        # a revision goes to the unique topic under the default verify.revisions
        assert topics.outputs["unique" if status == "revision" else status] == topic
        if status in ("duplicate", "revision"):
            assert headers["dedup.duplicate_of"].decode() in unique_ids
            assert headers["dedup.relation"] in (b"exact", b"near_duplicate", b"contained_in")
            assert 0.0 <= float(headers["dedup.similarity"]) <= 1.0
        assert bool(headers.get("dedup.changed")) == (status == "revision")
    topic, _, headers = got[correction[1]][0]
    assert topic == topics.outputs["unique"] and headers["dedup.status"] == b"revision", headers
    assert headers["dedup.duplicate_of"] == original and change in headers["dedup.changed"].split(b"; ")
    assert b"corrected" in headers["dedup.changed"].split(b"; ")
    assert sum(h["dedup.status"] == b"revision" for _, _, _, h in out) > 5  # the feed's updates and replaced sentences


def test_revisions_on_a_topic_of_their_own(topics, tmp_path) -> None:
    """verify.revisions: topic: the processor creates the revisions topic (kafka.create_topics),
    the correction and the feed's other revisions go there with their tags, nothing else does,
    and every record is in exactly one of the four outputs (the printed counts reconcile)."""
    records = news_records(2500)
    correction, (original, change) = _correction(records[:500])
    records.insert(600, correction)
    produce(topics.bootstrap, topics.input, records)
    revisions_topic = f"revisions-{topics.run_id}"
    env = _env(topics)
    env.update(STREAMDEDUP_VERIFY__REVISIONS="topic", STREAMDEDUP_KAFKA__REVISIONS_TOPIC=revisions_topic,
               STREAMDEDUP_KAFKA__CREATE_TOPICS="true")
    proc = run_processor(env, str(tmp_path / "state"), stdout=subprocess.PIPE)
    printed = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 0, printed
    outputs = {**topics.outputs, "revision": revisions_topic}
    out = consume_all(topics.bootstrap, list(outputs.values()), len(records))
    got = _by_input(out)
    assert len(out) == len(records) and all(len(v) == 1 for v in got.values()) and len(got) == len({v for _, v in records})
    by_topic = Counter(t for t, *_ in out)
    for topic, _, _, headers in out:
        status = headers["dedup.status"].decode()
        assert outputs[status] == topic  # a revision on the revisions topic, and only a revision
        assert bool(headers.get("dedup.changed")) == (status == "revision")
    topic, _, headers = got[correction[1]][0]
    assert topic == revisions_topic and headers["dedup.status"] == b"revision", headers
    assert headers["dedup.duplicate_of"] == original and change in headers["dedup.changed"].split(b"; ")
    assert b"corrected" in headers["dedup.changed"].split(b"; ") and headers["dedup.matched"]
    assert by_topic[revisions_topic] > 5  # the feed's updates and replaced sentences
    assert (f"unique {by_topic[topics.outputs['unique']]:,}, duplicates {by_topic[topics.outputs['duplicate']]:,}, "
            f"revisions {by_topic[revisions_topic]:,}, dead-letter {by_topic[topics.outputs['dead_letter']]:,}") in printed
    # the inspector's overview reads the revisions topic as an output of its own, and its totals
    # count it: they add up to the input
    from streamdedup.config import load_config
    from streamdedup.tools.inspection.kafka_source import KafkaDuplicates

    source = KafkaDuplicates(load_config(environ=env))
    try:
        recent = source.recent("revision", 10_000)
        assert len(recent.records) == by_topic[revisions_topic] and all(t.status == "revision" for _, t in recent.records)
        totals = source.totals()
        assert totals == {status: by_topic[topic] for status, topic in outputs.items()} and source.totals_exact
        assert sum(totals.values()) == len(records)
    finally:
        source.close()


def test_kcat_produces_input_and_reads_outputs(topics, tmp_path) -> None:
    kcat = shutil.which("kcat")
    assert kcat, "Debian's kcat is needed for this test (apt-get install kcat)"
    records = news_records(400, seed=3)
    feed = tmp_path / "feed.txt"
    feed.write_bytes(b"\n".join(k + b"\t" + v for k, v in records) + b"\n")
    subprocess.run([kcat, "-P", "-b", topics.bootstrap, "-t", topics.input, "-K", "\t", "-l", str(feed)], check=True, timeout=60)
    proc = run_processor(_env(topics), str(tmp_path / "state"))
    assert proc.wait(300) == 0
    counts = {}
    for name, topic in topics.outputs.items():
        res = subprocess.run([kcat, "-C", "-b", topics.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                              "-X", "isolation.level=read_committed", "-f", "%k %h\n"], capture_output=True, timeout=60, check=True)
        lines = [ln for ln in res.stdout.decode().splitlines() if ln.strip()]
        counts[name] = len(lines)
        # a revision is on the unique topic (verify.revisions: unique), with its own status
        statuses = ("unique", "revision") if name == "unique" else (name,)
        assert all(any(f"dedup.status={st}" in ln for st in statuses) for ln in lines), lines[:3]
    assert sum(counts.values()) == len(records)
    assert counts["duplicate"] > 0 and counts["unique"] > 0


def test_malformed_records_go_to_dead_letter_and_processing_goes_on(topics, tmp_path) -> None:
    good = news_records(1000, seed=5)
    rng = random.Random(9)
    bad = [(f"bad{k}".encode(), MALFORMED[k % len(MALFORMED)]) for k in range(1000)]
    mixed = good + bad
    rng.shuffle(mixed)
    produce(topics.bootstrap, topics.input, mixed, **{"message.max.bytes": 2_000_000})
    proc = run_processor(_env(topics), str(tmp_path / "state"))
    assert proc.wait(300) == 0
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), len(mixed))
    assert len(out) == len(mixed)
    dead = [(k, v, h) for t, k, v, h in out if t == topics.outputs["dead_letter"]]
    assert {k for k, _, _ in dead} >= {k for k, _ in bad}
    assert len(dead) == 1000 + sum(1 for t, k, v, h in out if t == topics.outputs["dead_letter"] and not k.startswith(b"bad"))
    reasons = Counter(h["dedup.stage"].decode() for _, _, h in dead)
    assert set(reasons) >= {"json", "fields", "utf8", "text", "size"}
    assert all(h["dedup.reason"] for _, _, h in dead)


def _committed(topics: Topics) -> int:
    """Input records whose batch the processor of ``topics`` has committed (offsets and outputs)."""
    return committed_offsets(topics.bootstrap, f"group-{topics.run_id}", topics.input)


def _done(log) -> dict:
    """The processor's closing log line (``done``, with its counts)."""
    lines = [json.loads(ln) for ln in log.read_text().splitlines() if ln.startswith("{")]
    return next(ln for ln in reversed(lines) if ln["msg"] == "done")


def _decisions(out: list, topics: Topics) -> dict:
    return decisions(out, topics.outputs)


def test_sigkill_at_random_moments_changes_nothing(kafka_bootstrap, tmp_path) -> None:
    """5 SIGKILLs during a 100k stream: nothing lost or doubled, the same decisions.

    One input partition: decisions depend on arrival order, and the interleaving of several
    partitions differs between any two runs, crash or not (see docs/guarantees.md, ordering).
    """
    n = int(os.environ.get("STREAMDEDUP_CRASH_RECORDS", "100000"))
    records = news_records(n, seed=11)
    reference, crashed = Topics(kafka_bootstrap, partitions=1), Topics(kafka_bootstrap, partitions=1)
    for t in (reference, crashed):
        t.create()
        produce(kafka_bootstrap, t.input, records)
    whole = run_processor(_env(reference), str(tmp_path / "ref"), stop_when_idle=5)
    rng = random.Random(2)
    # Each kill waits until the stream has passed a random point (committed offsets, polled),
    # so the five kills are spread over the stream and each incarnation makes progress first.
    targets = sorted(int(rng.uniform(0.05, 0.8) * n) for _ in range(5))
    kills, killed_after = 0, []
    state = str(tmp_path / "crashy")
    while True:
        start = _committed(crashed)
        proc = run_processor(_env(crashed), state, stop_when_idle=5)
        if kills < 5:
            goal = max(targets[kills], start + 1)
            wait_for(lambda: _committed(crashed) >= goal, 300, f"committed offsets >= {goal} before kill {kills + 1}",
                     proc=proc)
            # Not a wait for anything: a random moment of the batch cycle (consume, decide,
            # state commit, transaction), which is what the test is about.
            time.sleep(rng.uniform(0.0, 0.6))
            assert proc.poll() is None, f"the processor ended before kill {kills + 1}"
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            killed_after.append(_committed(crashed))
            kills += 1
            continue
        assert proc.wait(600) == 0
        break
    assert kills == 5
    print(f"SIGKILLs after {killed_after} of {n} input records were committed")
    assert whole.wait(600) == 0
    ref = consume_all(kafka_bootstrap, list(reference.outputs.values()), n)
    got = consume_all(kafka_bootstrap, list(crashed.outputs.values()), n)
    assert len(ref) == n
    keys = [k for _, k, _, _ in got]
    assert len(keys) == n and len(set(keys)) == n, "records lost or emitted twice"
    assert_same_decisions(_decisions(got, crashed), _decisions(ref, reference))


def test_broker_restart_mid_stream(tmp_path) -> None:
    """The broker goes away and comes back while the processor runs; it recovers by itself.

    A broker of its own (other ports), so the shared one stays up for the other tests. Half
    the records are produced before the restart and half after, so the processor must both
    finish its in-flight work and keep consuming afterwards. A CPU-bound neighbour runs the whole
    time: on a loaded machine a transaction's commit can time out while the broker is away, and
    the processor must replay the batch, never exit.
    """
    port, cport = free_ports(2)  # a second run on this machine gets other ports
    bootstrap = start_broker(port, cport)
    with cpu_neighbour():
        try:
            t = Topics(bootstrap)
            t.create()
            n = 20000
            records = news_records(n, seed=13)
            produce(bootstrap, t.input, records[: n // 2])
            log = tmp_path / "processor.log"
            proc = run_processor(_env(t), str(tmp_path / "state"), stop_when_idle=30, log=log)
            wait_for(lambda: _committed(t) > 0, 120, "the processor's first committed batch", proc=proc)
            data = broker_data_dir(port)
            stop_broker(port, keep_data=True)  # returns once the broker's process has exited
            # The outage itself, not a wait for anything: how long the broker stays away is what the
            # test sets (and the restart below adds the broker's start-up time to it). Nothing the
            # processor does can be polled for instead: librdkafka's log lines reach our logger only
            # when the client is polled, and a client call waiting on the broker holds them back.
            time.sleep(3)
            assert proc.poll() is None, "processor died with the broker"
            start_broker(port, cport, data_dir=data)
            produce(bootstrap, t.input, records[n // 2:])
            assert proc.wait(600) == 0, "processor did not recover by itself"
            out = consume_all(bootstrap, list(t.outputs.values()), n)
            keys = [k for _, k, _, _ in out]
            assert len(keys) == n and len(set(keys)) == n
        finally:
            stop_broker(port)


@pytest.mark.parametrize("delivery", ["at_least_once"])
def test_at_least_once_delivers_everything(topics, tmp_path, delivery: str) -> None:
    records = news_records(800, seed=17)
    produce(topics.bootstrap, topics.input, records)
    proc = run_processor({**_env(topics), "STREAMDEDUP_KAFKA__DELIVERY": delivery}, str(tmp_path / "state"))
    assert proc.wait(300) == 0
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), len(records))
    assert {k for _, k, _, _ in out} == {k for k, _ in records}


def test_a_decided_batch_goes_out_without_waiting_for_the_next_one_to_fill(topics, tmp_path) -> None:
    """Batches of one record and a 4 s linger: a record's batch is consumed at once, and its
    transaction must not wait for the next batch to fill (a full linger with nothing more to
    read). Each record is visible well within the linger."""
    linger_s = 4.0
    env = _env(topics) | {"STREAMDEDUP_KAFKA__LINGER_MS": str(int(linger_s * 1000)), "STREAMDEDUP_ENGINE__BATCH_SIZE": "1"}
    proc = run_processor(env, str(tmp_path / "state"), stop_when_idle=60)
    reader = Consumer({"bootstrap.servers": topics.bootstrap, "group.id": f"read-{topics.run_id}",
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
    reader.subscribe(list(topics.outputs.values()))

    def visible(key: bytes, timeout: float) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if any(m.error() is None and m.key() == key for m in reader.consume(10, 0.05)):
                return time.monotonic() - start
        raise AssertionError(f"{key!r} not visible after {timeout} s")

    # one producer, started before the records are timed (its own start-up takes ~0.5 s)
    sender = Producer({"bootstrap.servers": topics.bootstrap, "linger.ms": 0, "enable.idempotence": True})
    try:
        first, *rest = news_records(4, seed=5)
        sender.produce(topics.input, value=first[1], key=first[0])
        sender.flush(60)
        visible(first[0], 180)  # start-up, group joins, the first transaction
        took = []
        for key, value in rest:
            sender.produce(topics.input, value=value, key=key)
            took.append(visible(key, 30))
        # waiting for the next batch would take the whole linger each time
        assert max(took) < linger_s / 2, took
    finally:
        reader.close()
    assert finish(proc) == 0


def test_sigterm_finishes_the_batch_and_exits_cleanly(topics, tmp_path) -> None:
    n = 30000
    records = news_records(n, seed=23)
    produce(topics.bootstrap, topics.input, records)
    log = tmp_path / "processor.log"
    proc = run_processor(_env(topics), str(tmp_path / "state"), stop_when_idle=20, log=log)
    wait_for(lambda: _committed(topics) > 0, 120, "the processor's first committed batch", proc=proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert 0 < _done(log)["records"] < n, "SIGTERM did not cut the stream short"
    rest = run_processor(_env(topics), str(tmp_path / "state"))
    assert rest.wait(300) == 0
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), n)
    keys = [k for _, k, _, _ in out]
    assert len(keys) == n and len(set(keys)) == n


def test_standby_takes_over_when_the_owner_dies(topics, tmp_path) -> None:
    """A second instance on the same state waits; when the owner is killed it continues."""
    n = 30000
    records = news_records(n, seed=29)
    produce(topics.bootstrap, topics.input, records[: n // 2])
    state = str(tmp_path / "state")
    owner_log, standby_log = tmp_path / "owner.log", tmp_path / "standby.log"
    owner = run_processor(_env(topics), state, stop_when_idle=30, log=owner_log)
    wait_for(lambda: _committed(topics) > 0, 120, "the owner's first committed batch", proc=owner)
    standby = run_processor(_env(topics), state, stop_when_idle=10, log=standby_log)
    wait_for(lambda: logged(standby_log, "waiting to take over"), 60, "the standby to find the state owned",
             proc=standby)
    assert standby.poll() is None, "standby must wait for the state lock, not fail"
    owner.send_signal(signal.SIGKILL)
    owner.wait(30)
    killed_at = time.monotonic()
    produce(topics.bootstrap, topics.input, records[n // 2:])
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), n, timeout=180, to_end=False)
    failover_s = time.monotonic() - killed_at
    assert standby.wait(300) == 0
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), n)
    keys = [k for _, k, _, _ in out]
    assert len(keys) == n and len(set(keys)) == n
    print(f"failover: all {n} records visible {failover_s:.1f} s after the owner was killed")


def test_a_headline_body_feed_runs_on_an_empty_kernel_cache(topics, tmp_path) -> None:
    """The first run of the most common feed shape (no ``text`` field) on a new machine: the
    kernel cache fills with samples of this shape and the records are decided (it crashed on
    an empty batch when the samples had only a ``text`` field)."""
    body = "the central bank left its key interest rate unchanged on thursday, as expected by analysts"
    values = [json.dumps({"id": "a", "headline": "Rates unchanged", "body": body}).encode(),
              json.dumps({"id": "b", "headline": "Rates unchanged", "body": body}).encode(),
              json.dumps({"id": "c", "headline": "Harvest", "body": "farmers brought in a record wheat harvest this year"}).encode(),
              b"not json"]
    produce(topics.bootstrap, topics.input, [(None, v) for v in values])
    env = {k: v for k, v in topics.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[headline, body]").items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    proc = run_processor(env, str(tmp_path / "state"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    said, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    # the totals on stdout, for the person who started it (the JSON log line is on stderr)
    assert "4 records in " in said.decode() and "unique 2, duplicates 1, dead-letter 1" in said.decode(), said.decode()
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), len(values))
    statuses = sorted(h["dedup.status"].decode() for *_, h in out)
    assert statuses == ["dead_letter", "duplicate", "unique", "unique"], statuses
