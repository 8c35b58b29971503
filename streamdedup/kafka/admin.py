"""Provisioning the topics named in the config."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from ..config import KafkaConfig


def create_topics(cfg: KafkaConfig, timeout: float | None = None, admin: AdminClient | None = None) -> dict[str, str]:
    """Create input and output topics; existing ones are left alone. Returns topic -> outcome.

    ``timeout`` (seconds) defaults to ``kafka.startup_timeout_s``; ``admin`` is a client to
    reuse (the start-up checks have one).
    """
    if timeout is None:
        timeout = cfg.startup_timeout_s
    if admin is None:
        from .clientlog import client_settings

        admin = AdminClient(client_settings(cfg))
    names = list(dict.fromkeys([*cfg.input_topics, cfg.unique_topic, cfg.duplicates_topic, cfg.dead_letter_topic]))
    futures = admin.create_topics([NewTopic(t, cfg.partitions, cfg.replication_factor) for t in names], request_timeout=timeout)
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

    from ..errors import StreamdedupError

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True, **conf})
    for key, value in records:
        while True:
            try:
                p.produce(topic, value=value, key=key)
                break
            except BufferError:
                p.poll(0.1)
    left = p.flush(timeout)
    if left:
        raise StreamdedupError(f"{left} records to {topic} not delivered within {timeout} s")
