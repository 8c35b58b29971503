"""The single-index Kafka processor: consume -> pipeline -> produce, as a thin loop.

One process owns the whole index: it consumes all partitions of the input topics, runs each
micro-batch through the pipeline (``kafka.batch``: prepare, decide, route) and hands the
outputs to the delivery state machine (``single.delivery``: transactions, settle, rewind,
replay). Three batches are in flight: batch k + 1 is consumed and decoded on this thread
while k is decided on the decide thread (the engine's kernels release the GIL) and k - 1's
transaction commits on the delivery's worker.

The rule of a failed batch, for every runtime (this one, the staged worker and
decider, file mode): a batch is committed (state or outputs) only after every earlier batch of
the same partitions was decided and committed; an exception in any stage (prepare,
fingerprint, decide, state encode, route) stops the pipeline with its one-line error before
anything later is committed, and a restart replays from the last committed position. Here the
batch already queued behind a failed decide is refused by the engine
(``engine_state.StopsOnFailure``), so its state commit never moves the positions past the
failed one.

Single owner: the RocksDB lock on the state directory admits one processor; a second instance
started with the same state directory waits as a standby (``state.rocks.open_waiting``) and
takes over when the owner dies (static group membership gets it the partitions at once, the
transactional id fences the dead producer). A watchdog (``kafka.supervisor``) restarts the
process when a client call never returns.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.engine.deduplicator import Checkpoint, Deduplicator
from streamdedup.engine.stored import unconfirmed_decisions
from streamdedup.pipeline.decide import warm_up
from streamdedup.pipeline.outputs import OutputCounts
from streamdedup.state.pipelined import PipelinedStore
from streamdedup.state.rocks import open_waiting
from streamdedup.runtime.kafka.batch import KafkaBatch, KafkaPipeline, OutBatch, consume_good, describe
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.single.delivery import Delivery
from streamdedup.runtime.single.idle import IdleClock
from streamdedup.runtime.since import Since
from streamdedup.runtime.single.lost_state import refusal, state_gaps
from streamdedup.runtime.single.rebuild import rebuild
from streamdedup.runtime.kafka.retry import retry
from streamdedup.runtime.kafka.startup import Cluster, check_cluster
from streamdedup.runtime.kafka.limits import check_size_settings
from streamdedup.runtime.kafka.metrics import Metrics
from streamdedup.runtime.kafka.oversize import OutputGuard
from streamdedup.runtime.kafka.queries import QueryTopic
from streamdedup.runtime.kafka.supervisor import Watchdog

log = logging.getLogger(__name__)

#: while a batch fills, how often the loop looks whether the one before it is decided (and
#: sends it): short against kafka.linger_ms, long against a consume call's cost
DECIDED_POLL_S = 0.005


@dataclass
class RunSummary(OutputCounts):
    replayed: int = 0
    batches: int = 0
    aborted_batches: int = 0
    #: queries answered (kafka.queries.topic)
    queries: int = 0
    #: perf_counter() when the first batch started and the last one committed (busy time)
    first_batch_at: float = 0.0
    last_batch_at: float = 0.0

    def add_batch(self, batch: OutBatch) -> None:
        self.add(batch.records, batch.counts, batch.relations, batch.counts.get("revisions", 0))
        self.replayed += batch.counts["replayed"]
        self.batches += 1
        self.first_batch_at = self.first_batch_at or batch.started
        self.last_batch_at = time.perf_counter()


class Processor:
    """Consume, decide, produce. Build it with ``topologies.single_index.build`` or directly."""

    def __init__(self, cfg: Config, state_dir: str, stop_when_idle: float | None = None, clients: Clients | None = None,
                 watchdog: bool = True, lost_state: str | Since = "refuse"):
        """``lost_state``: what to do when the group committed further than the state holds:
        "refuse" (raise :class:`~.lost_state.LostStateError`), "accept" (go on), or a
        :class:`~streamdedup.runtime.since.Since` to rebuild the index from the input first."""
        if not (lost_state in ("refuse", "accept") or isinstance(lost_state, Since)):
            raise ValueError(f"lost_state must be 'refuse', 'accept' or a Since, got {lost_state!r}")
        self.lost_state = lost_state
        self.cfg = cfg
        self.kcfg = cfg.kafka
        self.state_dir = state_dir
        self.stop_when_idle = stop_when_idle
        self.clients = clients or Clients()
        self._stop = False
        self.summary = RunSummary()
        self.metrics = Metrics(self.kcfg.metrics_port, self.kcfg.metrics_host)
        self.watchdog = Watchdog(self.kcfg.stall_restart_s if watchdog else 0)

    def request_stop(self, *_: object) -> None:
        self._stop = True

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

    def _consumer_conf(self) -> dict:
        return client_settings(self.kcfg, {
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
        }, user_wins=True)

    def _producer_conf(self) -> dict:
        # delivery reports only for errors: a success report is a Python callback per record
        # (~1 us each, on whichever thread serves them) that ``Delivery._report`` ignores
        conf = client_settings(self.kcfg, {"linger.ms": 5, "enable.idempotence": True, "delivery.report.only.error": True})
        if self.kcfg.delivery == "exactly_once":
            conf["transactional.id"] = self.kcfg.transactional_id
        return conf

    def _settled(self, batch: OutBatch) -> None:
        self.summary.add_batch(batch)
        self.metrics.batch(batch.records, batch.counts, time.perf_counter() - batch.started, self._engine.indexed_documents,
                           self._engine.evidence_counts)

    def _check_state(self, consumer, engine: Deduplicator, cluster: Cluster) -> None:
        """The lost-state check (``single.lost_state``): refuse, accept, or rebuild from the input."""
        tps = [TopicPartition(t, p) for t in self.kcfg.input_topics for p in range(cluster.partitions[t])]
        committed = retry(lambda: consumer.committed(tps, timeout=10), what="reading the group's committed offsets",
                          deadline_s=self.kcfg.startup_timeout_s, retriable=lambda e: isinstance(e, KafkaException))
        gaps = state_gaps({(tp.topic, tp.partition): tp.offset for tp in committed}, engine.resume_positions())
        if not gaps:
            if isinstance(self.lost_state, Since):
                log.info("--rebuild-from-input: the state holds everything the group committed; nothing to rebuild")
            return
        if self.lost_state == "refuse":
            raise refusal(gaps, self.kcfg.group_id, self.state_dir)
        if self.lost_state == "accept":
            log.warning("the state holds less than group %r committed on %d input partition(s); going on without "
                        "those records in the index (--accept-empty-state)", self.kcfg.group_id, len(gaps))
            return
        r = rebuild(self.cfg, engine, self.clients.consumer, gaps, self.lost_state, self.watchdog.touch)
        if r.records == 0:  # a SINCE at or past the committed offsets: as good as --accept-empty-state
            log.warning("--rebuild-from-input found no records between its SINCE and the offsets group %r committed: "
                        "the index holds none of them, so copies of those records pass as unique", self.kcfg.group_id)
        log.info("index rebuilt from the input: %d records (%d indexed, %d duplicates among them) in %.1f s",
                 r.records, r.indexed, r.duplicates, r.seconds,
                 extra={"rebuilt_records": r.records, "rebuilt_indexed": r.indexed, "rebuilt_duplicates": r.duplicates})

    def run(self) -> RunSummary:
        return self.watchdog.restarting(self._run, self.summary)  # a consumer's fatal error: a new process

    def _run(self) -> RunSummary:
        t0 = time.perf_counter()
        check_size_settings(self.cfg)  # pure: before anything waits on the network
        cluster = check_cluster(self.kcfg, self.clients.admin, revisions=self.cfg.verify.revisions == "topic")
        self.watchdog.start()
        rocks = open_waiting(self.state_dir, self.cfg.state.sync, lambda: self._stop)
        if rocks is None:
            return self.summary
        engine = self._engine = Deduplicator(self.cfg, PipelinedStore(rocks), auto_sizing="full", explicit_confirm=True)
        try:
            warm_up(self.cfg)
            log.info("state open: %d documents indexed", engine.indexed_documents)
            consumer = self.clients.consumer(self._consumer_conf())
            log.info("connecting to %s (librdkafka settings: %s)", self.kcfg.bootstrap_servers, self.kcfg.redacted_conf())
            # the producer first: its init_transactions fences a killed predecessor and aborts
            # its open transaction, whose pending offsets would keep the group's committed
            # offsets unreadable (UNSTABLE_OFFSET_COMMIT) for the lost-state check
            guard = OutputGuard.start(self.cfg, self.clients.admin(client_settings(self.kcfg)))
            delivery = Delivery(consumer, lambda: self.clients.producer({**self._producer_conf(), **guard.producer_conf()}),
                                engine.confirm_outputs, self._settled, self.kcfg.delivery == "exactly_once",
                                self.watchdog.touch, guard, self.watchdog.bounded)
            try:
                self._check_state(consumer, engine, cluster)
                with QueryTopic.of(self.cfg, self.clients, engine.query) as queries:
                    loop = _Loop(self, engine, consumer, delivery, queries)
                    consumer.subscribe(list(self.kcfg.input_topics), on_revoke=loop.on_revoke)
                    loop.run()
            finally:
                self.summary.aborted_batches = delivery.aborted
                delivery.close()
                consumer.close()
        finally:
            self.watchdog.stop()
            self.summary.seconds = time.perf_counter() - t0
            engine.close()
        return self.summary


class _Loop:
    """The main loop of one run: consume a batch, hand it to the decide thread, emit the one before."""

    def __init__(self, proc: Processor, engine: Deduplicator, consumer, delivery: Delivery,
                 queries: QueryTopic | None = None):
        self.proc = proc
        self.queries = queries
        self.consumer = consumer
        self.delivery = delivery
        self.engine = engine
        self.pipeline = KafkaPipeline(proc.cfg, engine, delivery.guard)
        self.decider = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decide")
        self.replay = unconfirmed_decisions(engine)
        self.pending: tuple[KafkaBatch, Future] | None = None  # the batch being decided
        self.closed = False
        self.revocations = 0  # rebalances that took partitions away (consume() drops what it read before one)

    def emit_pending(self) -> bool:
        """Route the decided batch, wait for the previous commit, produce it; False if rewound."""
        out = self._take_pending()
        return out is None or (self.delivery.settle() and self.delivery.emit(out))

    def _take_pending(self) -> OutBatch | None:
        """Route the batch being decided; it joins the decided ones (emitted or not)."""
        if self.pending is None:
            return None
        batch, fut = self.pending
        self.pending = None
        out = self.pipeline.route(batch, fut.result())
        self.delivery.decided(out)
        return out

    def _decide(self, batch: KafkaBatch) -> Checkpoint:
        """Decide thread: the main loop waiting for this is not stalled (``Watchdog.working``)."""
        with self.proc.watchdog.working(lambda: describe("deciding", batch.msgs)):
            return self.pipeline.decide(batch)

    def on_revoke(self, consumer, partitions) -> None:
        """Partitions are taken away (inside consume()): the transaction in flight settles while
        they are still ours; the batch being decided is not emitted. It is in the state, and
        once assigned again its records are re-read from the committed offsets and re-emitted
        from their stored decisions (emitting it too would double them: found by the fake's
        rebalance test)."""
        if self.closed:  # consumer.close() revokes too; _finish has settled everything
            return
        self.revocations += 1
        self._take_pending()
        self.delivery.settle(rewind=False)  # a failed commit needs no seek: the assignment repositions
        self.replay.update(unconfirmed_decisions(self.engine))
        log.info("partitions revoked (%d): decided batches not yet committed are replayed after the assignment",
                 len(partitions))

    def consume(self) -> list:
        """The next batch: up to engine.batch_size records within kafka.linger_ms. The batch
        being decided goes out as soon as it is decided, while this one fills: below the rate
        that fills a batch within the linger, its records would otherwise wait a second linger
        for their transaction (at 3,000 records/s: ~40 ms of a median 127)."""
        n, linger = self.proc.cfg.engine.batch_size, self.proc.kcfg.linger_ms / 1000.0
        if self.pending is None:
            return consume_good(self.consumer, n, linger)
        deadline = time.monotonic() + linger
        msgs: list = []
        while True:
            if self.pending is not None and self.pending[1].done() and not self.emit_pending():
                # rewound to the committed offsets: what this batch read is read again
                msgs = []
                self.replay.update(unconfirmed_decisions(self.engine))
            left = max(0.0, deadline - time.monotonic())
            revoked = self.revocations
            got = consume_good(self.consumer, n - len(msgs), left if self.pending is None else min(left, DECIDED_POLL_S))
            # partitions revoked during the call are read again from the committed offsets
            # once assigned: what was read before it would come twice
            msgs = got if self.revocations != revoked else msgs + got
            if len(msgs) >= n or time.monotonic() >= deadline:
                return msgs

    def run(self) -> None:
        proc, delivery = self.proc, self.delivery
        idle = IdleClock(proc.stop_when_idle, self.consumer)
        clean = False  # the loop ended without an exception: the batch being decided goes out
        try:
            while not proc._stop:
                proc.watchdog.touch()
                # answered on the decide thread, after the batch it is deciding
                if self.queries is not None and (asked := self.queries.serve(lambda f: self.decider.submit(f).result())):
                    proc.summary.queries += asked
                    idle.reset()
                msgs = self.consume()
                if not msgs:
                    if not self.emit_pending() or not delivery.settle():
                        self.replay.update(unconfirmed_decisions(self.engine))
                    if idle.expired():
                        log.info("idle for %.1f s and caught up: stopping", proc.stop_when_idle)
                        break
                    proc.metrics.observe_lag(self.consumer)
                    continue
                idle.reset()
                batch = self.pipeline.prepare(msgs, self.replay)
                fut = self.decider.submit(self._decide, batch)
                if not self.emit_pending():
                    # rewound: the batch being decided is in the state as well (it joins the
                    # unconfirmed ones), and everything since the last commit is replayed
                    self.pending = (batch, fut)
                    self._take_pending()
                    self.replay.update(unconfirmed_decisions(self.engine))
                    continue
                self.pending = (batch, fut)
                proc.metrics.observe_lag(self.consumer)
            clean = True
        finally:
            self._finish(clean)

    def _finish(self, clean: bool) -> None:
        try:
            if self.pending is not None and clean:
                self.emit_pending()
            elif self.pending is not None:
                # let the engine finish its batch before the store closes; that batch's own
                # failure (or the engine's refusal after an earlier one) must not replace the
                # error that stopped the loop
                with contextlib.suppress(Exception):
                    self.pending[1].result()
            self.delivery.settle()
        except KafkaException as exc:
            log.warning("last transaction did not commit (%s); its batch is replayed on restart", exc.args[0])
        finally:
            self.closed = True
            self.decider.shutdown()
