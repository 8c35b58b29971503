"""The staged topology's fingerprint/route stage as a faust agent, exactly once.

A faust app runs the worker's part of the staged topology (``kafka.staged``); the decider is
the same process as ever (``streamdedup run --topology staged --role decider``), so duplicates
across input partitions and across faust workers are caught: every fingerprint goes through
the one-partition fingerprints topic, whose order decides which copy is first. (A faust
``Table`` would see only its own partition's documents: it misses every cross-partition copy.)

The input comes in whole fetches from the app's consumer (``runtime.faust.fetch``: faust's own
per-event stream path is slower than the whole stage). Per batch of input messages: drop what is not ours to emit
(:class:`~streamdedup.runtime.faust.transactions.PartitionTransactions`: older consumer
generations, offsets a predecessor already committed), prepare and fingerprint the rest with
the pipeline layer (dead letters sorted out with the reasons every runtime gives), send one
fingerprint record each to ``kafka.staged.fingerprints_topic`` (its own idempotent producer,
confluent-kafka's: ``runtime.faust.fingerprints``; the decider reads them while the batch
waits, so they cannot sit in an open transaction) and queue the batch. Up to ``MAX_IN_FLIGHT`` batches wait for their
decisions at once; an emitter takes them in order, waits for the decisions (``faust_decisions``:
read_committed, so they are durable), then sends every record unchanged with its tags to
unique / duplicates / dead-letter (and revisions under ``verify.revisions: topic``) in one
transaction per input partition that also commits the
partition's next offset under the faust app's group. faust itself commits nothing of the
input: the agent reads it with ``acks=False``. What holds is measured: docs/guarantees.md, "The faust topology".

An error inside a batch ends the process (``os._exit``) instead of letting faust's supervisor
restart the agent past the failed batch: faust's position has moved on, and only a restart
(faust seeks to the committed offsets) reads the batch again.

    app = faust.App("my-app", broker="kafka://...", processing_guarantee="exactly_once",
                    stream_wait_empty=False)
    attach(app, load_config("streamdedup.yaml"))   # registers the agent; run the app as usual
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from typing import Any

from streamdedup.config import Config
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline import Preparer, output_topics
from streamdedup.pipeline.fingerprints import FingerprintCodec
from streamdedup.pipeline.outputs import OutputCounts
from streamdedup.pipeline.route import kafka_output, revision_dest
from streamdedup.pipeline.tags import with_tags
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.faust.decisions import DecisionReader
from streamdedup.runtime.faust.fingerprints import FingerprintSender
from streamdedup.runtime.faust.transactions import PartitionTransactions, StableOffsets
from streamdedup.runtime.kafka.oversize import OutputGuard
from streamdedup.runtime.kafka.decision_record import DecisionRecord
from streamdedup.runtime.kafka.fingerprinting import fingerprint_messages
from streamdedup.runtime.kafka.startup import StartupError, check_cluster
from streamdedup.runtime.kafka.staged_topics import check_staged_topics

log = logging.getLogger(__name__)
#: seconds between "still waiting for decisions" warnings (the decider down or failing over)
WAIT_WARNING_S = 30.0
#: exit code when a batch fails (see the module docstring)
EXIT_BATCH_FAILED = 70
#: batches sent to the decider and not yet emitted (the decider's round trip times the rate)
MAX_IN_FLIGHT = 8
#: fetches waiting for the stage (each up to a fetch's worth of records)
INBOX_FETCHES = 4


class EventMessage:
    """A faust message seen through the confluent-kafka ``Message`` methods the pipeline uses."""

    __slots__ = ("_m",)

    def __init__(self, message: Any):
        self._m = message

    def topic(self) -> str:
        return self._m.topic

    def partition(self) -> int:
        return self._m.partition

    def offset(self) -> int:
        return self._m.offset

    def key(self) -> bytes | None:
        return self._m.key

    def value(self) -> bytes | None:
        return self._m.value

    def headers(self) -> list | None:
        h = self._m.headers
        if not h:
            return None
        return list(h.items()) if isinstance(h, dict) else list(h)

    def timestamp(self) -> tuple[int, int]:
        """(type, ms) as confluent-kafka gives it: type 0 when the record has no timestamp."""
        ts = self._m.timestamp
        return (1, int(ts * 1000)) if ts is not None and ts >= 0 else (0, 0)


class FaustStage:
    """Fingerprint a batch of input messages, wait for its decisions, emit the tagged records in transactions."""

    def __init__(self, cfg: Config, app: Any):
        self.cfg, self.kcfg, self.app = cfg, cfg.kafka, app
        self.out = output_topics(cfg)
        self.revisions = revision_dest(cfg.verify)
        self.summary = OutputCounts()
        self.batches = 0
        self.last_active = time.monotonic()
        self.in_flight = 0  # batches submitted and not yet emitted
        self.started = False
        self._fp = self.decisions = self.txns = self._admin = self._queue = self._emitter = None
        #: whole fetches from the app's consumer (``fetch.BatchingConsumer``), not yet submitted;
        #: a full inbox holds the consumer back
        self.inbox: asyncio.Queue = asyncio.Queue(INBOX_FETCHES)

    @property
    def busy(self) -> bool:
        return self.in_flight > 0 or not self.inbox.empty()

    async def offer(self, msgs: list) -> None:
        """A fetch of input messages (faust ``Message``), in order per partition."""
        await self.inbox.put(msgs)

    async def next_fetches(self, batch: int) -> list:
        """The next fetch, with those queued behind it while under ``batch`` messages."""
        msgs = await self.inbox.get()
        while len(msgs) < batch and not self.inbox.empty():
            msgs = msgs + self.inbox.get_nowait()
        return msgs

    def reconciles(self) -> bool:
        return self.summary.reconciles()

    async def start(self) -> None:
        """Startup checks (topics, partition map, output limits), then the Kafka clients."""
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
        from confluent_kafka.admin import AdminClient

        k = self.kcfg
        cluster = check_cluster(k, staged=True, revisions=self.cfg.verify.revisions == "topic")
        self.mapping = check_staged_topics(k, cluster.partitions)
        self.guard = OutputGuard.start(self.cfg, AdminClient(client_settings(k)))
        self.preparer = Preparer(self.cfg)
        self.codec = FingerprintCodec(Fingerprinter(self.cfg.fingerprint))
        servers = k.bootstrap_servers.split(",")
        self._fp = FingerprintSender(k)
        await self._fp.start(self.codec.encode_params())
        self.decisions = DecisionReader(
            AIOKafkaConsumer(bootstrap_servers=servers, group_id=None, enable_auto_commit=False,
                             isolation_level="read_committed", auto_offset_reset="earliest"),
            k.staged.decisions_topic, self.mapping)
        await self.decisions.start()
        self._admin = StableOffsets(k.bootstrap_servers)
        batch = self.guard.producer_conf().get("batch.size")  # no batch over the smallest output topic's limit

        def producer(transactional_id: str) -> AIOKafkaProducer:
            return AIOKafkaProducer(bootstrap_servers=servers, transactional_id=transactional_id, acks="all",
                                    linger_ms=5, **({"max_batch_size": batch} if batch else {}))

        self.txns = PartitionTransactions(producer, self._admin, self.app.conf.id, k.transactional_id,
                                          lambda: self.app.consumer_generation_id)
        self._queue = asyncio.Queue(MAX_IN_FLIGHT)
        self._emitter = asyncio.ensure_future(self._emit_in_order())
        self.started, self.last_active = True, time.monotonic()  # idle from here, not from the app's creation
        log.info("faust stage: started (input %s, decider via %s)", ", ".join(k.input_topics), k.staged.fingerprints_topic)

    async def stop(self) -> None:
        """Batches still in flight are not emitted: uncommitted, they are read again next time."""
        if self._emitter is not None:
            self._emitter.cancel()
            await asyncio.gather(self._emitter, return_exceptions=True)
        if self.txns is not None:
            await self.txns.stop()
        if self.decisions is not None:
            await self.decisions.stop()
        if self._admin is not None:
            await self._admin.close()
        if self._fp is not None:
            await self._fp.stop()

    async def submit(self, messages: list) -> None:
        """Admit, fingerprint and send one batch of input messages (faust ``Message``) to the
        decider, then queue it for :meth:`_emit_in_order`; waits while MAX_IN_FLIGHT batches are queued."""
        if self.txns.claims(messages):
            await self._queue.join()  # a partition changes hands: what is in flight goes out under the old claim
        messages = await self.txns.admit(messages)
        if not messages:
            return
        self.in_flight += 1
        msgs = [EventMessage(m) for m in messages]
        time_invalid: dict[int, str] = {}
        values = self._fingerprints(msgs, time_invalid)
        positions = [((m.topic(), m.partition()), m.offset()) for m in msgs]
        for part in dict.fromkeys(p for p, _ in positions):
            await self.decisions.open(part)
        futures = self.decisions.expect(positions)
        self._fp.send(values)
        await self._queue.put((msgs, futures, positions, time_invalid))

    async def _emit_in_order(self) -> None:
        """The queued batches in order: their decisions, then their transactions. Batches queued
        behind the first go with it (one transaction per partition for all of them): under load
        a transaction's round trips would otherwise queue the batches up behind each other."""
        while True:
            taken = [await self._queue.get()]
            while not self._queue.empty():
                taken.append(self._queue.get_nowait())
            try:
                msgs, decided, time_invalid = [], [], {}
                for batch_msgs, futures, positions, batch_invalid in taken:
                    time_invalid.update((len(msgs) + k, why) for k, why in batch_invalid.items())
                    msgs += batch_msgs
                    decided += await self._wait(futures, positions)
                await self._emit(msgs, decided, time_invalid)
                self.batches += len(taken)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - see the module docstring
                batch_failed(exc)
            finally:
                self.in_flight -= len(taken)
                self.last_active = time.monotonic()
                for _ in taken:
                    self._queue.task_done()

    def _fingerprints(self, msgs: list[EventMessage], time_invalid: dict[int, str] | None = None) -> list[bytes]:
        """The staged worker's prepare + screen + fingerprint, per record in order (``time_invalid``
        receives why a record's event time was not used)."""
        return fingerprint_messages(msgs, self.preparer, self.guard, self.codec, time_invalid)

    async def _wait(self, futures: list, positions: list) -> list[DecisionRecord]:
        waited = 0.0
        pending = set(futures)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=WAIT_WARNING_S)
            if pending:
                self._fp.check()  # a fingerprint that was not delivered is never answered
                waited += WAIT_WARNING_S
                log.warning("faust stage: %d of %d decisions still missing after %.0f s: is the decider running "
                            "(streamdedup run --topology staged --role decider)?", len(pending), len(futures), waited)
        self.decisions.forget(positions)
        return [f.result() for f in futures]

    async def _emit(self, msgs: list[EventMessage], decided: list[DecisionRecord], time_invalid: dict[int, str]) -> None:
        """Per input partition, its outputs in order and its next offset in one transaction."""
        parts: dict[tuple[str, int], tuple[list, OutputCounts, list]] = {}
        for k, (m, rec) in enumerate(zip(msgs, decided)):
            dest, tags = kafka_output(rec.tags, time_invalid.get(k), self.revisions)
            part = (m.topic(), m.partition())
            got = parts.get(part)
            if got is None:  # not setdefault: its default would be built per record
                got = parts[part] = ([], OutputCounts(), [0])
            outputs, counts, last = got
            outputs.append((self.out[dest], m.key(), m.value(), with_tags(m.headers(), tags)))
            counts.count(dest, rec.tags)
            last[0] = m.offset()
        # the partitions' transactions at once (a producer each): one after another, every input
        # partition added its commit's round trips to every batch's latency
        done = await asyncio.gather(*(self.txns.commit(part, outputs, last[0] + 1)
                                      for part, (outputs, _, last) in parts.items()))
        for ok, (outputs, counts, _) in zip(done, parts.values()):
            if ok:
                self.summary.merge(counts)


