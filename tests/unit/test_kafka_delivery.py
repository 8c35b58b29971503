"""The Kafka processor's exactly-once state machine, driven in-process by a fake client.

Each case runs the real processor loop, pipeline, engine and RocksDB state against
``fake_kafka`` with a fault injected, and compares what a read_committed reader sees with an
uninterrupted run: nothing lost, nothing doubled, the same decisions. (The same properties are
tested against the real broker with SIGKILLs in tests/integration.)
"""

from __future__ import annotations

import random
import threading

import orjson
import pytest
from confluent_kafka import KafkaError

from streamdedup import StreamdedupError, load_config
from streamdedup.runtime.kafka.oversize import TRUNCATED_PREFIX_BYTES
from streamdedup.runtime.kafka.batch import KafkaPipeline
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.single.processor import Processor
from streamdedup.runtime.kafka.supervisor import ConsumerFatal, Watchdog
from streamdedup.pipeline.tags import UNIQUE_HEADERS, parse_headers

from .fake_kafka import Admin, Broker, Consumer, Crash, Producer, Rec, kafka_error

TOPICS = {"unique": "out.unique", "duplicate": "out.dups", "dead_letter": "out.dead"}
WORDS = [f"w{i}" for i in range(3000)]


def feed(n: int = 600, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Stories, resends and edited copies of earlier ones, and a few broken records."""
    rng = random.Random(seed)
    out, stories = [], []
    for i in range(n):
        if stories and rng.random() < 0.3:
            words = list(rng.choice(stories))
            if rng.random() < 0.5:
                words[rng.randrange(len(words))] = "edited"
            text = " ".join(words)
        elif rng.random() < 0.03:
            out.append((f"k{i}".encode(), rng.choice([b"{not json", b'{"id": "x", "text": 7}', b""])))
            continue
        else:
            words = [rng.choice(WORDS) for _ in range(rng.randint(60, 160))]
            stories.append(words)
            text = " ".join(words)
        out.append((f"k{i}".encode(), orjson.dumps({"id": f"doc-{i}", "text": text})))
    return out


def config(**extra: str):
    env = {"STREAMDEDUP_ENGINE__BATCH_SIZE": "32", "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "4096",
           "STREAMDEDUP_KAFKA__INPUT_TOPICS": "[in]", "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": TOPICS["unique"],
           "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": TOPICS["duplicate"], "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": TOPICS["dead_letter"],
           "STREAMDEDUP_KAFKA__LINGER_MS": "0", "STREAMDEDUP_STATE__SYNC": "false", **extra}
    return load_config(environ=env)


def broker(records) -> Broker:
    b = Broker()
    for t in ["in", *TOPICS.values()]:
        b.create(t)
    b.append("in", records)
    return b


def run(b: Broker, state: str, delivery: str = "exactly_once", **env: str):
    cfg = config(**env)
    cfg = cfg.model_copy(update={"kafka": cfg.kafka.model_copy(update={"delivery": delivery})})
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    return Processor(cfg, state, stop_when_idle=0.05, clients=clients, watchdog=False).run()


def decisions(b: Broker) -> dict:
    inv = {v: k for k, v in TOPICS.items()}
    out = {}
    for topic, key, _, headers in b.read_committed(list(TOPICS.values())):
        assert key not in out, f"{key!r} emitted twice"
        t = parse_headers(headers)
        # a revision goes to the unique topic (verify.revisions: unique)
        assert t.status == inv[topic] or (t.status, inv[topic]) == ("revision", "unique")
        out[key] = (t.status, t.duplicate_of, t.relation, t.reason, t.stage)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    records = feed()
    b = broker(records)
    s = run(b, str(tmp_path_factory.mktemp("ref") / "state"))
    got = decisions(b)
    assert len(got) == len(records) and s.reconciles() and s.records == len(records)
    statuses = [v[0] for v in got.values()]
    assert statuses.count("duplicate") > 80 and statuses.count("revision") > 5 and statuses.count("dead_letter") >= 5
    assert s.revisions == statuses.count("revision")  # the run's count of revisions
    return records, got


def test_crash_between_state_commit_and_transaction_commit(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    b.fail("commit_transaction", Crash(), after=5)  # the state of the 6th batch (and more) has landed
    with pytest.raises(Crash):
        run(b, str(tmp_path / "s"))
    assert len(decisions(b)) < len(records)
    again = run(b, str(tmp_path / "s"))
    assert again.replayed > 0  # decided before the crash: re-emitted from the state, not decided again
    assert decisions(b) == want


def test_fenced_producer_is_replaced_and_the_batch_replayed(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    b.fail("commit_transaction", kafka_error(KafkaError._FENCED, "fenced", fatal=True), after=3)
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 1 and b.calls["init_transactions"] == 2 and s.replayed > 0
    assert decisions(b) == want


def test_a_fenced_consumer_restarts_the_process_and_nothing_is_lost(reference, tmp_path) -> None:
    """Seen on the real broker restarting beside a busy neighbour: the static member's session
    timed out in librdkafka, its rejoin was fenced, and the consumer handed out nothing while
    the processor waited forever. The consumer's fatal event (code _FATAL, fatal() False) now
    restarts the process, whose new consumer takes the member's place; with restarts off it
    is an error naming it."""
    records, want = reference
    b = broker(records)
    b.consumer_events[6] = KafkaError(KafkaError._FATAL, "Fatal error: Broker: Static consumer fenced by other consumer "
                                      "with same group.instance.id")
    cfg = config()
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    restarts = []
    proc = Processor(cfg, str(tmp_path / "s"), stop_when_idle=0.05, clients=clients)
    proc.watchdog = Watchdog(600, restart=lambda: restarts.append(1))
    proc.run()
    assert restarts == [1] and len(decisions(b)) < len(records)
    run(b, str(tmp_path / "s"))  # the new process
    assert decisions(b) == want
    b = broker(records)
    b.consumer_events[3] = KafkaError(KafkaError._FATAL, "Fatal error: fenced")
    with pytest.raises(ConsumerFatal, match="consumer: Fatal error: fenced"):
        run(b, str(tmp_path / "s2"))


def test_aborted_transaction_is_rewound_and_replayed(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    b.fail("send_offsets_to_transaction", kafka_error(KafkaError._STATE, "abortable", txn_requires_abort=True), after=4)
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 1 and b.calls["abort_transaction"] == 1 and s.replayed > 0
    assert decisions(b) == want


def test_an_abort_that_times_out_gets_a_new_producer(reference, tmp_path) -> None:
    """Seen on the real broker restarting under load: commit_transaction failed (abortable), then
    abort_transaction timed out too, and the processor exited fatally. A new producer's
    init_transactions fences the old one; the batch is replayed."""
    records, want = reference
    b = broker(records)
    b.fail("commit_transaction", kafka_error(KafkaError._STATE, "abortable", txn_requires_abort=True), after=3)
    b.fail("abort_transaction", kafka_error(KafkaError._TIMED_OUT, "Timed out waiting for operation to finish"))
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 1 and b.calls["abort_transaction"] == 1 and b.calls["init_transactions"] == 2
    assert s.replayed > 0 and decisions(b) == want


def test_a_timed_out_send_offsets_is_retried(reference, tmp_path) -> None:
    """Seen on the real broker after a restart: send_offsets_to_transaction timed out, the error
    was neither abortable nor fatal, and the processor exited."""
    records, want = reference
    b = broker(records)
    b.fail("send_offsets_to_transaction", kafka_error(KafkaError._TIMED_OUT, "Failed to add offsets", retriable=True), after=2)
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 0 and b.calls["init_transactions"] == 1
    assert decisions(b) == want


def test_a_transaction_error_neither_abortable_nor_fatal_gets_a_new_producer(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    b.fail("commit_transaction", kafka_error(KafkaError._STATE, "odd state"), after=3)
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 1 and b.calls["init_transactions"] == 2 and s.replayed > 0
    assert decisions(b) == want


def test_rewind_after_a_rebalance(reference, tmp_path, monkeypatch) -> None:
    """A reassignment resumes from the committed offsets while a later batch is decided: its
    records are below the state's positions and are replayed. The partitions are revoked in the
    first read after the fifth batch went to the decide thread, which holds it until then (so
    the batch is still being decided, wherever the threads' timing would have put it)."""
    records, want = reference
    b = broker(records)
    made: list[Consumer] = []
    revoking = threading.Event()
    original_consume, original_prepare, original_decide = Consumer.consume, KafkaPipeline.prepare, KafkaPipeline.decide
    prepared, decided = [], []

    def prepare(self, msgs, replay):
        prepared.append(len(msgs))  # the main thread: the batch goes to the decide thread next
        return original_prepare(self, msgs, replay)

    def decide(self, batch):
        decided.append(batch)
        if len(decided) == 5:
            assert revoking.wait(30), "no read after the fifth batch went to the decide thread"
        return original_decide(self, batch)

    def consume(self, num_messages=1, timeout=-1):
        if len(prepared) >= 5 and not revoking.is_set():
            revoking.set()  # the revocation waits for the batch being decided: let it finish
            self.rebalance()
        return original_consume(self, num_messages, timeout)

    monkeypatch.setattr(Consumer, "consume", consume)
    monkeypatch.setattr(KafkaPipeline, "prepare", prepare)
    monkeypatch.setattr(KafkaPipeline, "decide", decide)
    clients_consumer = lambda conf: made.append(Consumer(b, conf)) or made[-1]  # noqa: E731
    cfg = config()
    clients = Clients(consumer=clients_consumer, producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    s = Processor(cfg, str(tmp_path / "s"), stop_when_idle=0.05, clients=clients, watchdog=False).run()
    assert revoking.is_set() and s.replayed > 0 and s.reconciles()
    assert decisions(b) == want


def test_rebalances_while_a_batch_fills_in_several_reads(reference, tmp_path, monkeypatch) -> None:
    """Records trickle in (5 a read) under a linger, so a batch fills in several reads while the
    one before it is decided and sent; partitions revoked between two of those reads are read
    again from the committed offsets, and what the batch read before must not come twice."""
    records, want = reference
    b = broker(records)
    original = Consumer.consume

    def consume(self, num_messages=1, timeout=-1):
        if b.calls.get("consume", 0) % 23 == 22:
            self.rebalance()
        return original(self, min(num_messages, 5), timeout)

    monkeypatch.setattr(Consumer, "consume", consume)
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_KAFKA__LINGER_MS="50")
    assert s.replayed > 0 and s.reconciles()
    assert decisions(b) == want


def test_replay_of_unconfirmed_batches_after_two_crashes(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    state = str(tmp_path / "s")
    for after in (2, 4):
        b.fail("commit_transaction", Crash(), after=after)
        with pytest.raises(Crash):
            run(b, state)
    run(b, state)
    assert decisions(b) == want


def test_at_least_once_delivers_every_record(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    s = run(b, str(tmp_path / "s"), delivery="at_least_once")
    assert s.reconciles() and decisions(b) == want


# -- outputs that cannot be produced -------------------------------------


def sized(i: int, size: int, seed: int) -> bytes:
    """A JSON story of exactly ``size`` bytes (its words are its own: unrelated to the feed)."""
    rng = random.Random(seed)
    head = orjson.dumps({"id": f"big-{i}", "text": ""})[:-3]  # without '""}'
    words = []
    length = len(head) + 3
    while length < size:
        w = f"z{rng.randrange(10**6)}"
        words.append(w)
        length += len(w) + 1
    text = " ".join(words)[: size - len(head) - 3].ljust(size - len(head) - 3, "x")
    out = head + orjson.dumps(text) + b"}"
    assert len(out) == size
    return out


def with_big(records: list, bigs: dict[int, bytes]) -> list:
    """``records`` with ``bigs`` (position -> value) inserted, keys ``b<position>``."""
    out = list(records)
    for at, value in sorted(bigs.items()):
        out.insert(at, (f"b{at}".encode(), value))
    return out


def outputs(b: Broker) -> dict:
    """key -> (status, tags, value) of every committed output; asserts none is doubled."""
    inv = {v: k for k, v in TOPICS.items()}
    out = {}
    for topic, key, value, headers in b.read_committed(list(TOPICS.values())):
        assert key not in out, f"{key!r} emitted twice"
        t = parse_headers(headers)
        # a revision goes to the unique topic (verify.revisions: unique)
        assert t.status == inv[topic] or (t.status, inv[topic]) == ("revision", "unique")
        out[key] = (t.status, t, value)
    return out


def same_decisions(got: dict, want: dict, but: set) -> None:
    """Every record of the reference run has its decision, apart from the keys in ``but``."""
    mine = {k: (t.status, t.duplicate_of, t.relation, t.reason, t.stage) for k, (_, t, _) in got.items()
            if k in want and k not in but}
    assert mine == {k: v for k, v in want.items() if k not in but}


def test_output_over_the_producer_limit_goes_out_as_a_truncated_dead_letter(reference, tmp_path) -> None:
    """message.max.bytes 20,000: a 19,990-byte record cannot leave whole, not even as a dead
    letter; it leaves truncated, with its position, size and reason, before the engine sees
    it. A 19,000-byte record and its resend still fit (unique, duplicate)."""
    records, want = reference
    near, fits = sized(1, 19_990, 1), sized(2, 19_000, 2)
    feed_ = with_big(records, {40: near, 100: fits, 300: fits})
    b = broker(feed_)
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_KAFKA__LIBRDKAFKA__MESSAGE_MAX_BYTES="20000",
            STREAMDEDUP_INPUT__MAX_RECORD_BYTES="20000")
    got = outputs(b)
    assert len(got) == len(feed_) and s.reconciles() and s.records == len(feed_) and s.aborted_batches == 0
    status, t, value = got[b"b40"]
    assert status == "dead_letter" and t.stage == "output" and t.source == "in:0:40"
    assert t.original_bytes == 19_990 and value == near[:TRUNCATED_PREFIX_BYTES]
    assert "message.max.bytes (20,000)" in t.reason and "truncated" in t.reason
    assert got[b"b100"][0] == "unique" and got[b"b100"][2] == fits
    assert got[b"b300"][0] == "duplicate" and got[b"b300"][1].duplicate_of == "big-2"
    same_decisions(got, want, set())


def test_output_over_a_topic_limit_goes_to_dead_letter_whole(reference, tmp_path) -> None:
    """The duplicates topic takes 3,000 bytes (read at start-up): a duplicate over that goes to
    dead letter with its original bytes and headers; a unique record of that size is unaffected.
    The batch's counts follow the re-routing."""
    records, want = reference
    story = sized(3, 4_000, 3)
    feed_ = with_big(records, {50: story, 400: story})
    b = broker(feed_)
    b.max_message_bytes[TOPICS["duplicate"]] = 3_000
    s = run(b, str(tmp_path / "s"))
    got = outputs(b)
    assert len(got) == len(feed_) and s.reconciles() and s.aborted_batches == 0 and not b.refused
    assert got[b"b50"][0] == "unique"
    status, t, value = got[b"b400"]
    assert status == "dead_letter" and t.stage == "output" and t.original_bytes is None and value == story
    assert f"topic {TOPICS['duplicate']}" in t.reason and "max.message.bytes" in t.reason and "(3,000)" in t.reason
    # the other duplicates over 3,000 bytes went the same way; the rest are as in the reference
    moved = {k for k, (st, t, _) in got.items() if st == "dead_letter" and t.stage == "output"}
    assert s.duplicates == sum(v[0] == "duplicate" for v in want.values()) - (len(moved) - 1)
    same_decisions(got, want, moved)


def refused_once(b: Broker) -> set:
    """Keys the broker refused; asserts none was refused twice."""
    keys = [key for _, key in b.refused]
    assert len(keys) == len(set(keys)), "a record was refused twice"
    return set(keys)


@pytest.mark.parametrize("delivery", ["exactly_once", "at_least_once"])
def test_a_limit_lowered_at_run_time_costs_one_refusal(reference, tmp_path, delivery) -> None:
    """The unique topic's limit dropped after the start-up read: the broker refuses the first
    batches whole (small records with the large ones). The guard re-reads the limits: the small
    records are forgiven and re-sent through a producer whose batch.size fits, the large ones go
    to dead letter with the broker's reason; later large ones are caught before produce."""
    records, want = reference
    bigs = {10: sized(4, 6_000, 4), 11: sized(5, 7_000, 5), 250: sized(6, 9_000, 6)}
    feed_ = with_big(records, bigs)
    b = broker(feed_)
    b.max_message_bytes[TOPICS["unique"]] = 5_000
    b.stale_describes = 1
    s = run(b, str(tmp_path / "s"), delivery=delivery)
    got = outputs(b)
    assert len(got) == len(feed_) and s.reconciles() and s.records == len(feed_)
    refused = refused_once(b)
    assert len(refused) > 10 and {b"b10", b"b11"} <= refused and b"b250" not in refused  # small ones refused too
    for key in (b"b10", b"b11", b"b250"):
        status, t, value = got[key]
        assert status == "dead_letter" and t.stage == "output" and value == bigs[int(key[1:])]
    assert "the broker refused it: Broker: Message size too large" in got[b"b10"][1].reason
    assert "over max.message.bytes of topic out.unique (5,000)" in got[b"b250"][1].reason
    if delivery == "exactly_once":
        assert s.aborted_batches == 1
    assert b.calls["init_transactions" if delivery == "exactly_once" else "consume"] >= 2  # a new producer
    same_decisions(got, want, {b"b10", b"b11", b"b250"})  # the small refused ones as in the reference


def test_without_topic_limits_every_refused_record_goes_to_dead_letter(reference, tmp_path) -> None:
    """The limits cannot be read (describe_configs not authorised): the refused batch, small
    records and all, goes to dead letter with the broker's reason; nothing lost or doubled, no loop."""
    records, _ = reference
    feed_ = with_big(records[:100], {10: sized(4, 6_000, 4)})  # every batch is refused once: a short feed
    b = broker(feed_)
    b.max_message_bytes[TOPICS["unique"]] = 5_000
    b.describe_denied = True
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_KAFKA__LIBRDKAFKA__BATCH_SIZE="40000")
    got = outputs(b)
    assert len(got) == len(feed_) and s.reconciles()
    refused = refused_once(b)
    assert b"b10" in refused and len(refused) > 1 and s.aborted_batches >= 1
    for key in refused:
        status, t, _ = got[key]
        assert status == "dead_letter" and "the broker refused it" in t.reason


def test_broker_refusing_the_dead_letter_too_gets_a_truncated_one(reference, tmp_path) -> None:
    """Refused, then its dead letter refused: the truncated dead letter goes out (the limits
    cannot be read, so the refusals are the only news; batch.size keeps the small records apart)."""
    records, want = reference
    big = sized(7, 8_000, 7)
    feed_ = with_big(records, {70: big})
    b = broker(feed_)
    b.max_message_bytes[TOPICS["unique"]] = 5_000
    b.max_message_bytes[TOPICS["dead_letter"]] = 6_000
    b.describe_denied = True
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_KAFKA__LIBRDKAFKA__BATCH_SIZE="4000")
    got = outputs(b)
    assert len(got) == len(feed_) and s.reconciles() and s.aborted_batches == 2
    status, t, value = got[b"b70"]
    assert status == "dead_letter" and t.original_bytes == 8_000 and value == big[:TRUNCATED_PREFIX_BYTES]
    assert t.reason.count("Message size too large") == 2 and t.source == "in:0:70"
    assert [(topic, key) for topic, key in b.refused] == [(TOPICS["unique"], b"b70"), (TOPICS["dead_letter"], b"b70")]
    same_decisions(got, want, {b"b70"})


def test_a_dead_letter_topic_that_refuses_everything_stops_the_processor(reference, tmp_path) -> None:
    """Not a poison record but a broken dead-letter topic: refused three times, then an error naming it."""
    records, _ = reference
    b = broker(with_big(records, {80: sized(8, 8_000, 8)}))
    b.max_message_bytes[TOPICS["unique"]] = 5_000
    b.max_message_bytes[TOPICS["dead_letter"]] = 500
    b.describe_denied = True
    with pytest.raises(StreamdedupError, match=f"dead-letter topic {TOPICS['dead_letter']} refused even a truncated"):
        run(b, str(tmp_path / "s"), STREAMDEDUP_KAFKA__LIBRDKAFKA__BATCH_SIZE="4000")
    keys = [key for _, key in b.refused]
    assert max(keys.count(k) for k in keys) == 3


def test_caught_up_needs_an_assignment_at_the_high_watermark() -> None:
    """--stop-when-idle stops only when caught up; during a rebalance (a broker restart) the
    assignment is empty for a while, and that is not caught up (an empty loop said it was)."""
    from streamdedup.runtime.single.idle import caught_up

    broker = Broker()
    broker.logs[("in", 0)] = []
    consumer = Consumer(broker, {"group.id": "g"})
    assert not caught_up(consumer)  # nothing assigned yet
    consumer.subscribe(["in"])
    assert caught_up(consumer)  # assigned, empty log: at the high watermark
    broker.logs[("in", 0)].append(object())
    assert not caught_up(consumer)  # one record behind
    consumer.positions[("in", 0)] = 1
    assert caught_up(consumer)
    consumer.positions = {}  # revoked mid-rebalance
    assert not caught_up(consumer)


def test_a_unique_record_keeps_its_own_headers_before_the_tags(tmp_path) -> None:
    """Unique records take a short path through routing: their own headers (an upstream
    ``dedup.*`` renamed) still come first, then the unique tags, and the producer is asked for
    error reports only (the fake then serves no other)."""
    b = broker([])
    story = orjson.dumps({"id": "a", "text": " ".join(WORDS[:80])})
    b.logs[("in", 0)] += [Rec(b"k0", story, [("trace", b"1"), ("dedup.status", b"duplicate")]), Rec(b"k1", orjson.dumps(
        {"id": "b", "text": " ".join(WORDS[100:180])}), None)]
    seen: list[dict] = []
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: seen.append(conf) or Producer(b, conf),
                      admin=lambda conf: Admin(b, conf))
    Processor(config(), str(tmp_path / "state"), stop_when_idle=0.05, clients=clients, watchdog=False).run()
    assert seen and all(conf["delivery.report.only.error"] is True for conf in seen)
    out = {r.key: r.headers for r in b.logs[(TOPICS["unique"], 0)]}
    assert out[b"k0"] == [("trace", b"1"), ("dedup.upstream.status", b"duplicate"), *UNIQUE_HEADERS]
    assert out[b"k1"] == UNIQUE_HEADERS
