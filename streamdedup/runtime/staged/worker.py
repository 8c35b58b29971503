"""The staged topology's worker: fingerprint what it reads, route it once decided.

One consumer group over the input topics (scale: one worker per input partition at most).
Per consumed batch: prepare (dead letters sorted out as in every runtime, outputs too large
for any topic included), fingerprint, send one fingerprint record per input record to the
fingerprints topic (idempotent producer), and keep the records pending. The decisions of the
worker's input partitions come back on their decisions partitions; each decided prefix goes
out unchanged with its tags to unique / duplicates / dead-letter (and revisions under
``verify.revisions: topic``) in a transaction that also
commits the input offsets and the decisions offsets (both under the workers' group), so a
crash re-reads exactly what was not emitted, and a rebalance hands over a clean cut.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline import Preparer, output_topics
from streamdedup.pipeline.fingerprints import FingerprintCodec
from streamdedup.pipeline.outputs import OutputCounts
from streamdedup.pipeline.route import kafka_output, revision_dest
from streamdedup.pipeline.tags import with_tags
from streamdedup.runtime.kafka.batch import consume_good, describe
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.kafka.metrics import Metrics
from streamdedup.runtime.kafka.fingerprinting import fingerprint_messages
from streamdedup.runtime.kafka.oversize import OutputGuard
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.kafka.retry import retry
from streamdedup.runtime.kafka.transactions import Transactional, produce_waiting, retriable
from streamdedup.runtime.kafka.startup import check_cluster
from streamdedup.runtime.kafka.supervisor import Watchdog
from streamdedup.runtime.kafka.decision_record import BadDecisionRecord, decode
from streamdedup.runtime.staged.pending import Pending
from streamdedup.runtime.kafka.staged_topics import check_staged_topics

log = logging.getLogger(__name__)
#: batches a worker reads ahead of its decisions (the decider's latency times its rate)
MAX_PENDING_BATCHES = 16


@dataclass
class WorkerSummary(OutputCounts):
    fingerprints_sent: int = 0
    transactions: int = 0
    rewinds: int = 0


class Worker:
    def __init__(self, cfg: Config, stop_when_idle: float | None = None, clients: Clients | None = None,
                 instance: str | None = None, watchdog: bool = True):
        self.cfg, self.kcfg = cfg, cfg.kafka
        self.stop_when_idle = stop_when_idle
        self.clients = clients or Clients()
        self.instance = instance or socket.gethostname()
        self.summary = WorkerSummary()
        self.watchdog = Watchdog(self.kcfg.stall_restart_s if watchdog else 0)
        self.pending: Pending = Pending()
        self.metrics = Metrics(self.kcfg.metrics_port, self.kcfg.metrics_host)
        self._stop = False
        self._paused = False
        self.topics = output_topics(cfg)
        self.revisions = revision_dest(cfg.verify)

    def request_stop(self, *_: object) -> None:
        self._stop = True

    @property
    def name(self) -> str:
        """Transactional id and static group member id: a restart under the same --instance
        fences its predecessor and takes its partitions over at once."""
        return f"{self.kcfg.transactional_id}.worker.{self.instance}"

    @property
    def group_id(self) -> str:
        return f"{self.kcfg.group_id}.workers"

    def run(self) -> WorkerSummary:
        return self.watchdog.restarting(self._run, self.summary)  # a consumer's fatal error: a new process

    def _run(self) -> WorkerSummary:
        t0 = time.perf_counter()
        k = self.kcfg
        cluster = check_cluster(k, self.clients.admin, staged=True, revisions=self.cfg.verify.revisions == "topic")
        self.mapping = check_staged_topics(k, cluster.partitions)
        self.part_of_dec = {v: tp for tp, v in self.mapping.items()}
        self.guard = OutputGuard.start(self.cfg, self.clients.admin(client_settings(k)))
        self.preparer = Preparer(self.cfg)
        self.codec = FingerprintCodec(Fingerprinter(self.cfg.fingerprint))
        self.fp_producer = self.clients.producer(client_settings(k, {"linger.ms": 5, "enable.idempotence": True}))
        self.watchdog.start()
        try:
            # the worker's transactional id names its instance: a fatal error means another process
            # of that instance took over, and this one leaves
            self.out = Transactional(self._transactional_producer, self.watchdog.touch, self.watchdog.bounded, fenced="raise")
            # static membership: a restarted worker (same --instance) gets its partitions back at
            # once instead of after the dead member's session and a rebalance
            self.input = self.clients.consumer(client_settings(k, {
                "group.id": self.group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "isolation.level": "read_committed", "enable.partition.eof": False,
                "group.instance.id": self.name, "session.timeout.ms": 10000,
                # incremental rebalancing: a joining worker takes partitions over without the
                # others dropping theirs (each dropped partition's read-ahead is fingerprinted
                # again by its next owner: two more messages per record)
                "partition.assignment.strategy": "cooperative-sticky"}, user_wins=True))
            self.decisions = self.clients.consumer(client_settings(k, {
                "group.id": f"{self.group_id}.decisions-reader", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "isolation.level": "read_committed", "enable.partition.eof": False}, user_wins=True))
            self.fp_producer.produce(k.staged.fingerprints_topic, self.codec.encode_params(), partition=0)
            self.input.subscribe(list(k.input_topics), on_assign=self._on_assign, on_revoke=self._on_revoke)
            try:
                self._loop()
            finally:
                self.input.close()
                self.decisions.close()
                self.fp_producer.flush(10)
        finally:
            self.watchdog.stop()
            self.metrics.close()
            self.summary.seconds = time.perf_counter() - t0
        return self.summary

    # -- assignment ------------------------------------------------------------------------

    def _on_assign(self, consumer, partitions) -> None:
        if self._paused:  # incremental assignment: new partitions read-ahead alike, paused with the rest
            consumer.pause(partitions)
        tps = [(p.topic, p.partition) for p in partitions]
        self._take(tps)
        log.info("worker %s: assigned %s", self.instance, ", ".join(f"{t}:{p}" for t, p in tps))

    def _take(self, tps: list[tuple[str, int]]) -> None:
        """Lanes for ``tps`` from their committed offsets; the decisions partitions from theirs."""
        dec_topic = self.kcfg.staged.decisions_topic
        want = [TopicPartition(t, p) for t, p in tps] + [TopicPartition(dec_topic, self.mapping[tp]) for tp in tps]
        committed = retry(lambda: self.input.committed(want, timeout=10), what="reading committed offsets",
                          deadline_s=self.kcfg.startup_timeout_s, retriable=retriable)
        got = {(c.topic, c.partition): c.offset for c in committed}
        for tp in tps:
            floor = got[tp]
            if floor < 0:
                floor = self.input.get_watermark_offsets(TopicPartition(*tp), timeout=10)[0]
            self.pending.assign(tp, floor)
        self._assign_decisions({(dec_topic, self.mapping[tp]): got[(dec_topic, self.mapping[tp])] for tp in tps})

    def _assign_decisions(self, start: dict[tuple[str, int], int]) -> None:
        """Read the decisions partitions of ``start`` from their offsets (committed, or the
        beginning), leaving the others where they are: re-assigning a partition without an
        offset would put it at auto.offset.reset and skip the decisions in between."""
        current = {(tp.topic, tp.partition) for tp in self.decisions.assignment()}
        again = [TopicPartition(t, p) for t, p in start if (t, p) in current]
        if again:
            self.decisions.incremental_unassign(again)
        if start:
            self.decisions.incremental_assign([TopicPartition(t, p, o if o >= 0 else OFFSET_BEGINNING)
                                               for (t, p), o in start.items()])

    def _on_revoke(self, consumer, partitions) -> None:
        dropped = sum(self.pending.drop((p.topic, p.partition)) for p in partitions)
        dec_topic = self.kcfg.staged.decisions_topic
        current = {(tp.topic, tp.partition) for tp in self.decisions.assignment()}
        gone = [TopicPartition(dec_topic, self.mapping[(p.topic, p.partition)]) for p in partitions]
        gone = [tp for tp in gone if (tp.topic, tp.partition) in current]
        if gone:
            self.decisions.incremental_unassign(gone)
        log.info("worker %s: revoked %d partitions (%d records not emitted: the next owner re-reads them)",
                 self.instance, len(partitions), dropped)

    # -- the loop --------------------------------------------------------------------------

    def _loop(self) -> None:
        idle_since = time.monotonic()
        batch, linger = self.cfg.engine.batch_size, self.kcfg.linger_ms / 1000.0
        while not self._stop:
            self.watchdog.touch()
            self._backpressure(batch)
            msgs = consume_good(self.input, batch, linger)
            if msgs:
                with self.watchdog.working(lambda: describe("fingerprinting", msgs)):
                    self._fingerprint(msgs)
            decided = consume_good(self.decisions, 4 * batch, 0 if msgs else linger)
            self._offer(decided)
            emitted = self._emit()
            if msgs or decided or emitted or self.pending.waiting():
                idle_since = time.monotonic()
            elif self.stop_when_idle is not None and time.monotonic() - idle_since > self.stop_when_idle:
                log.info("idle for %.1f s: stopping (%s)", self.stop_when_idle, self._describe())
                return

    def _describe(self) -> str:
        """Where each lane stands (for the idle-stop line: a stuck lane shows here)."""
        pos = {(tp.topic, tp.partition): tp.offset for tp in self.input.position(self.input.assignment())}
        return "; ".join(f"{t}:{p} floor {self.pending.floor((t, p))} position {pos.get((t, p))} waiting "
                         f"{self.pending.waiting((t, p))}" for t, p in self.pending.parts()) or "no partitions"

    def _backpressure(self, batch: int) -> None:
        """Read ahead of the decisions by at most MAX_PENDING_BATCHES batches: the records wait
        in memory, and a worker that dies re-sends everything it read but did not emit. The
        input is paused, not left unpolled, so the worker stays in its group while it waits."""
        waiting = self.pending.waiting()
        if not self._paused and waiting >= MAX_PENDING_BATCHES * batch:
            self._paused = True
            self.input.pause(self.input.assignment())
        elif self._paused and waiting <= MAX_PENDING_BATCHES * batch // 2:
            self._paused = False
            self.input.resume(self.input.assignment())

    def _fingerprint(self, msgs: list) -> None:
        consumed = time.perf_counter()
        n = len(msgs)
        time_invalid: dict[int, str] = {}
        values = fingerprint_messages(msgs, self.preparer, self.guard, self.codec, time_invalid)
        for k, m in enumerate(msgs):
            self.pending.add((m.topic(), m.partition()), m.offset(), (m, consumed, time_invalid.get(k)))
        topic = self.kcfg.staged.fingerprints_topic
        for value in values:
            produce_waiting(self.fp_producer, topic, value, partition=0)
        self.fp_producer.poll(0)
        self.summary.fingerprints_sent += n

    def _offer(self, decided: list) -> None:
        for m in decided:
            tp = self.part_of_dec.get(m.partition())
            try:
                rec = decode(m.value())
            except BadDecisionRecord as exc:
                raise BadDecisionRecord(f"{m.topic()}:{m.partition()}:{m.offset()}: {exc}") from None
            if tp is None or m.key() != f"{tp[0]}:{tp[1]}".encode():
                raise BadDecisionRecord(f"decision at {m.topic()}:{m.partition()}:{m.offset()} is for input "
                                        f"{(m.key() or b'').decode(errors='replace')}, expected {tp}: the decider runs "
                                        f"with other kafka.input_topics")
            if self.pending.has(tp):
                self.pending.offer(tp, rec.offset, rec, m.offset())

    def _emit(self) -> int:
        """Produce every decided prefix in one transaction with the offsets; how many records."""
        outputs = []
        counts = OutputCounts()
        offsets = []
        dec_topic = self.kcfg.staged.decisions_topic
        oldest = None
        for tp in self.pending.parts():
            released = self.pending.release(tp)
            if not released:
                continue
            oldest = min(oldest or released[0][0][1], released[0][0][1])
            for (m, _, why_time), rec in released:
                dest, headers = kafka_output(rec.tags, why_time, self.revisions)
                counts.count(dest, rec.tags)
                outputs.append((self.topics[dest], m.key(), m.value(), with_tags(m.headers(), headers)))
            offsets.append(TopicPartition(tp[0], tp[1], self.pending.floor(tp)))
            resume = self.pending.decisions_resume(tp)
            if resume is not None:
                offsets.append(TopicPartition(dec_topic, self.mapping[tp], resume))
        if not outputs or not self._transaction(outputs, offsets):
            return 0
        # latency inside the worker: consumed -> fingerprint -> decider -> decision -> committed
        self.metrics.batch(len(outputs), {**counts.sent, "revisions": counts.revisions}, time.perf_counter() - oldest, None)
        self.metrics.observe_lag(self.input)
        self.summary.merge(counts)
        self.summary.transactions += 1
        return len(outputs)

    def _transaction(self, outputs: list, offsets: list) -> bool:
        """True if committed; False if aborted (the lanes are rewound)."""
        tx = self.out
        try:
            tx.begin()
            for topic, key, value, headers in outputs:
                produce_waiting(tx.producer, topic, value, key, headers=headers)
            tx.commit(offsets, self.input.consumer_group_metadata())
            return True
        except KafkaException as exc:
            if not exc.args[0].fatal():
                log.warning("worker %s: transaction failed (%s); re-reading from the committed offsets", self.instance,
                            exc.args[0])
            tx.failed(exc)  # a fatal error (fenced: another worker took this one's id) ends the worker here
            self.summary.rewinds += 1
            self._rewind()
            return False

    def _transactional_producer(self):
        """The outputs' producer (``Transactional`` registers its transactional id)."""
        return self.clients.producer({**client_settings(self.kcfg, {
            "linger.ms": 5, "enable.idempotence": True, "transactional.id": self.name}),
            **self.guard.producer_conf()})

    def _rewind(self) -> None:
        """After an aborted transaction: every lane again from its committed offsets."""
        tps = list(self.pending.parts())
        for tp in tps:
            self.pending.drop(tp)
        self._take(tps)
        for tp in tps:
            self.input.seek(TopicPartition(tp[0], tp[1], self.pending.floor(tp)))
