"""The single-index Kafka processor: every input record to exactly one of three topics.

One process owns the whole index: it consumes all partitions of the input topics, decides
micro-batches with the engine and writes every record, key and value byte for byte, to the
unique, duplicates or dead-letter topic with ``dedup.*`` headers.

Exactly-once (default): per micro-batch,
1. the engine decides and commits its RocksDB state *with the batch's input offsets*;
2. the outputs and the consumer offsets go out in one Kafka transaction.
If the process dies between 1 and 2, the transaction is aborted (read_committed consumers never
see its records) and the restarted processor re-reads the batch from the committed offsets.
Records below the state's offsets are already in the state: their decisions are read back from
the stored records and emitted again instead of being decided a second time, so the outputs
are those of an uninterrupted run. Step 1 before step 2 means the state is never behind what
Kafka has committed.

Pipelining: step 2's commit (send_offsets_to_transaction + commit_transaction, ~20 ms of
waiting on the broker per batch) runs on a worker thread while the main thread consumes and
decides the next batch; the next transaction begins only after that commit succeeded. If it
failed, the batch decided meanwhile is not emitted: the consumer rewinds to the committed
offsets and both batches are replayed from their stored decisions. The engine is told which
documents have durable outputs only once the committed offsets cover their records, so the
replay set after any crash includes every record Kafka has not committed.

Single owner: the RocksDB lock on the state directory admits one processor; a second instance
started with the same state directory waits as a standby and takes over when the owner dies
(its consumer joins the group, the transactional id fences the dead producer).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from ..config import Config
from ..decisions import DUPLICATE, EMPTY_TEXT_REASON, UNIQUE, BatchDecisions
from ..decode import Decoded, RecordDecoder, Rejected
from ..engine import Decision, Deduplicator
from ..errors import StreamdedupError
from ..scan import FAST, LineScanner, gather_documents
from ..state.pipelined import PipelinedStore
from ..state.rocks import RocksStore
from .metrics import Metrics

log = logging.getLogger("streamdedup.kafka")
#: the tags of every unique record (constant: one list shared by all of them)
UNIQUE_HEADERS = [("dedup.status", b"unique"), ("dedup.duplicate_of", b""), ("dedup.relation", b""), ("dedup.similarity", b"")]


@dataclass
class _Batch:
    """A decided micro-batch on its way out: what to produce and what to count once committed."""

    outputs: list
    offsets: dict  # (topic, partition) -> next offset
    records: int
    counts: dict
    relations: dict
    started: float
    #: engine seq after this batch (confirmed once ``offsets`` are committed), or None
    #: when the engine decided nothing new in it
    through: int | None
    #: the state commit that covers this batch (its transaction must not commit before it)
    state_commit: Future | None = None


@dataclass
class _Prepared:
    """A consumed micro-batch, decoded: dead letters and replays routed, documents ready for the engine."""

    msgs: list
    outputs: list
    docs: list  # positions in msgs of the records the engine decides
    columns: tuple  # (ids, texts, times, sources, offsets) for Deduplicator.process_columns
    next_offsets: dict
    counts: dict
    relations: dict
    started: float


@dataclass
class RunSummary:
    records: int = 0
    unique: int = 0
    duplicates: int = 0
    dead_letter: int = 0
    replayed: int = 0
    batches: int = 0
    aborted_batches: int = 0
    seconds: float = 0.0
    by_relation: dict = field(default_factory=dict)
    #: perf_counter() when the first batch started and the last one committed (busy time)
    first_batch_at: float = 0.0
    last_batch_at: float = 0.0

    def reconciles(self) -> bool:
        return self.unique + self.duplicates + self.dead_letter == self.records


def redacted(conf: dict) -> dict:
    """librdkafka settings for logs: every value hidden (SASL passwords, keys, tokens)."""
    return {k: "***" for k in conf}


def _with(headers: list | None, tags: list) -> list:
    """The record's own headers, then the tags (the tags list itself when it has none)."""
    return tags if not headers else headers + tags


