"""Delivery of decided batches to Kafka: the exactly-once state machine (and at-least-once).

Exactly-once, per batch: its state commit (with the input positions) lands first; then its
outputs and the consumer offsets go out in one transaction. The transaction's commit runs on a
worker thread while the main thread consumes and decides the next batch; the next transaction
begins only after it settled.

States of the machine and what moves it:
- a batch is *decided*: its decisions are in the state, and it joins the unconfirmed ones;
- *emitted*: begin transaction, produce, submit the commit (offsets into the transaction,
  then commit) to the worker, which first waits for the batch's state commit;
- *settled*: the commit succeeded: the committed offsets move on, and every unconfirmed batch
  they cover is confirmed to the engine (its decisions are no longer kept for a replay);
- *failed*: the transaction needs an abort (abort it) or the producer is fenced or fatal (a
  new producer; its ``init_transactions`` aborts what the old one left open); either way the
  consumer is *rewound* to the committed offsets and everything since is re-read: those
  records are below the state's positions and are re-emitted from their stored decisions.
A crash anywhere is the same as *failed* seen from the next process: the state is never behind
Kafka, and records Kafka has not committed are replayed, never decided twice.

At-least-once: outputs are produced and flushed, the state commit is awaited, then the
offsets are committed; a crash repeats at most the batches in flight.

Outputs that cannot be produced (``kafka.oversize``): before producing, every output is
checked against its topic's limit and re-routed to dead letter if it does not fit. A record
the broker refuses anyway shows in its delivery report: the guard remembers its input
position, the transaction fails (librdkafka makes it abortable), and the replay sends that
record's dead letter; when the refusal was for size, the guard first re-reads the topics'
limits and a producer whose batch.size no longer fits them is replaced. At-least-once
re-sends the refused outputs (or their dead letters) at once, before the commit.
"""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streamdedup.errors import StreamdedupError
from streamdedup.runtime.kafka.batch import OutBatch
from streamdedup.runtime.kafka.retry import retry
from streamdedup.runtime.kafka.transactions import Bounded, Transactional, unbounded

log = logging.getLogger(__name__)

#: seconds per commit_transaction call (resumed until the deadline): after the broker refused
#: a record, librdkafka's commit first waits out its whole timeout for the records queued
#: behind the refused one (their sequence has a gap) and only the next call reports the
#: abortable error; a short slice bounds that wait, a healthy commit takes milliseconds
COMMIT_SLICE_S = 5.0


def _kafka_error(exc: BaseException) -> bool:
    return isinstance(exc, KafkaException)


