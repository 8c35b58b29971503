"""A poison record must never stop the pipeline, on the real broker.

A record inside ``input.max_record_bytes`` whose output cannot be produced (over the
producer's ``message.max.bytes``, over a topic's ``max.message.bytes``, or refused by the
broker after that limit was lowered at run time) goes to dead letter, whole or truncated; the
records behind it flow, every record is in exactly one output, and the processor stops when
idle instead of dying or looping on it.
"""

from __future__ import annotations

import time
import uuid

import orjson
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from streamdedup.bench.feeds import news_records
from streamdedup.runtime.kafka.oversize import TRUNCATED_PREFIX_BYTES

from .kafka_helpers import Topics, consume_all, produce, run_processor

#: the input topic takes records up to 2 MB and so does the test's producer (the processor's
#: defaults are what is under test)
BIG = {"message.max.bytes": 2_000_000}


def story(key: str, size: int) -> bytes:
    """A JSON story of exactly ``size`` bytes, words of its own."""
    head = orjson.dumps({"id": key, "text": ""})[:-3]
    n = size - len(head) - 3
    words = " ".join(f"{key}w{i}" for i in range(n // 6 + 1))
    out = head + orjson.dumps(words[:n].ljust(n, "x")) + b"}"
    assert len(out) == size
    return out


def create(t: Topics, configs: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    names = [t.input, *t.outputs.values()]
    futures = admin.create_topics([NewTopic(n, t.partitions, 1, config=configs.get(n, {})) for n in names],
                                  request_timeout=30)
    for fut in futures.values():
        fut.result(60)


def env(t: Topics, **extra: str) -> dict:
    # the size settings stay at their defaults; a smaller index keeps the start-up short
    return t.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[title, text]", STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000", **extra)


def by_key(out: list) -> dict:
    got: dict = {}
    for topic, key, value, headers in out:
        assert key not in got, f"{key!r} emitted twice"
        got[key] = (topic, value, headers)
    return got


def read_at(bootstrap: str, source: bytes) -> bytes:
    """The input record at a dead letter's ``dedup.source`` (topic:partition:offset)."""
    topic, partition, offset = source.decode().rsplit(":", 2)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"at-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, int(partition), int(offset))])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                return m.value()
        raise AssertionError(f"nothing at {source!r}")
    finally:
        c.close()


def check_all_out(t: Topics, records: list, proc, log) -> dict:
    assert proc.wait(600) == 0, log.read_text()[-3000:]
    got = by_key(consume_all(t.bootstrap, list(t.outputs.values()), len(records)))
    assert set(got) == {k for k, _ in records}, "records lost"
    return got


def test_a_record_at_the_input_limit_with_default_settings(topics, tmp_path) -> None:
    """999,000 bytes fit the default 1,000,000 with their tags (unique, byte for byte);
    999,990 bytes do not, not even as a dead letter: a truncated dead letter with the
    position, the size and the reason; the records behind both flow."""
    news = news_records(600, seed=21)
    fits, near = story("fits", 999_000), story("near", 999_990)
    records = news[:200] + [(b"fits", fits)] + news[200:400] + [(b"near", near)] + news[400:]
    produce(topics.bootstrap, topics.input, records, **BIG)
    log = tmp_path / "processor.log"
    with log.open("w") as err:
        proc = run_processor(env(topics), str(tmp_path / "state"), stderr=err)
        got = check_all_out(topics, records, proc, log)
    topic, value, _ = got[b"fits"]
    assert topic == topics.outputs["unique"] and value == fits
    topic, value, h = got[b"near"]
    assert topic == topics.outputs["dead_letter"] and value == near[:TRUNCATED_PREFIX_BYTES]
    assert h["dedup.stage"] == b"output" and h["dedup.original_bytes"] == b"999990"
    reason = h["dedup.reason"].decode()
    assert "message.max.bytes (1,000,000)" in reason and "truncated" in reason, reason
    assert read_at(topics.bootstrap, h["dedup.source"]) == near  # the position finds the original
    flowed = [k for k, _ in news[400:]]
    assert all(got[k][0] in (topics.outputs["unique"], topics.outputs["duplicate"]) for k in flowed)


def test_a_record_over_the_unique_topics_limit(kafka_bootstrap, tmp_path) -> None:
    """The unique topic takes 100 KB (read at start-up): a 200 KB story goes to dead letter
    whole, with the reason; small stories still reach it (the producer's batches fit)."""
    t = Topics(kafka_bootstrap)
    create(t, {t.outputs["unique"]: {"max.message.bytes": "100000"}})
    news = news_records(1500, seed=22)
    big = story("big", 200_000)
    records = news[:700] + [(b"big", big)] + news[700:]
    produce(kafka_bootstrap, t.input, records, **BIG)
    log = tmp_path / "processor.log"
    with log.open("w") as err:
        proc = run_processor(env(t), str(tmp_path / "state"), stderr=err)
        got = check_all_out(t, records, proc, log)
    topic, value, h = got[b"big"]
    assert topic == t.outputs["dead_letter"] and value == big and "dedup.original_bytes" not in h
    reason = h["dedup.reason"].decode()
    assert f"over max.message.bytes of topic {t.outputs['unique']} (100,000)" in reason, reason
    assert sum(1 for v in got.values() if v[0] == t.outputs["unique"]) > 700
    assert "transaction aborted" not in log.read_text()  # decided locally: nothing refused


def wait_for(bootstrap: str, topic: str, key: bytes, timeout: float = 120.0) -> dict:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                if m.error() is None and m.key() == key:
                    return dict(m.headers() or [])
        raise AssertionError(f"{key!r} never reached {topic}")
    finally:
        c.close()


def lower_limit(bootstrap: str, topic: str, limit: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("max.message.bytes", str(limit), incremental_operation=AlterConfigOpType.SET)
    for fut in admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])]).values():
        fut.result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        res = ConfigResource(ResourceType.TOPIC, topic)
        if admin.describe_configs([res])[res].result(30)["max.message.bytes"].value == str(limit):
            return
        time.sleep(0.2)
    raise AssertionError("the topic's limit did not change")