def _duplicate_headers(root_id: str | None, relation: str | None, similarity: float | None, ld_similarity: float | None,
                       matched: str | None) -> list[tuple[str, bytes]]:
    return [
        ("dedup.status", b"duplicate"),
        ("dedup.duplicate_of", (root_id or "").encode()),
        ("dedup.relation", (relation or "").encode()),
        ("dedup.similarity", b"" if similarity is None else f"{similarity:.4f}".encode()),
        ("dedup.ld_similarity", b"" if ld_similarity is None else f"{ld_similarity:.4f}".encode()),
        ("dedup.matched", (matched or "").encode()),
    ]


def _dead_headers(stage: str, reason: str, source: str) -> list[tuple[str, bytes]]:
    return [("dedup.status", b"dead_letter"), ("dedup.stage", stage.encode()),
            ("dedup.reason", reason.encode("utf-8", "replace")[:4000]), ("dedup.source", source.encode())]


def open_state_waiting(path: str, sync: bool, stop: Callable[[], bool], poll_s: float = 0.5) -> RocksStore | None:
    """Open the state; while another processor holds its lock, wait as a standby."""
    announced = False
    while not stop():
        try:
            return RocksStore(path, sync=sync)
        except StreamdedupError as exc:
            if "lock" not in str(exc).lower():
                raise
            if not announced:
                log.info("standby: state %s is owned by another processor; waiting to take over", path)
                announced = True
            time.sleep(poll_s)
    return None


