"""Provisioning the topics named in the config."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.config import KafkaConfig
from streamdedup.pipeline.route import outputs_in_use


def create_topics(cfg: KafkaConfig, timeout: float | None = None, admin: AdminClient | None = None,
                  staged: bool = False, revisions: bool = False) -> dict[str, str]:
    """Create input and output topics; existing ones are left alone. Returns topic -> outcome.

    ``timeout`` (seconds) defaults to ``kafka.startup_timeout_s``; ``admin`` is a client to
    reuse (the start-up checks have one). ``staged`` adds the staged topology's topics: the
    fingerprints topic with one partition, the decisions topic with one partition per input
    partition (as the input topics are once created). ``revisions`` adds the revisions topic
    (``verify.revisions: topic``), made like the other outputs.
    """
    if timeout is None:
        timeout = cfg.startup_timeout_s
    if admin is None:
        from streamdedup.runtime.kafka.clientlog import client_settings

        admin = AdminClient(client_settings(cfg))
    names = list(dict.fromkeys([*cfg.input_topics, *(o.topic(cfg) for o in outputs_in_use(revisions))]))
    out = _create(admin, [NewTopic(t, cfg.partitions, cfg.replication_factor) for t in names], timeout)
    if staged:
        meta = admin.list_topics(timeout=timeout)
        inputs = sum(len(meta.topics[t].partitions) for t in cfg.input_topics)
        out.update(_create(admin, [NewTopic(cfg.staged.fingerprints_topic, 1, cfg.replication_factor),
                                   NewTopic(cfg.staged.decisions_topic, inputs, cfg.replication_factor)], timeout))
    return out


def _create(admin: AdminClient, topics: list, timeout: float) -> dict[str, str]:
    futures = admin.create_topics(topics, request_timeout=timeout)
    out = {}
    for topic, fut in futures.items():
        try:
            fut.result(timeout)
            out[topic] = "created"
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                out[topic] = "exists"
            else:
                raise
    return out


def produce_all(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]], timeout: float = 120.0, **conf) -> None:
    """Produce (key, value) records, waiting out a full local queue; raises if any is undelivered."""
    from confluent_kafka import Producer

    from streamdedup.errors import StreamdedupError

    from streamdedup.runtime.kafka.clientlog import client_logger
    from streamdedup.runtime.kafka.transactions import produce_waiting

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True, "logger": client_logger(), **conf})
    for key, value in records:
        produce_waiting(p, topic, value, key, poll_s=0.1)
    left = p.flush(timeout)
    if left:
        raise StreamdedupError(f"{left} records to {topic} not delivered within {timeout} s")
