"""The faust stage's parts that need no broker: the decisions reader's rules, the message view,
routing, the app settings and the agent's refusals. On the broker: tests/integration/test_faust.py."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from streamdedup.config import Config, load_config
from streamdedup.pipeline.route import kafka_output
from streamdedup.runtime.faust.agent import EventMessage, app_settings
from streamdedup.runtime.faust.decisions import DecisionReader, _part_of_key
from streamdedup.runtime.kafka.decision_record import BadDecisionRecord, DecisionRecord, encode
from streamdedup.runtime.kafka.startup import StartupError
from streamdedup.pipeline.tags import DeadLetterTags, DuplicateTags

MAPPING = {("news", 0): 0, ("news", 1): 1}


def _msg(part: int, rec: DecisionRecord, key: bytes | None = None, offset: int = 5):
    return SimpleNamespace(topic="dec", partition=part, offset=offset, value=encode(rec),
                           key=key if key is not None else f"news:{part}".encode())


def _run(coro):
    # on a thread of its own: in a whole-suite session the browser tests' Playwright (sync API)
    # keeps an event loop running in the main thread, where asyncio.run refuses to start one
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_the_first_decision_for_an_awaited_offset_is_the_one_and_others_are_dropped():
    async def go():
        r = DecisionReader(None, "dec", MAPPING)
        fut, = r.expect([(("news", 1), 7)])
        r._offer(1, _msg(1, DecisionRecord(6)))  # a predecessor's answer nobody waits for
        dup = DecisionRecord(7, DuplicateTags("a", "exact", 1.0, 1.0, "a", "same digest"))
        r._offer(1, _msg(1, dup))
        r._offer(1, _msg(1, DecisionRecord(7)))  # a second answer for 7: not the one
        return fut.result(), r.dropped

    got, dropped = _run(go())
    assert got.tags.relation == "exact" and dropped == 2


def test_a_decision_from_the_wrong_partition_or_input_is_an_error():
    async def go(part, key):
        r = DecisionReader(None, "dec", MAPPING)
        r.expect([(("news", 0), 5)])
        r._offer(part, _msg(part, DecisionRecord(5), key))

    with pytest.raises(BadDecisionRecord, match="does not serve"):
        _run(go(1, b"news:0"))
    with pytest.raises(BadDecisionRecord, match="does not serve"):
        _run(go(0, b"other:0"))
    with pytest.raises(BadDecisionRecord):
        _run(go(0, b"garbage"))


def test_decision_keys_parse_topics_with_colons():
    assert _part_of_key(b"a:b:3") == ("a:b", 3)
    assert _part_of_key(b"news") is None and _part_of_key(None) is None and _part_of_key(b"news:x") is None


def test_event_messages_read_like_confluent_messages():
    m = EventMessage(SimpleNamespace(topic="t", partition=2, offset=9, key=b"k", value=b"v", timestamp=1.5,
                                     headers={"a": b"1"}))
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value()) == ("t", 2, 9, b"k", b"v")
    assert m.headers() == [("a", b"1")] and m.timestamp() == (1, 1500)
    bare = EventMessage(SimpleNamespace(topic="t", partition=0, offset=0, key=None, value=None, timestamp=None, headers=()))
    assert bare.headers() is None and bare.timestamp() == (0, 0)


def test_every_kafka_runtime_routes_with_one_mapping():
    """The single processor, the staged worker and the faust agent all call kafka_output."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "streamdedup" / "runtime"
    for runtime in ("kafka/batch.py", "staged/worker.py", "faust/agent.py"):
        text = (root / runtime).read_text()
        assert "kafka_output(" in text and "duplicate_headers(" not in text and "dead_letter_headers(" not in text, runtime
    assert kafka_output(DecisionRecord(1).tags)[0] == "unique"
    dest, tags = kafka_output(DecisionRecord(1, DuplicateTags("a", "near_duplicate", 0.9, None, "a", "r")).tags)
    assert dest == "duplicate" and ("dedup.duplicate_of", b"a") in tags
    dest, tags = kafka_output(DeadLetterTags("decode", "bad", "news:0:1"), time_invalid="ignored for a dead letter")
    assert dest == "dead_letter" and ("dedup.reason", b"bad") in tags and not any(k == "dedup.time_invalid" for k, _ in tags)
    dest, tags = kafka_output(None, time_invalid="ts 1e30 is beyond 64 bits")
    assert dest == "unique" and ("dedup.time_invalid", b"ts 1e30 is beyond 64 bits") in tags


