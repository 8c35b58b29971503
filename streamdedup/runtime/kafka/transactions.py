"""The transactional producer's steps, one copy for every Kafka runtime (the single processor's
:mod:`~streamdedup.runtime.single.delivery` and the staged worker): which errors are retried,
producing past a full local queue, starting a transactional producer (which fences a zombie
with the same transactional id), committing a batch's offsets with its outputs, and a failed
transaction's abort (or the new producer it needs).
"""

from __future__ import annotations

import logging
from typing import Callable, Literal, TypeVar

from confluent_kafka import KafkaError, KafkaException

from streamdedup.runtime.kafka.retry import retry

log = logging.getLogger(__name__)
T = TypeVar("T")
#: runs a client call given its timeout (a watchdog's ``bounded``: restarts the process when the
#: call hangs past it); by default just runs it
Bounded = Callable[[str, float, Callable[[], T]], T]


def unbounded(what: str, timeout_s: float, call: Callable[[], T]) -> T:
    """:data:`Bounded` without a watchdog: the call, as it is."""
    return call()


def retriable(exc: BaseException) -> bool:
    """A client error librdkafka says may succeed if the call is repeated."""
    return isinstance(exc, KafkaException) and exc.args[0].retriable()


def requires_abort(exc: KafkaException) -> bool:
    """The transaction failed but the producer lives on: abort it, rewind, produce again."""
    err = exc.args[0]
    return isinstance(err, KafkaError) and err.txn_requires_abort()


def aborted(producer, exc: KafkaException) -> bool:
    """After a failed transaction: whether ``producer`` aborted it and can go on. False when the
    error needs no abort (fatal, or neither abortable nor fatal: a retriable timeout that
    outlived its deadline) or the abort failed too (a broker restarting under load): the caller
    then starts a new producer with the same transactional id, whose ``init_transactions``
    fences this one and aborts what it left open."""
    if not requires_abort(exc):
        return False
    try:
        producer.abort_transaction(60)  # serves the delivery reports too
        return True
    except KafkaException as again:
        log.warning("abort_transaction failed (%s); a new producer takes over", again.args[0])
        return False


def produce_waiting(producer, topic: str, value: bytes | None, key: bytes | None = None, *, poll_s: float = 0.05,
                    **options) -> None:
    """Produce one record; a full local queue (BufferError) is served (delivery reports) and the
    call repeated. ``options``: ``headers``, ``partition``, ``on_delivery`` as confluent-kafka takes them."""
    while True:
        try:
            producer.produce(topic, value, key, **options)
            return
        except BufferError:
            producer.poll(poll_s)


def init_transactions(producer, touch: Callable[[], None], pause_s: float = 0.5) -> None:
    """Register the transactional id (fencing an older producer with the same id), retried while
    the transaction coordinator is away."""
    retry(lambda: producer.init_transactions(60), what="init_transactions", deadline_s=300, retriable=retriable,
          pause_s=pause_s, on_retry=touch)


def commit_offsets(producer, offsets: list, group, touch: Callable[[], None], slice_s: float = 30.0,
                   bounded: Bounded = unbounded) -> None:
    """The consumed offsets into the open transaction, then its commit: each call retried while
    retriable (librdkafka documents both as repeatable), in calls of ``slice_s`` seconds, each
    made through ``bounded`` (after a broker restart librdkafka's send_offsets_to_transaction can
    block past its timeout: :mod:`.supervisor`)."""
    send = "send_offsets_to_transaction"
    retry(lambda: bounded(send, slice_s, lambda: producer.send_offsets_to_transaction(offsets, group, slice_s)),
          what=send, deadline_s=120, retriable=retriable, on_retry=touch)
    retry(lambda: bounded("commit_transaction", slice_s, lambda: producer.commit_transaction(slice_s)),
          what="commit_transaction", deadline_s=120, retriable=retriable, on_retry=touch)


class Transactional:
    """A transactional producer and the one set of rules every confluent-kafka runtime keeps with
    it: started with its transactional id registered (:func:`init_transactions`), a batch begun,
    its offsets committed with its outputs (:func:`commit_offsets`, each call through
    ``bounded``), and after a failure the abort or a new producer (:func:`aborted`).

    ``fenced``: what a fatal error means. ``"replace"`` (the single processor, one per
    transactional id: a fatal error follows a broker restart that aborted the open transaction)
    starts a new producer; ``"raise"`` (a staged worker, whose id names its instance: another
    process with that instance took over) re-raises it, and the runtime ends."""

    def __init__(self, new_producer: Callable[[], object], touch: Callable[[], None], bounded: Bounded = unbounded,
                 fenced: Literal["replace", "raise"] = "replace", pause_s: float = 0.5):
        self._new_producer = new_producer
        self._touch = touch
        self._bounded = bounded
        self._fenced = fenced
        self._pause_s = pause_s
        self.producer = self.start()

    def start(self):
        """A new producer, its transactional id registered (fencing the one before it)."""
        producer = self._new_producer()
        init_transactions(producer, self._touch, self._pause_s)
        self.producer = producer
        return producer

    def begin(self) -> None:
        self.producer.begin_transaction()

    def commit(self, offsets: list, group, slice_s: float = 30.0, producer=None) -> None:
        """The offsets into the open transaction, then its commit (of ``producer``: the one that
        began it, when a worker thread commits while the caller may have replaced it)."""
        commit_offsets(producer or self.producer, offsets, group, self._touch, slice_s, self._bounded)

    def failed(self, exc: KafkaException) -> bool:
        """After a failed transaction: True when the producer aborted it and goes on, False when a
        new one took over (re-raises ``exc`` for a fatal error under ``fenced="raise"``)."""
        if self._fenced == "raise" and exc.args[0].fatal():
            raise exc
        if aborted(self.producer, exc):
            return True
        log.warning("a new transactional producer takes over")
        self.start()
        return False
