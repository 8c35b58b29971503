"""The Kafka processor's exactly-once state machine, driven in-process by a fake client.

Each case runs the real processor loop, pipeline, engine and RocksDB state against
``fake_kafka`` with a fault injected, and compares what a read_committed reader sees with an
uninterrupted run: nothing lost, nothing doubled, the same decisions. (The same properties are
tested against the real broker with SIGKILLs in tests/integration.)
"""

from __future__ import annotations

import random

import orjson
import pytest
from confluent_kafka import KafkaError

from streamdedup import load_config
from streamdedup.kafka.processor import Clients, Processor
from streamdedup.pipeline.tags import parse_headers

from .fake_kafka import Admin, Broker, Consumer, Crash, Producer, kafka_error

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


def config():
    env = {"STREAMDEDUP_ENGINE__BATCH_SIZE": "32", "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "4096",
           "STREAMDEDUP_KAFKA__INPUT_TOPICS": "[in]", "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": TOPICS["unique"],
           "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": TOPICS["duplicate"], "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": TOPICS["dead_letter"],
           "STREAMDEDUP_KAFKA__LINGER_MS": "0", "STREAMDEDUP_STATE__SYNC": "false"}
    return load_config(environ=env)


def broker(records) -> Broker:
    b = Broker()
    for t in ["in", *TOPICS.values()]:
        b.create(t)
    b.append("in", records)
    return b


def run(b: Broker, state: str, delivery: str = "exactly_once"):
    cfg = config()
    cfg = cfg.model_copy(update={"kafka": cfg.kafka.model_copy(update={"delivery": delivery})})
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    return Processor(cfg, state, stop_when_idle=0.05, clients=clients, watchdog=False).run()


def decisions(b: Broker) -> dict:
    inv = {v: k for k, v in TOPICS.items()}
    out = {}
    for topic, key, _, headers in b.read_committed(list(TOPICS.values())):
        assert key not in out, f"{key!r} emitted twice"
        t = parse_headers(headers)
        assert t.status == inv[topic]
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
    assert statuses.count("duplicate") > 100 and statuses.count("dead_letter") >= 5
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


def test_aborted_transaction_is_rewound_and_replayed(reference, tmp_path) -> None:
    records, want = reference
    b = broker(records)
    b.fail("send_offsets_to_transaction", kafka_error(KafkaError._STATE, "abortable", txn_requires_abort=True), after=4)
    s = run(b, str(tmp_path / "s"))
    assert s.aborted_batches == 1 and b.calls["abort_transaction"] == 1 and s.replayed > 0
    assert decisions(b) == want


def test_rewind_after_a_rebalance(reference, tmp_path, monkeypatch) -> None:
    """A reassignment resumes from the committed offsets while later batches are decided:
    those records are below the state's positions and are replayed."""
    records, want = reference
    b = broker(records)
    made: list[Consumer] = []
    original = Consumer.consume

    def consume(self, num_messages=1, timeout=-1):
        if b.calls.get("consume", 0) == 9:
            self.rebalance()
        return original(self, num_messages, timeout)

    monkeypatch.setattr(Consumer, "consume", consume)
    clients_consumer = lambda conf: made.append(Consumer(b, conf)) or made[-1]  # noqa: E731
    cfg = config()
    clients = Clients(consumer=clients_consumer, producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    s = Processor(cfg, str(tmp_path / "s"), stop_when_idle=0.05, clients=clients, watchdog=False).run()
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