def test_app_settings_follow_the_config():
    cfg = load_config(environ={"STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": "h1:9092, h2:9093",
                               "STREAMDEDUP_KAFKA__DELIVERY": "at_least_once", "STREAMDEDUP_KAFKA__GROUP_ID": "g"})
    s = app_settings(cfg, broker_commit_interval=1.0)
    assert s["broker"] == ["kafka://h1:9092", "kafka://h2:9093"] and s["id"] == "g.faust"
    assert s["processing_guarantee"] == "at_least_once" and s["stream_wait_empty"] is False
    assert s["broker_commit_interval"] == 1.0 and not s["web_enabled"]


def test_librdkafka_settings_are_refused_naming_faust_credentials():
    cfg = load_config(environ={"STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY_PROTOCOL": "SASL_SSL"})
    with pytest.raises(StartupError, match="broker_credentials"):
        app_settings(cfg)


def test_the_agent_refuses_an_app_that_waits_for_unfinished_batches():
    faust = pytest.importorskip("faust")
    from streamdedup.runtime.faust.agent import attach, build_app

    app = faust.App("t-wait", broker="kafka://127.0.0.1:1", stream_wait_empty=True)
    with pytest.raises(StartupError, match="stream_wait_empty=False"):
        attach(app, Config())
    app = build_app(Config())
    assert app.conf.processing_guarantee.value == "exactly_once"
    assert "streamdedup" in {a.name.rsplit(".", 1)[-1] for a in app.agents.values()}


@pytest.mark.parametrize("extra", [["--input", "x.jsonl"], ["--state-dir", "s"], ["--instance", "w1"]])
def test_run_topology_faust_refuses_options_of_other_modes(extra):
    from click.testing import CliRunner

    from streamdedup.cli import main

    result = CliRunner().invoke(main, ["run", "--topology", "faust", *extra])
    assert result.exit_code == 2 and "--topology faust" in result.output


class _Producer:
    """An aiokafka transactional producer as the stage's transactions call it; ``fence`` makes its commit fail."""

    def __init__(self, tid: str, log: list):
        self.tid, self.log, self.fence, self.sent = tid, log, False, []
        self.offsets = None
        self.refuse = None  # an exception the next delivery future fails with (the send itself succeeds)

    def _delivered(self):
        fut = asyncio.get_running_loop().create_future()
        if self.refuse is not None:
            fut.set_exception(self.refuse)
        else:
            fut.set_result(None)
        return fut

    async def start(self):
        self.log.append(("start", self.tid))

    async def stop(self):
        self.log.append(("stop", self.tid))

    async def abort_transaction(self):
        self.log.append(("abort", self.tid))

    async def begin_transaction(self):
        pass

    async def send(self, topic, value, key=None, partition=None, headers=None):
        self.sent.append((topic, key))
        return self._delivered()

    async def partitions_for(self, topic):
        return {0, 1}

    def create_batch(self):
        return _Batch(limit=2)

    async def send_batch(self, batch, topic, partition):
        self.sent.extend((topic, key) for key in batch.keys)
        return self._delivered()

    async def send_offsets_to_transaction(self, offsets, group_id):
        self.offsets = ({(tp.topic, tp.partition): o for tp, o in offsets.items()}, group_id)

    async def commit_transaction(self):
        from aiokafka.errors import ProducerFenced

        if self.fence:
            raise ProducerFenced()


class _Batch:
    """aiokafka's BatchBuilder as send_batched uses it: full after ``limit`` records, or at once for a big one."""

    def __init__(self, limit: int):
        self.keys, self.limit, self.closed = [], limit, False

    def append(self, key, value, timestamp, headers):
        if self.closed or len(self.keys) == self.limit or len(value) > 100:
            self.closed = True
            return None
        self.keys.append(key)
        return object()

    def record_count(self):
        return len(self.keys)


class _Admin:
    def __init__(self, committed: dict):
        self.committed = committed  # (topic, partition) -> offset

    async def list_consumer_group_offsets(self, group_id, partitions):
        from aiokafka.structs import OffsetAndMetadata

        return {tp: OffsetAndMetadata(self.committed[(tp.topic, tp.partition)], "") for tp in partitions
                if (tp.topic, tp.partition) in self.committed}


def test_outputs_go_in_batches_per_destination_partition_in_order():
    """Keys map to partitions as aiokafka's send maps them; per partition the order is kept,
    across full batches and a record too large for any batch (sent on its own)."""
    pytest.importorskip("aiokafka")
    from aiokafka.partitioner import DefaultPartitioner

    from streamdedup.runtime.faust.transactions import send_batched

    p = _Producer("t", [])
    keys = [b"k%d" % i for i in range(12)]
    outputs = [("unique", k, b"x" * (200 if i == 5 else 10), []) for i, k in enumerate(keys)]
    _run(send_batched(p, outputs))
    assert sorted(k for _, k in p.sent) == sorted(keys)
    for part in (0, 1):
        mine = [k for k in keys if DefaultPartitioner()(k, [0, 1], [0, 1]) == part]
        assert [k for _, k in p.sent if k in mine] == mine