class Processor:
    """Consume, decide, produce. Build it with :func:`topologies.single_index.build`."""

    def __init__(self, cfg: Config, state_dir: str, stop_when_idle: float | None = None):
        self.cfg = cfg
        self.kcfg = cfg.kafka
        self.state_dir = state_dir
        self.stop_when_idle = stop_when_idle
        self.exactly_once = self.kcfg.delivery == "exactly_once"
        self._stop = False
        self.summary = RunSummary()
        self._alive = time.monotonic()
        self.metrics = Metrics(self.kcfg.metrics_port)
        self._topic_index = {t: i for i, t in enumerate(self.kcfg.input_topics)}

    # ------------------------------------------------------------------ lifecycle

    def request_stop(self, *_: object) -> None:
        self._stop = True

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

    def _client_conf(self) -> dict:
        conf = {"bootstrap.servers": self.kcfg.bootstrap_servers}
        conf.update(self.kcfg.librdkafka)
        return conf

    def _source_key(self, topic: str, partition: int) -> int:
        return (self._topic_index.get(topic, 0) << 20) | partition

    def _touch(self) -> None:
        self._alive = time.monotonic()

    def _watchdog(self, limit_s: float) -> None:
        """Restart the process if the main loop stops making progress for ``limit_s``.

        librdkafka's transactional calls take a timeout, yet after a broker restart
        send_offsets_to_transaction was seen blocking for minutes (1 of 3 broker-restart test
        runs). Nothing is lost by starting over: the state is committed and the open
        transaction is aborted by the next producer, so the restarted process replays it.
        """
        while not self._stop:
            time.sleep(2)
            stalled = time.monotonic() - self._alive
            if stalled > limit_s:
                log.error("main loop stalled for %.0f s (a Kafka client call did not return); restarting the process", stalled)
                for h in logging.getLogger("streamdedup").handlers:
                    h.flush()
                os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])

    def run(self) -> RunSummary:
        t0 = time.perf_counter()
        self._touch()
        if self.kcfg.stall_restart_s:
            threading.Thread(target=self._watchdog, args=(self.kcfg.stall_restart_s,), daemon=True, name="watchdog").start()
        rocks = open_state_waiting(self.state_dir, self.cfg.state.sync, lambda: self._stop)
        if rocks is None:
            return self.summary
        # state commits run on their own worker; a batch's transaction commits only after its
        # state commit landed (see _commit), so the state is never behind Kafka
        self._store = store = PipelinedStore(rocks)
        self._decoder = RecordDecoder(self.cfg.input, self.cfg.fingerprint.max_text_bytes)
        self._scanner = LineScanner(self.cfg.input, self.cfg.fingerprint.max_text_bytes, self.cfg.fingerprint.canonical.strip_html)
        engine = Deduplicator(self.cfg, store, long_running=True)
        engine.confirm_outputs_explicitly = True
        engine.warm_up()
        log.info("state open: %d documents indexed", engine.indexed_documents)
        consumer = Consumer({
            **self._client_conf(),
            "group.id": self.kcfg.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": False,
            # Static membership: a restarted (or standby) owner rejoins under the same member id
            # and gets its partitions back at once, instead of waiting out the dead member's
            # session (45 s by default) and a rebalance.
            "group.instance.id": self.kcfg.transactional_id,
            "session.timeout.ms": 10000,
            **self.kcfg.librdkafka,
        })
        log.info("connecting to %s (librdkafka overrides: %s)", self.kcfg.bootstrap_servers, redacted(dict(self.kcfg.librdkafka)))
        self.producer = self._new_producer()
        consumer.subscribe(list(self.kcfg.input_topics))
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txn-commit")
        # three batches at once: k + 1 is consumed and decoded on this thread while k is decided
        # on the decide thread and k - 1's transaction commits on the commit thread
        self._decider = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decide")
        self._in_flight: tuple[_Batch, Future] | None = None
        #: decided batches whose outputs are not yet covered by committed offsets
        self._unconfirmed: deque[_Batch] = deque()
        self._committed: dict[tuple[str, int], int] = {}
        replay = engine.last_batch_decisions()
        pending: tuple[_Prepared, Future] | None = None  # the batch being decided
        last_data = None  # the idle clock starts once partitions are assigned
        clean = False  # the loop ended without an exception: the batch being decided goes out

        def emit_pending() -> bool:
            """Route the decided batch, wait for the previous commit, produce it; False if rewound."""
            nonlocal pending
            if pending is None:
                return True
            prep, fut = pending
            pending = None
            batch = self._route(prep, fut.result())
            return self._settle(engine, consumer) and self._emit(batch, consumer)

        try:
            while not self._stop:
                self._touch()
                msgs = consumer.consume(self.cfg.engine.batch_size, self.kcfg.linger_ms / 1000.0)
                good = []
                for m in msgs:
                    err = m.error()
                    if err is None:
                        good.append(m)
                    elif err.fatal():
                        raise KafkaException(err)
                    else:
                        log.warning("consumer: %s", err)
                if not good:
                    if not emit_pending() or not self._settle(engine, consumer):
                        replay.update(engine.last_batch_decisions())
                    if last_data is None and consumer.assignment():
                        last_data = time.monotonic()
                    if (self.stop_when_idle is not None and last_data is not None
                            and time.monotonic() - last_data > self.stop_when_idle):
                        if self._caught_up(consumer):
                            log.info("idle for %.1f s and caught up: stopping", self.stop_when_idle)
                            break
                        # quiet but behind (a slow fetch, a loaded machine): not idle
                        last_data = time.monotonic()
                    self.metrics.observe_lag(consumer)
                    continue
                last_data = time.monotonic()
                prep = self._prepare(good, engine, replay)
                fut = self._decider.submit(self._engine_step, engine, prep)
                if not emit_pending():
                    # rewound: the batch being decided is in the state as well (it joins the
                    # unconfirmed ones), and everything since the last commit is replayed
                    self._route(prep, fut.result())
                    replay.update(engine.last_batch_decisions())
                    continue
                pending = (prep, fut)
                self.metrics.observe_lag(consumer)
            clean = True
        finally:
            self.summary.seconds = time.perf_counter() - t0
            try:
                try:
                    if pending is not None and clean:
                        emit_pending()
                    elif pending is not None:
                        pending[1].result()  # let the engine finish its batch before the store closes
                    self._settle(engine, consumer)
                except KafkaException as exc:
                    log.warning("last transaction did not commit (%s); its batch is replayed on restart", exc.args[0])
                self._decider.shutdown()
                self._worker.shutdown()
                consumer.close()
            finally:
                self.producer.flush(10)
                engine.close()
        return self.summary

    # ------------------------------------------------------------------ one micro-batch

    @staticmethod
    def _caught_up(consumer: Consumer) -> bool:
        """True when every assigned partition's position is at its high watermark."""
        try:
            for tp in consumer.assignment():
                _, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
                pos = consumer.position([tp])[0].offset
                if pos < 0:
                    committed = consumer.committed([tp], timeout=5)[0].offset
                    pos = committed if committed >= 0 else 0
                if high >= 0 and pos < high:
                    return False
        except KafkaException:
            return False
        return True

    def _new_producer(self) -> Producer:
        conf = {**self._client_conf(), "linger.ms": 5, "enable.idempotence": True}
        if self.exactly_once:
            conf["transactional.id"] = self.kcfg.transactional_id
        producer = Producer(conf)
        if self.exactly_once:
            deadline = time.monotonic() + 300
            while True:
                try:
                    producer.init_transactions(60)
                    break
                except KafkaException as exc:
                    if exc.args[0].retriable() and time.monotonic() < deadline:
                        log.warning("init_transactions: %s; retrying", exc.args[0])
                        self._touch()
                        continue
                    raise
        return producer

    def _prepare(self, msgs, engine: Deduplicator, replay: dict) -> _Prepared:
        """Decode one batch: dead letters and replayed records get their outputs, the rest
        become the engine's columns.

        Values go through the JSON fast path in one call (``scan.LineScanner``); the records it
        leaves go through the Python decoder, which accepts them or gives the dead-letter reason.
        Runs on the main thread while the previous batch is decided: it reads the state's
        positions only to find records decided before a restart or a rewind, and then no
        decision is in flight.
        """
        started = time.perf_counter()
        positions_before = engine.meta.positions
        decode = self._decoder
        values = [m.value() or b"" for m in msgs]
        data, scanned = self._scanner.scan_records(values)
        status = scanned.status.tolist()
        outputs: list = [None] * len(msgs)
        slow: dict[int, Decoded] = {}
        docs: list[int] = []
        default_times: list[int] = []
        sources: list[int] = []
        offsets: list[int] = []
        next_offsets: dict[tuple[str, int], int] = {}
        partitions: dict[tuple[str, int], tuple[int, int]] = {}  # -> (source key, first offset not in the state)
        counts = {"unique": 0, "duplicate": 0, "dead_letter": 0, "replayed": 0}
        relations: dict[str, int] = {}
        now_ms = int(time.time() * 1000)
        for k, m in enumerate(msgs):
            topic, part, off = m.topic(), m.partition(), m.offset()
            tp = (topic, part)
            next_offsets[tp] = off + 1
            known = partitions.get(tp)
            if known is None:
                known = partitions[tp] = (self._source_key(topic, part), int(positions_before.get(f"{topic}:{part}", -1)))
            ts_type, ts = m.timestamp()
            if status[k] != FAST:
                res = decode(values[k], lambda: f"{topic}:{part}:{off}", ts if ts_type else now_ms)
                if type(res) is Rejected:
                    outputs[k] = self._dead_letter(m, res.stage, res.reason, counts)
                    continue
                slow[k] = res
                scanned.slow_mask[k] = True
            if off < known[1]:
                # already decided and in the state: re-emit the stored decision
                counts["replayed"] += 1
                dec = replay.get((known[0], off))
                if dec is None:
                    outputs[k] = self._dead_letter(m, "text", EMPTY_TEXT_REASON, counts)
                else:
                    outputs[k] = self._routed(m, dec, counts, relations)
                continue
            docs.append(k)
            default_times.append(ts if ts_type else now_ms)
            sources.append(known[0])
            offsets.append(off)
        if docs:
            ids, texts, times = gather_documents(data, scanned, np.array(docs, dtype=np.int64), slow,
                                                 self.cfg.fingerprint.canonical, np.array(default_times, dtype=np.int64))
        else:
            ids, texts, times = [], [], np.zeros(0, np.int64)
        columns = (ids, texts, times, np.array(sources, dtype=np.int64), np.array(offsets, dtype=np.int64))
        return _Prepared(msgs, outputs, docs, columns, next_offsets, counts, relations, started)

    def _engine_step(self, engine: Deduplicator, prep: _Prepared) -> tuple[BatchDecisions, int | None, Future | None]:
        """Decide thread: the engine on one batch (its kernels release the GIL, so the main
        thread consumes, produces and commits meanwhile); the batch's seq end and state commit."""
        positions = {f"{t}:{p}": o for (t, p), o in prep.next_offsets.items()}
        decisions = engine.process_columns(*prep.columns, positions)
        return decisions, (engine.meta.next_seq if prep.docs else None), self._store.last_commit()

    def _route(self, prep: _Prepared, step: tuple[BatchDecisions, int | None, Future | None]) -> _Batch:
        """Outputs of the decided documents; the batch joins the ones waiting for their commit."""
        decisions, through, state_commit = step
        kc = self.kcfg
        outputs, counts, relations = prep.outputs, prep.counts, prep.relations
        codes = decisions.codes.tolist()
        for j, k in enumerate(prep.docs):
            m = prep.msgs[k]
            code = codes[j]
            if code == UNIQUE:
                outputs[k] = (kc.unique_topic, m.key(), m.value(), _with(m.headers(), UNIQUE_HEADERS))
                counts["unique"] += 1
            elif code == DUPLICATE:
                # the header fields only: a Decision would also format the reason text
                fields = decisions.duplicate_fields(j)
                outputs[k] = (kc.duplicates_topic, m.key(), m.value(), _with(m.headers(), _duplicate_headers(*fields)))
                counts["duplicate"] += 1
                relations[fields[1]] = relations.get(fields[1], 0) + 1
            else:
                outputs[k] = self._dead_letter(m, "text", EMPTY_TEXT_REASON, counts)
        batch = _Batch(outputs, prep.next_offsets, len(prep.msgs), counts, relations, prep.started, through, state_commit)
        if prep.docs:
            self._unconfirmed.append(batch)
        return batch

    def _routed(self, m, dec: Decision, counts: dict, relations: dict):
        if dec.status == "unique":
            counts["unique"] += 1
            return (self.kcfg.unique_topic, m.key(), m.value(), _with(m.headers(), UNIQUE_HEADERS))
        counts["duplicate"] += 1
        relations[dec.relation] = relations.get(dec.relation, 0) + 1
        return (self.kcfg.duplicates_topic, m.key(), m.value(),
                _with(m.headers(), _duplicate_headers(dec.duplicate_of, dec.relation, dec.similarity, dec.ld_similarity, dec.matched)))

    def _dead_letter(self, m, stage: str, reason: str, counts: dict):
        counts["dead_letter"] += 1
        source = f"{m.topic()}:{m.partition()}:{m.offset()}"
        return (self.kcfg.dead_letter_topic, m.key(), m.value(), _with(m.headers(), _dead_headers(stage, reason, source)))

    def _emit(self, batch: _Batch, consumer: Consumer) -> bool:
        """Produce a batch; exactly-once: in a transaction whose commit runs on the worker thread.

        Returns False if the batch was rewound before its commit started.
        """
        producer = self.producer
        offsets = [TopicPartition(t, p, o) for (t, p), o in batch.offsets.items()]
        if not self.exactly_once:
            self._produce_all(producer, batch.outputs)
            remaining = producer.flush(60)
            if remaining:
                raise StreamdedupError(f"{remaining} records not delivered within 60 s")
            if batch.state_commit is not None:
                # the state before the offsets, as with transactions; by the batch's own future,
                # not store.wait(): the decide thread is using the store meanwhile
                batch.state_commit.result()
            consumer.commit(offsets=offsets, asynchronous=False)
            done: Future = Future()
            done.set_result(None)
            self._in_flight = (batch, done)
            return True
        try:
            producer.begin_transaction()
            self._produce_all(producer, batch.outputs)
        except KafkaException as exc:
            return self._failed(exc, consumer)
        group = consumer.consumer_group_metadata()
        self._in_flight = (batch, self._worker.submit(self._commit, producer, offsets, group, batch.state_commit))
        return True

    def _commit(self, producer: Producer, offsets: list[TopicPartition], group, state_commit: Future | None) -> None:
        """Worker thread: once the batch's state is committed, the offsets into the transaction, then the commit."""
        if state_commit is not None:
            state_commit.result()
        producer.send_offsets_to_transaction(offsets, group, 60)
        self._commit_with_retry(producer)

    def _settle(self, engine: Deduplicator, consumer: Consumer) -> bool:
        """Wait for the batch in flight; count it and confirm what its offsets cover.

        False if its transaction failed: the consumer was rewound, and everything decided
        since the last commit is replayed from the state.
        """
        if self._in_flight is None:
            return True
        batch, fut = self._in_flight
        self._in_flight = None
        try:
            fut.result()
        except KafkaException as exc:
            return self._failed(exc, consumer)
        self._committed.update(batch.offsets)
        through = None
        while self._unconfirmed and all(self._committed.get(tp, -1) >= o for tp, o in self._unconfirmed[0].offsets.items()):
            through = self._unconfirmed.popleft().through
        if through is not None:
            engine.confirm_outputs(through)
        s = self.summary
        s.records += batch.records
        s.unique += batch.counts["unique"]
        s.duplicates += batch.counts["duplicate"]
        s.dead_letter += batch.counts["dead_letter"]
        s.replayed += batch.counts["replayed"]
        s.batches += 1
        s.first_batch_at = s.first_batch_at or batch.started
        s.last_batch_at = time.perf_counter()
        for k, v in batch.relations.items():
            s.by_relation[k] = s.by_relation.get(k, 0) + v
        self.metrics.batch(batch.records, batch.counts, time.perf_counter() - batch.started, engine.indexed_documents)
        return True

    def _failed(self, exc: KafkaException, consumer: Consumer) -> bool:
        """A transaction failed: abort or replace the producer, rewind. Returns False."""
        err = exc.args[0]
        self.summary.aborted_batches += 1
        if err.txn_requires_abort():
            log.warning("transaction aborted (%s); rewinding the batch", err)
            self.producer.abort_transaction(60)
        elif err.fatal():
            # e.g. fenced after a broker restart aborted the open transaction: the batch's
            # outputs never became visible; start a new producer and replay the batch
            log.warning("producer failed (%s); new producer, rewinding the batch", err)
            self.producer = self._new_producer()
        else:
            raise exc
        self._rewind(consumer)
        return False

    @staticmethod
    def _produce_all(producer: Producer, outputs: list) -> None:
        """Produce every output in order, waiting out a full local queue (one loop: a call per
        record cost more than the produce itself)."""
        produce = producer.produce
        for topic, key, value, headers in outputs:
            while True:
                try:
                    produce(topic, value, key, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.1)

    def _commit_with_retry(self, producer: Producer) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                producer.commit_transaction(60)
                return
            except KafkaException as exc:
                err = exc.args[0]
                if err.retriable() and time.monotonic() < deadline:
                    log.warning("commit_transaction retriable error (%s); retrying", err)
                    self._touch()
                    time.sleep(0.5)
                    continue
                raise

    def _rewind(self, consumer: Consumer) -> None:
        """Seek every assigned partition back to its committed offset (retrying while the broker is away)."""
        assigned = consumer.assignment()
        if not assigned:
            return
        deadline = time.monotonic() + 300
        while True:
            try:
                committed = consumer.committed(assigned, timeout=30)
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise
                log.warning("reading committed offsets: %s; retrying", exc.args[0])
                self._touch()
                time.sleep(1)
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else 0
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