def batch_failed(exc: BaseException) -> None:
    """End the process (see the module docstring): faust must not carry on past a failed batch."""
    log.critical("faust stage: batch failed, exiting so that it is read again: %r", exc, exc_info=exc)
    logging.shutdown()
    os._exit(EXIT_BATCH_FAILED)


def app_settings(cfg: Config, **overrides: Any) -> dict:
    """faust.App settings for a streamdedup app: the broker and group from ``cfg.kafka``,
    ``processing_guarantee`` from ``kafka.delivery``, no web server, no topic declarations
    (``streamdedup topics create --topology staged`` makes them), no leader topic.

    ``kafka.librdkafka`` (SASL, SSL) is librdkafka's and cannot be handed to aiokafka: give
    faust's own ``broker_credentials`` in ``overrides`` and leave it empty."""
    k = cfg.kafka
    if k.librdkafka:
        raise StartupError(f"kafka.librdkafka ({', '.join(sorted(k.librdkafka))}) configures librdkafka, which a faust "
                           f"app does not use: pass faust's broker_credentials to create_app and leave it empty")
    settings = {
        "id": f"{k.group_id}.faust",
        "broker": [f"kafka://{h.strip()}" for h in k.bootstrap_servers.split(",")],
        "processing_guarantee": k.delivery,
        "web_enabled": False,
        "topic_allow_declare": False,
        "topic_disable_leader": True,
        "stream_wait_empty": False,
        "consumer_auto_offset_reset": "earliest",
        "producer_linger": 0.005,
        # faust's 60 s session: the partitions of a killed worker would wait a minute for a new owner
        "broker_session_timeout": 10.0,
        "broker_heartbeat_interval": 3.0,
        "datadir": os.path.join(tempfile.gettempdir(), f"streamdedup-faust-{k.group_id}"),
    }
    settings.update(overrides)
    return settings