def _events(part: int, offsets, generation: int) -> list:
    return [SimpleNamespace(topic="news", partition=part, offset=o, generation_id=generation) for o in offsets]


def test_partition_transactions_claim_per_generation_and_drop_what_is_not_theirs():
    """Claimed in a newer generation: a new producer (fencing), then the committed offset read;
    events below it, of an older generation, or of a fenced partition are dropped."""
    pytest.importorskip("aiokafka")
    from streamdedup.runtime.faust.transactions import PartitionTransactions

    async def go():
        log, made = [], []

        def make(tid):
            made.append(_Producer(tid, log))
            return made[-1]

        admin = _Admin({("news", 0): 5})
        t = PartitionTransactions(make, admin, "g.faust", "tx")
        offsets = lambda msgs: [m.offset for m in msgs]  # noqa: E731
        assert offsets(await t.admit(_events(0, range(3, 8), 1) + _events(1, [0, 1], 1))) == [5, 6, 7, 0, 1]
        assert log == [("start", "tx.faust.news.0"), ("start", "tx.faust.news.1")]
        assert await t.commit(("news", 0), [("unique", b"k5", b"v", [])], 8)
        assert made[0].offsets == ({("news", 0): 8}, "g.faust")
        assert offsets(await t.admit(_events(0, range(6, 10), 1))) == [8, 9]  # re-read below our own commit
        admin.committed[("news", 0)] = 9  # another owner went further, then the partition came back
        assert offsets(await t.admit(_events(0, [8], 1) + _events(0, [8, 9, 10], 2))) == [9, 10]
        assert log[-2:] == [("stop", "tx.faust.news.0"), ("start", "tx.faust.news.0")]
        assert offsets(await t.admit(_events(0, [11], 1))) == []  # fetched before the rebalance
        made[-1].fence = True
        assert not await t.commit(("news", 0), [("unique", b"k9", b"v", [])], 11)
        assert not await t.commit(("news", 0), [("unique", b"k11", b"v", [])], 12)  # in flight behind it
        assert made[-1].sent == [("unique", b"k9")]
        assert not t.claims(_events(0, [12], 2)) and t.claims(_events(0, [12], 3)) and t.claims(_events(2, [0], 1))
        assert offsets(await t.admit(_events(0, [11, 12], 2))) == []  # fenced: only a newer generation re-reads
        assert offsets(await t.admit(_events(0, [9], 3))) == [9]
        await t.stop()  # open transactions aborted before their producers stop
        assert log[-4:] == [("abort", "tx.faust.news.1"), ("stop", "tx.faust.news.1"),
                            ("abort", "tx.faust.news.0"), ("stop", "tx.faust.news.0")]
        return t

    t = _run(go())
    assert (t.fenced, t.dropped) == (1, 2 + 2 + 2 + 1 + 2)


def test_a_failed_delivery_never_commits_the_input_offset():
    """aiokafka commits a transaction whose sends failed (a batch expired without a leader): the
    stage awaits every delivery first, so a failure raises before the offset joins the transaction."""
    pytest.importorskip("aiokafka")
    from aiokafka.errors import KafkaTimeoutError

    from streamdedup.runtime.faust.transactions import PartitionTransactions

    async def go():
        made = []
        t = PartitionTransactions(lambda tid: made.append(_Producer(tid, [])) or made[-1], _Admin({}), "g", "tx")
        await t.admit(_events(0, [0, 1], 1))
        made[0].refuse = KafkaTimeoutError()
        with pytest.raises(KafkaTimeoutError):
            await t.commit(("news", 0), [("unique", b"k0", b"v", []), ("unique", b"k1", b"v", [])], 2)
        assert made[0].offsets is None and t.lanes[("news", 0)].done == -1

    _run(go())


def test_no_claim_for_a_generation_the_group_has_left():
    """An agent that ran behind its consumer holds events of generation 1 while the group is in
    generation 2: claiming now would fence the partition's current owner. They are dropped (faust
    reads them again in the current generation if the partition is still this worker's)."""
    pytest.importorskip("aiokafka")
    from streamdedup.runtime.faust.transactions import PartitionTransactions

    async def go():
        log = []
        t = PartitionTransactions(lambda tid: _Producer(tid, log), _Admin({}), "g", "tx", lambda: 2)
        assert await t.admit(_events(0, [0, 1], 1)) == []
        assert log == [] and ("news", 0) not in t.lanes
        assert [m.offset for m in await t.admit(_events(0, [0, 1], 2))] == [0, 1]
        assert log == [("start", "tx.faust.news.0")]

    _run(go())
