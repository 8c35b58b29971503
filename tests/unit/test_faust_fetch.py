"""The faust stage's input in whole fetches (``runtime.faust.fetch``), without a broker: what a
fetch hands the stage, what it leaves to faust's per-record path, and how it is installed."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

faust = pytest.importorskip("faust", reason="the faust extra")

from faust.types import TP  # noqa: E402

from streamdedup.config import Config  # noqa: E402
from streamdedup.runtime.faust.fetch import BatchingConsumer, route_batches  # noqa: E402
from streamdedup.runtime.kafka.startup import StartupError  # noqa: E402


def _run(coro):
    # a thread of its own: see test_faust_parts._run
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class _Consumer:
    """The parts of faust's consumer that ``BatchingConsumer._deliver`` uses, recorded."""

    def __init__(self, generation: int = 3, flow_active: bool = True, paused: tuple = ()):
        self.flow_active, self.generation, self.paused = flow_active, generation, set(paused)
        self._read_offset: dict = {}
        self._buffered_partitions: set = set()
        self.seeks = 0
        self.per_record: list = []
        self.app = SimpleNamespace(monitor=SimpleNamespace(track_tp_end_offset=lambda tp, hw: None))
        self.suspend_flow = asyncio.Event()

    def _to_message(self, tp, record):
        return SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=record.offset, generation_id=self.generation)

    def highwater(self, tp):
        return 100

    async def perform_seek(self):
        self.seeks += 1

    async def callback(self, message):
        self.per_record.append((message.topic, message.offset))

    async def wait_first(self, *coros):
        # faust's wait_first races the handler against suspend_flow; the handler finishes here
        for lost in coros[1:]:
            lost.close()
        return await coros[0]

    async def deliver(self, records, routes, active=None):
        return await BatchingConsumer._deliver(self, records, active, routes)


def _records(offsets):
    return [SimpleNamespace(offset=o) for o in offsets]


def test_a_fetch_goes_to_the_stage_in_one_call_and_other_topics_record_by_record():
    got = []

    async def handler(msgs):
        got.append([(m.topic, m.partition, m.offset, m.generation_id) for m in msgs])

    async def go():
        c = _Consumer()
        c._read_offset[TP("news", 1)] = 11  # seek set it: records below are from before the seek
        records = {TP("news", 0): _records([4, 5]), TP("news", 1): _records([9, 10, 11, 12]),
                   TP("other", 0): _records([0, 1])}
        await c.deliver(records, {"news": handler})
        return c

    c = _run(go())
    assert got == [[("news", 0, 4, 3), ("news", 0, 5, 3), ("news", 1, 11, 3), ("news", 1, 12, 3)]]
    assert c.per_record == [("other", 0), ("other", 1)]
    assert c._read_offset == {TP("news", 0): 5, TP("news", 1): 12, TP("other", 0): 1}


def test_a_fetch_after_the_flow_stopped_is_dropped_and_the_partitions_seek_back():
    got = []

    async def handler(msgs):
        got.append(msgs)

    async def go():
        c = _Consumer(flow_active=False)
        await c.deliver({TP("news", 0): _records([0, 1])}, {"news": handler})
        return c

    c = _run(go())
    assert got == [] and c.seeks == 1 and c._read_offset == {}


def test_partitions_paused_since_the_fetch_are_skipped():
    got = []

    async def handler(msgs):
        got.append([(m.partition, m.offset) for m in msgs])

    async def go():
        c = _Consumer()
        await c.deliver({TP("news", 0): _records([0]), TP("news", 1): _records([0])}, {"news": handler},
                        active={TP("news", 1)})

    _run(go())
    assert got == [[(1, 0)]]


def test_attach_routes_the_input_topics_of_this_app_only():
    from streamdedup.runtime.faust.agent import attach, build_app

    app = build_app(Config())
    transport = app.transport
    assert transport.Consumer is BatchingConsumer
    assert set(transport.batch_routes) == set(Config().kafka.input_topics)
    other = faust.App("t-other", broker="kafka://127.0.0.1:1")
    assert other.transport.Consumer is not BatchingConsumer  # the driver's class is left alone
    started = faust.App("t-started", broker="kafka://127.0.0.1:1", stream_wait_empty=False)
    started.consumer = SimpleNamespace()  # as a started worker has it (a real one would open an event loop)
    with pytest.raises(StartupError, match="consumer exists already"):
        attach(started, Config())


def test_route_batches_refuses_another_driver():
    app = faust.App("t-other-driver", broker="kafka://127.0.0.1:1")
    app.transport = SimpleNamespace(Consumer=object)  # as faust's confluent driver: not aiokafka's
    with pytest.raises(ValueError, match="aiokafka driver"):
        route_batches(app, ("news",), lambda msgs: None)
