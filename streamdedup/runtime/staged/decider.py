"""The staged topology's decider: one owner of the index, deciding on fingerprints alone.

It reads the one-partition fingerprints topic in its order (the order that defines "first
seen"), decides each batch with the engine's decide step, and sends one decision record per
input record to the decisions partition of that record's input partition. Its position in the
fingerprints topic is committed with the state (no consumer-group offsets): a restart resumes
where the state ends and first sends again the decisions whose delivery it had not seen
confirmed (workers skip the ones they already used, ``pending``). A fingerprint whose input
position was decided before (a worker re-sent it after a crash) is answered with the stored
decision (``recent``), never decided again.

Decisions go out with an idempotent producer, not in transactions: a decision sent twice is
harmless (the first one for an offset wins at the worker), and a decision sent before its
state commit landed is made again, identically, from the same state after a crash.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.engine.decisions import UNIQUE, Decision
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.engine.stored import recent_positions, stored_decisions, unconfirmed_decisions
from streamdedup.engine.checkpoint import Source
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline.fingerprints import KIND_FINGERPRINT, FingerprintCodec, decide
from streamdedup.pipeline.decide import warm_up
from streamdedup.pipeline.route import decision_tags
from streamdedup.pipeline.tags import DeadLetterTags
from streamdedup.state.pipelined import PipelinedStore
from streamdedup.state.rocks import open_waiting
from streamdedup.runtime.kafka.batch import consume_good, describe
from streamdedup.runtime.kafka.transactions import produce_waiting
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.kafka.metrics import Metrics
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.kafka.startup import check_cluster
from streamdedup.runtime.kafka.queries import QueryTopic
from streamdedup.runtime.kafka.supervisor import Watchdog
from streamdedup.runtime.kafka.decision_record import DecisionRecord, encode, partition_key
from streamdedup.runtime.staged.recent import RecentPositions
from streamdedup.runtime.kafka.staged_topics import check_staged_topics

log = logging.getLogger(__name__)


@dataclass
class DeciderSummary:
    fingerprints: int = 0
    decided: int = 0
    resent: int = 0
    dead: int = 0
    resent_at_start: int = 0
    batches: int = 0
    queries: int = 0
    seconds: float = 0.0


class Decider:
    def __init__(self, cfg: Config, state_dir: str, stop_when_idle: float | None = None, clients: Clients | None = None,
                 watchdog: bool = True):
        self.cfg, self.kcfg, self.state_dir = cfg, cfg.kafka, state_dir
        self.stop_when_idle = stop_when_idle
        self.clients = clients or Clients()
        self.summary = DeciderSummary()
        self.watchdog = Watchdog(self.kcfg.stall_restart_s if watchdog else 0)
        self.metrics = Metrics(self.kcfg.metrics_port, self.kcfg.metrics_host)
        self._stop = False
        self._unconfirmed: deque = deque()  # [through seq, records not yet delivered]
        self._failed: list = []
        self.queries: QueryTopic | None = None

    def request_stop(self, *_: object) -> None:
        self._stop = True

    def run(self) -> DeciderSummary:
        t0 = time.perf_counter()
        k = self.kcfg
        cluster = check_cluster(k, self.clients.admin, staged=True, revisions=self.cfg.verify.revisions == "topic")
        self.mapping = check_staged_topics(k, cluster.partitions)
        self.watchdog.start()
        rocks = open_waiting(self.state_dir, self.cfg.state.sync, lambda: self._stop)
        if rocks is None:
            return self.summary
        engine = self.engine = Deduplicator(self.cfg, PipelinedStore(rocks), auto_sizing="full", explicit_confirm=True)
        try:
            warm_up(self.cfg)
            self.codec = FingerprintCodec(Fingerprinter(self.cfg.fingerprint))
            if k.queries.topic:
                self.queries = QueryTopic(self.cfg, self.clients, engine.query)
            self.recent = RecentPositions(k.staged.recent_positions)
            self.recent.remember(*recent_positions(engine, k.staged.recent_positions))
            self.source = Source(k.staged.fingerprints_topic, 0)
            self.producer = self.clients.producer(client_settings(k, {"linger.ms": 5, "enable.idempotence": True}))
            consumer = self.clients.consumer(client_settings(k, {
                "group.id": f"{k.group_id}.decider", "enable.auto.commit": False, "enable.partition.eof": False,
                "isolation.level": "read_committed"}, user_wins=True))
            start = engine.resume_positions().get(self.source, OFFSET_BEGINNING)
            consumer.assign([TopicPartition(self.source.topic, 0, start)])
            log.info("decider: %d documents indexed, reading %s from offset %s", engine.indexed_documents,
                     self.source.topic, start if start >= 0 else "the beginning")
            try:
                self._resend_unconfirmed()
                self._loop(consumer)
                self._drain(60)
            finally:
                consumer.close()
                if self.queries is not None:
                    self.summary.queries = self.queries.answered
                    self.queries.close()
        finally:
            self.watchdog.stop()
            self.metrics.close()
            engine.close()
            self.summary.seconds = time.perf_counter() - t0
        return self.summary

    def _resend_unconfirmed(self) -> None:
        """Decisions stored but maybe never delivered (a crash before their confirmation)."""
        again = unconfirmed_decisions(self.engine)
        for (src, offset), d in sorted(again.items(), key=lambda kv: kv[1].seq if kv[1].seq is not None else -1):
            self._send(src, offset, decision_tags(d, f"{src.topic}:{src.partition}:{offset}"))
        self.summary.resent_at_start = len(again)
        self._drain(60)
        self.engine.confirm_outputs()

    def _loop(self, consumer) -> None:
        idle_since = time.monotonic()
        batch, linger = self.cfg.engine.batch_size, self.kcfg.linger_ms / 1000.0
        while not self._stop:
            self.watchdog.touch()
            msgs = consume_good(consumer, batch, linger)
            self._confirm()
            if self.queries is not None and self.queries.serve():
                idle_since = time.monotonic()
            if not msgs:
                if self.stop_when_idle is not None and time.monotonic() - idle_since > self.stop_when_idle:
                    log.info("idle for %.1f s: stopping", self.stop_when_idle)
                    return
                continue
            idle_since = time.monotonic()
            started = time.perf_counter()
            with self.watchdog.working(lambda: describe("deciding", msgs)):
                self._decide([m.value() for m in msgs], msgs[-1].offset() + 1)
            self.metrics.batch(len(msgs), {}, time.perf_counter() - started, self.engine.indexed_documents,
                               self.engine.evidence_counts)
            self.metrics.observe_lag(consumer)

    def _decide(self, values: list[bytes], next_offset: int) -> None:
        """One batch of fingerprint records: decide the new ones, answer the re-sent ones."""
        decoded = self.codec.decode(values)
        n = len(decoded)
        parts = [decoded.sources[i] if i >= 0 else None for i in decoded.source_index.tolist()]
        offsets = decoded.offsets.tolist()
        is_print = (decoded.kinds == KIND_FINGERPRINT).tolist()
        idx = [k for k in range(n) if is_print[k]]
        sorted_out = self.recent.sort_out([parts[k] for k in idx], [offsets[k] for k in idx])
        if sorted_out.before or sorted_out.in_batch:
            fresh = [idx[j] for j in sorted_out.fresh]
            sub = self.codec.decode([values[k] for k in fresh])  # rare: decode the new ones alone
        else:
            fresh, sub = idx, decoded
        cp = decide(self.engine, sub, {self.source: next_offset})
        seqs = cp.decisions.seqs.tolist()
        self.recent.remember([parts[k] for k in fresh], [offsets[k] for k in fresh], seqs)
        decision_of: dict[int, Decision | None] = {}
        codes, revised = cp.decisions.codes.tolist(), cp.decisions.revised.tolist()
        for j, k in enumerate(fresh):
            decision_of[k] = None if codes[j] == UNIQUE and not revised[j] else cp.decisions.decision(j)
        stored = stored_decisions(self.engine, list(sorted_out.before.values()))
        for j, seq in sorted_out.before.items():
            if seq < 0:
                decision_of[idx[j]] = Decision("", "rejected")
            elif seq in stored:
                decision_of[idx[j]] = stored[seq]
            else:  # evicted since: let it through rather than guess (it was decided once already)
                log.warning("re-sent fingerprint %s:%d: its document left the index; sent as unique", parts[idx[j]],
                            offsets[idx[j]])
                decision_of[idx[j]] = None
        for j, first in sorted_out.in_batch.items():
            decision_of[idx[j]] = decision_of[idx[first]]
        self._emit(decoded, parts, offsets, decision_of, cp.through)
        s = self.summary
        s.fingerprints += n
        s.decided += len(fresh)
        s.resent += len(sorted_out.before) + len(sorted_out.in_batch)
        s.dead += len(decoded.dead)
        s.batches += 1

    def _emit(self, decoded, parts, offsets, decision_of, through) -> None:
        tracker = [through, 0]
        self._unconfirmed.append(tracker)
        for k, src in enumerate(parts):
            if src is None:
                continue  # a params announcement
            name = f"{src.topic}:{src.partition}:{offsets[k]}"
            why = decoded.dead.get(k)
            if why is not None:
                tags = DeadLetterTags(why.stage, why.reason, name)
            elif k in decision_of:
                d = decision_of[k]
                tags = None if d is None or d.status == "unique" else decision_tags(d, name)
            else:
                continue
            self._send(src, offsets[k], tags, tracker)

    def _send(self, src: Source, offset: int, tags, tracker: list | None = None) -> None:
        part = self.mapping.get((src.topic, src.partition))
        if part is None:
            raise KafkaException(f"a fingerprint names input partition {src} which is not in kafka.input_topics "
                                 f"{list(self.kcfg.input_topics)}: the workers and the decider run with other input topics")
        value = encode(DecisionRecord(offset, tags))
        if tracker is not None:
            tracker[1] += 1
        on_delivery = (lambda err, _m, t=tracker: self._delivered(err, t)) if tracker is not None else self._report
        produce_waiting(self.producer, self.kcfg.staged.decisions_topic, value, partition_key(src.topic, src.partition),
                        partition=part, on_delivery=on_delivery)

    def _delivered(self, err, tracker: list) -> None:
        if err is not None:
            self._failed.append(err)
        tracker[1] -= 1

    def _report(self, err, _msg) -> None:
        if err is not None:
            self._failed.append(err)

    def _confirm(self) -> None:
        """Confirm to the engine the batches whose decisions were all delivered, in order."""
        self.producer.poll(0)
        if self._failed:
            raise KafkaException(self._failed[0])
        through = None
        while self._unconfirmed and self._unconfirmed[0][1] == 0:
            t = self._unconfirmed.popleft()[0]
            through = t if t is not None else through  # None: the batch indexed nothing
        if through is not None:
            self.engine.confirm_outputs(through)

    def _drain(self, timeout: float) -> None:
        left = self.producer.flush(timeout)
        if left:
            raise KafkaException(f"{left} decisions not delivered within {timeout:g} s")
        self._confirm()