def test_a_limit_lowered_at_run_time_is_refused_by_the_broker_then_dead_lettered(kafka_bootstrap, tmp_path) -> None:
    """The processor read the default limits; then the unique topic's drops to 100 KB. The
    broker refuses the 200 KB story in its delivery report: the transaction is aborted, the
    replay sends its dead letter, and the stream goes on (no loop: a few aborts, then idle)."""
    t = Topics(kafka_bootstrap)
    t.create()
    news = news_records(900, seed=23)
    first, rest = news[:300], news[300:]
    big = story("late", 200_000)
    produce(kafka_bootstrap, t.input, first)
    log = tmp_path / "processor.log"
    with log.open("w") as err:
        proc = run_processor(env(t), str(tmp_path / "state"), stop_when_idle=15, stderr=err)
        wait_for(kafka_bootstrap, t.outputs["unique"], first[-1][0])  # running, with the default limits
        lower_limit(kafka_bootstrap, t.outputs["unique"], 100_000)
        produce(kafka_bootstrap, t.input, [(b"late", big)], **BIG)
        h = wait_for(kafka_bootstrap, t.outputs["dead_letter"], b"late")
        produce(kafka_bootstrap, t.input, rest)
        records = first + [(b"late", big)] + rest
        got = check_all_out(t, records, proc, log)
    topic, value, h = got[b"late"]
    assert topic == t.outputs["dead_letter"] and value == big
    reason = h["dedup.reason"].decode()
    # the refusal makes the guard re-read the limits: when the broker already serves the new one,
    # the replay screens the record by it; when not yet, by the refusal it remembers (either
    # way it was refused once, its transaction aborted, and it goes to dead letter on the replay)
    assert ("the broker refused it" in reason and "MSG_SIZE_TOO_LARGE" in reason) or \
        ("over max.message.bytes" in reason and "(100,000)" in reason), reason
    aborts = log.read_text().count("transaction aborted")
    assert 1 <= aborts <= 3, log.read_text()[-3000:]
    assert all(got[k][0] != t.outputs["dead_letter"] for k, _ in rest)