class Delivery:
    """The exactly-once (or at-least-once) state machine over one consumer and producer.

    Args:
        consumer, new_producer: confluent-kafka clients (or fakes with the same methods).
        confirm: the engine's ``confirm_outputs(through)``.
        on_settled: called with each batch whose offsets were committed (counts, metrics).
        touch: tells the watchdog the loop is alive (called while retrying).
        guard: a ``kafka.oversize.OutputGuard``: outputs that cannot be produced go to dead
            letter (without one, such an output stops the processor).
        bounded: runs the transaction's client calls under the watchdog (``Watchdog.bounded``).
    """

    def __init__(self, consumer, new_producer: Callable[[], object], confirm: Callable[[int], None],
                 on_settled: Callable[[OutBatch], None], exactly_once: bool = True, touch: Callable[[], None] = lambda: None,
                 guard=None, bounded: Bounded = unbounded):
        self.consumer = consumer
        self._new_producer = new_producer
        self._confirm = confirm
        self._on_settled = on_settled
        self.exactly_once = exactly_once
        self._touch = touch
        self._bounded = bounded
        self.guard = guard
        self._sending: OutBatch | None = None  # the batch whose delivery reports may arrive
        self._undelivered: list[KafkaError] = []  # at-least-once: errors that are not the record's
        # exactly-once: the transactional rules every confluent-kafka runtime keeps; a fatal error
        # (after a broker restart aborted the open transaction) gets a new producer
        self._tx = Transactional(new_producer, touch, bounded, fenced="replace", pause_s=0.0) if exactly_once else None
        self._plain = None if exactly_once else new_producer()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txn-commit")
        self._in_flight: tuple[OutBatch, Future] | None = None
        #: decided batches whose outputs are not yet covered by committed offsets
        self._unconfirmed: deque[OutBatch] = deque()
        self._committed: dict[tuple[str, int], int] = {}
        self.aborted = 0

    @property
    def producer(self):
        return self._tx.producer if self._tx is not None else self._plain

    def _new(self) -> None:
        """Replace the producer (a transactional one registers its id first)."""
        if self._tx is not None:
            self._tx.start()
        else:
            self._plain = self._new_producer()

    def decided(self, batch: OutBatch) -> None:
        """A batch's decisions are in the state (emitted or not): it waits for its confirmation."""
        if batch.checkpoint.through is not None:
            self._unconfirmed.append(batch)

    def emit(self, batch: OutBatch) -> bool:
        """Produce a batch (in a transaction whose commit runs on the worker); False if rewound."""
        offsets = [TopicPartition(t, p, o) for (t, p), o in batch.offsets.items()]
        if self.guard is not None:
            self.guard.check(batch)
        self._sending = batch
        if not self.exactly_once:
            self._deliver_at_least_once(batch)
            batch.checkpoint.wait_durable()  # the state before the offsets, as with transactions
            self.consumer.commit(offsets=offsets, asynchronous=False)
            if self.guard is not None:
                self.guard.committed(batch.offsets)
            done: Future = Future()
            done.set_result(None)
            self._in_flight = (batch, done)
            return True
        try:
            self._tx.begin()
            self._produce_all(batch)
        except KafkaException as exc:
            return self._failed(exc)
        group = self.consumer.consumer_group_metadata()
        self._in_flight = (batch, self._worker.submit(self._commit, self.producer, offsets, group, batch))
        return True

    def _commit(self, producer, offsets: list, group, batch: OutBatch) -> None:
        """Worker thread: once the batch's state landed, the offsets into the transaction, then the commit."""
        batch.checkpoint.wait_durable()
        # retried (a coordinator moving after a broker restart timed it out in 1 of 5 runs)
        self._tx.commit(offsets, group, COMMIT_SLICE_S, producer)

    def settle(self, rewind: bool = True) -> bool:
        """Wait for the batch in flight; count it and confirm what its offsets cover.

        False if its transaction failed: the consumer was rewound (unless ``rewind`` is False:
        a revocation repositions it anyway), and everything decided since the last commit is
        replayed from the state.
        """
        if self._in_flight is None:
            return True
        batch, fut = self._in_flight
        self._in_flight = None
        try:
            fut.result()
        except KafkaException as exc:
            return self._failed(exc, rewind)
        self._committed.update(batch.offsets)
        if self.guard is not None:
            self.guard.committed(self._committed)
        through = None
        committed = self._committed
        while self._unconfirmed and all(committed.get(tp, -1) >= o for tp, o in self._unconfirmed[0].offsets.items()):
            through = self._unconfirmed.popleft().checkpoint.through
        if through is not None:
            self._confirm(through)
        self._on_settled(batch)
        return True

    def _failed(self, exc: KafkaException, rewind: bool = True) -> bool:
        """A transaction failed: abort or replace the producer, rewind. Returns False."""
        err = exc.args[0]
        self.aborted += 1
        log.warning("%s (%s); rewinding the batch", "transaction aborted" if err.txn_requires_abort() else
                    "producer failed" if err.fatal() else "transaction failed", err)
        # fatal (e.g. fenced after a broker restart aborted the open transaction, whose outputs
        # never became visible), neither, or the abort failed: a new producer replays the batch
        if self._tx.failed(exc):
            self._refresh_limits()  # the abort served the delivery reports: the guard learned what was refused
        if rewind:
            self.rewind()
        return False

    def _refresh_limits(self) -> None:
        """After a size refusal the guard re-reads the topics' limits; a producer whose
        batch.size no longer fits them is replaced (every batch it sends would be refused)."""
        if self.guard is not None and self.guard.refresh():
            log.warning("an output topic's max.message.bytes is below the producer's batch.size: new producer with %s",
                        self.guard.producer_conf())
            self._new()

    def rewind(self) -> None:
        """Seek every assigned partition back to its committed offset (retrying while the broker is away)."""
        consumer = self.consumer
        assigned = consumer.assignment()
        if not assigned:
            return
        committed = retry(lambda: consumer.committed(assigned, timeout=30), what="reading committed offsets",
                          deadline_s=300, retriable=_kafka_error, pause_s=1.0, on_retry=self._touch)
        for tp in committed:
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

    def _report(self, err, msg) -> None:
        """Delivery report (on the thread that flushes: the commit worker, or abort's caller)."""
        if err is None:
            return
        batch = self._sending
        if self.guard is None or batch is None or not self.guard.refused(batch, msg.topic(), msg.key(), msg.value(), err):
            if not self.exactly_once and err.code() not in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                self._undelivered.append(err)

    def _produce_all(self, batch: OutBatch, only: list[int] | None = None) -> None:
        """Produce every output in order (or those at ``only``), waiting out a full local queue
        (one loop: a call per record cost more than the produce itself)."""
        producer = self.producer
        produce = producer.produce
        report = self._report
        outputs = batch.outputs
        for k in range(len(outputs)) if only is None else only:
            topic, key, value, headers = outputs[k]
            refusals = 0
            while True:
                try:
                    produce(topic, value, key, headers=headers, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:
                    # the guard's estimate said it fits and librdkafka disagrees: re-route it
                    # (each refusal escalates: dead letter, truncated, then an error)
                    if self.guard is None or exc.args[0].code() != KafkaError.MSG_SIZE_TOO_LARGE or refusals > 2:
                        raise
                    refusals += 1
                    topic, key, value, headers = self.guard.refused_locally(batch, k, exc.args[0])

    def _deliver_at_least_once(self, batch: OutBatch) -> None:
        """Produce and flush; outputs the broker refused go out again as their dead letters."""
        self._undelivered = []
        only = None
        for _ in range(4):  # output, dead letter, truncated dead letter; the guard raises after that
            self._produce_all(batch, only)
            remaining = self.producer.flush(60)
            if remaining:
                raise StreamdedupError(f"{remaining} records not delivered within 60 s")
            if self._undelivered:
                # not the record's fault (e.g. a timeout): stop; the restart delivers them again
                raise StreamdedupError(f"{len(self._undelivered)} records not delivered: {self._undelivered[0]}")
            self._refresh_limits()
            only = self.guard.resend_refused(batch) if self.guard is not None else []
            if not only:
                return
        raise StreamdedupError("outputs refused by the broker again after their dead letters")

    def close(self) -> None:
        self._worker.shutdown()
        self.producer.flush(10)


__all__ = ["Delivery", "OutBatch"]