def build_app(cfg: Config, **overrides: Any) -> Any:
    """A ``faust.App`` (settings: :func:`app_settings`) with the stage attached as ``app.streamdedup_stage``."""
    from streamdedup._optional import require

    faust = require("faust", "faust", "the faust topology")
    settings = app_settings(cfg, **overrides)
    app = faust.App(settings.pop("id"), **settings)
    app.streamdedup_stage = attach(app, cfg)
    return app


def raw_topic(app: Any, *names: str, acks: bool = True) -> Any:
    """A faust topic of raw bytes (keys and values pass through untouched), never declared by faust;
    ``acks=False``: faust never commits its offsets (``Conductor.acks_enabled_for``)."""
    return app.topic(*names, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw", acks=acks)


def attach(app: Any, cfg: Config, name: str = "streamdedup") -> FaustStage:
    """Register the stage's agent on ``app`` (reading ``kafka.input_topics``); returns the stage.

    The app must keep ``stream_wait_empty=False`` (the stage acks nothing: a stopping worker
    waiting for its events to be acked would wait forever) and use the aiokafka driver
    (``kafka://``): the stage's transactions are aiokafka's, under the app's consumer group.
    The input reaches the stage in whole fetches (``runtime.faust.fetch``), not through the
    agent's stream: the agent keeps faust subscribing to the topics and runs the stage.
    """
    from streamdedup.runtime.faust.fetch import route_batches

    if getattr(app.conf, "stream_wait_empty", False):
        raise StartupError("the faust app needs stream_wait_empty=False: the stage commits the input offsets in its own "
                           "transactions and acks nothing, so a stopping worker must not wait for acks")
    stage = FaustStage(cfg, app)
    try:
        route_batches(app, cfg.kafka.input_topics, stage.offer)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    batch = cfg.engine.batch_size

    async def dedup(stream):
        await stage.start()
        try:
            while True:
                msgs = await stage.next_fetches(batch)
                for k in range(0, len(msgs), batch):
                    try:
                        await stage.submit(msgs[k:k + batch])
                    except asyncio.CancelledError:
                        raise  # a stopping worker: an uncommitted batch is read again next time
                    except BaseException as exc:  # noqa: BLE001 - see the module docstring
                        batch_failed(exc)
        finally:
            await stage.stop()

    app.agent(raw_topic(app, *cfg.kafka.input_topics, acks=False), name=name)(dedup)
    return stage
