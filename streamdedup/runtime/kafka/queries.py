"""The query topic: query records read, answered from the index, answers sent (``pipeline.queries``).

The index's owner serves queries between its batches, on the thread that runs them, so a query
sees the index between two batches and never races a decision. Answers go out with an idempotent
producer, and the query topic's offsets are committed once they are delivered: a query is
answered at least once (a crash before the commit answers it again, identically, since
answering changes nothing).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Callable

import orjson
from confluent_kafka import KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.pipeline.fingerprints import FingerprintCodec
from streamdedup.pipeline.queries import Answerer, RateLimit, client_name
from streamdedup.runtime.kafka.batch import consume_good
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.kafka.supervisor import ConsumerFatal
from streamdedup.runtime.kafka.transactions import produce_waiting
from streamdedup.sketch.fingerprint import Fingerprinter

log = logging.getLogger(__name__)

#: queries read and answered at once (one decode and one kernel call)
MAX_QUERIES = 512


class QueryTopic:
    """Serves ``kafka.queries.topic`` for an engine (``engine.query``)."""

    def __init__(self, cfg: Config, clients: Clients, query):
        k, q = cfg.kafka, cfg.kafka.queries
        self.reply_topic = q.reply_topic
        codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
        self.answerer = Answerer(codec, query, q.reveal, RateLimit(q.rate_per_client, time.monotonic))
        self.consumer = clients.consumer(client_settings(k, {
            "group.id": f"{k.group_id}.queries", "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False}, user_wins=True))
        self.producer = clients.producer(client_settings(k, {"linger.ms": 5, "enable.idempotence": True}))
        self.consumer.subscribe([q.topic])
        self.answered = 0
        self.stopped = False  # the query consumer failed for good: no more queries, decisions go on
        log.info("answering queries from %s on %s (reveal: %s)", q.topic, q.reply_topic, q.reveal)

    def serve(self, on_engine: Callable[[Callable[[], list]], list] = lambda f: f()) -> int:
        """Answer the queries waiting now (none: returns at once); how many were answered.
        ``on_engine`` runs the answering where the engine's batches run (the single processor:
        its decide thread, after the batch it is deciding)."""
        if self.stopped:
            return 0
        try:
            msgs = consume_good(self.consumer, MAX_QUERIES, 0)
        except ConsumerFatal as exc:  # the query consumer only: deduplication goes on without queries
            log.error("queries stopped (%s); deduplication goes on; restart the process to answer queries again", exc)
            self.stopped = True
            return 0
        if not msgs:
            return 0
        clients = [client_name(dict(m.headers() or ()).get("client")) for m in msgs]
        values = [m.value() or b"" for m in msgs]
        answers = on_engine(lambda: self.answerer.answer(values, clients))
        failed: list = []
        try:
            for m, a in zip(msgs, answers):
                produce_waiting(self.producer, self.reply_topic, orjson.dumps(a), m.key(),
                                on_delivery=lambda err, _m: failed.append(err) if err is not None else None)
            left = self.producer.flush(30)
        except KafkaException as exc:
            failed.append(exc.args[0])
            left = 0
        if left or failed:
            # a reply topic away or refusing: the queries are read and answered again, later
            log.warning("%d answer(s) not delivered to %s (%s); their queries are read again", left + len(failed),
                        self.reply_topic, failed[0] if failed else "30 s")
            self._rewind(msgs)
            return 0
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as exc:  # answered already: at worst they are answered again
            log.warning("query offsets not committed (%s): those queries may be answered twice", exc.args[0])
        self.answered += len(msgs)
        return len(msgs)

    def _rewind(self, msgs: list) -> None:
        first: dict[tuple[str, int], int] = {}
        for m in msgs:
            tp = (m.topic(), m.partition())
            first[tp] = min(first.get(tp, m.offset()), m.offset())
        for (topic, partition), offset in first.items():
            try:
                self.consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException as exc:  # reassigned meanwhile: the next owner reads them from the commit
                log.warning("query partition %s:%d not rewound (%s)", topic, partition, exc.args[0])

    @staticmethod
    def of(cfg: Config, clients: Clients, query) -> "QueryTopic | contextlib.nullcontext[None]":
        """The query topic's server (a context that closes it), or a context of None when
        ``kafka.queries.topic`` is not set."""
        return QueryTopic(cfg, clients, query) if cfg.kafka.queries.topic else contextlib.nullcontext()

    def __enter__(self) -> "QueryTopic":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(10)
