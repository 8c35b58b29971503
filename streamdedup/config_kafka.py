"""The Kafka settings (``kafka.*``): topics, delivery, client pass-through, and the staged
topology's topics. A section of :class:`streamdedup.config.Config`, kept in its own module so each
stays small; import it from ``streamdedup.config``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from streamdedup.config_fields import Frozen, setting
from streamdedup.config_sources import librdkafka_properties


class StagedConfig(Frozen):
    """The staged topology (``streamdedup run --topology staged``): workers and one decider."""

    fingerprints_topic: str = setting("news.fingerprints", "one partition: its order defines which copy came first")
    decisions_topic: str = setting("news.decisions", "at least as many partitions as the input topics have together")
    recent_positions: int = setting(
        200_000, "decided input positions remembered per partition: a re-sent fingerprint gets its first decision",
        "positions", ge=1_000, le=100_000_000)


class QueriesConfig(Frozen):
    """Queries: fingerprint records asking whether a story is in the index, answered without
    indexing them by the index's owner (the single processor, or the staged decider)."""

    topic: str = setting("", "topic of query fingerprint records (`streamdedup fingerprint`); empty = no queries")
    reply_topic: str = setting("news.answers", "where answers go, keyed as their query")
    reveal: Literal["ids", "yes_no"] = setting(
        "ids", "what an answer may say: ids = found, the matched id, relation and estimates; yes_no = found or not only")
    rate_per_client: float = setting(
        20.0, "queries a client (its `client` header) may ask per second, with ten seconds' worth at once; the rest are "
        "answered with an error", "queries/s", gt=0.0, le=1_000_000.0)
    http_token: SecretStr = setting(
        SecretStr(""), "the bearer token of the web inspector's POST /api/query, which relays queries to the topic; "
        "empty = no HTTP queries")


class KafkaConfig(Frozen):
    """The Kafka processor (``streamdedup run`` without ``--input``)."""

    bootstrap_servers: str = setting("127.0.0.1:9092", "the Kafka cluster's bootstrap servers, host:port[,host:port]")
    input_topics: tuple[str, ...] = setting(("news",), "topics the records are read from", min_length=1)
    unique_topic: str = setting("news.unique", "where records judged unique go")
    duplicates_topic: str = setting("news.duplicates", "where duplicates go, tagged with their original")
    dead_letter_topic: str = setting("news.dead-letter", "where records that cannot be judged go, with stage and reason")
    revisions_topic: str = setting("news.revisions", "where revisions go under verify.revisions: topic (used, checked and "
                                   "created only then), tagged with what they revise and what changed")
    group_id: str = setting("streamdedup", "consumer group of the input topics")
    transactional_id: str = setting(
        "streamdedup-single-index", "one per processor role: a standby with the same id fences a zombie")
    delivery: Literal["exactly_once", "at_least_once"] = setting(
        "exactly_once", "exactly_once = outputs and offsets in one transaction; at_least_once = flush, then commit")
    linger_ms: int = setting(50, "time to wait for a micro-batch (engine.batch_size records) to fill", "ms", ge=0, le=60_000)
    partitions: int = setting(3, "partitions of the topics `streamdedup topics create` makes", "partitions", ge=1,
                             le=100_000)
    replication_factor: int = setting(1, "replication factor of the topics it makes", "replicas", ge=1, le=32_767)
    metrics_port: int = setting(0, "Prometheus metrics port; 0 = off", "TCP port", ge=0, le=65535)
    metrics_host: str = setting("127.0.0.1", "address the metrics server binds; 0.0.0.0 = every interface (containers)",
                                 min_length=1)
    stall_restart_s: float = setting(
        180.0, "time without main-loop progress after which the processor restarts itself; 0 = never", "seconds", ge=0.0,
        le=86_400.0)
    startup_timeout_s: float = setting(
        30.0, "time allowed for the start-up checks (broker reachable, authentication, topics exist)", "seconds", gt=0.0,
        le=86_400.0)
    create_topics: bool = setting(False, "create missing input and output topics at start-up instead of failing")
    staged: StagedConfig = StagedConfig()
    queries: QueriesConfig = QueriesConfig()
    librdkafka: dict[str, str | int | float | bool | SecretStr] = Field(
        default_factory=dict,
        description="passed to librdkafka untouched (security.protocol, sasl.*, ...); secret values are never shown")

    @field_validator("librdkafka", mode="before")
    @classmethod
    def _hold_secrets(cls, v: Any) -> Any:
        return librdkafka_properties(v)

    def client_conf(self) -> dict[str, str | int | float | bool]:
        """librdkafka configuration with secrets revealed: the one place they are handed out.

        Callers pass it (adding their own client-specific properties) to confluent-kafka
        clients (``Consumer``, ``Producer``, ``AdminClient``); never log it, log
        :meth:`redacted_conf` instead.

        >>> KafkaConfig(librdkafka={"sasl.password": "0123"}).client_conf()
        {'bootstrap.servers': '127.0.0.1:9092', 'sasl.password': '0123'}
        """
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        for key, value in self.librdkafka.items():
            conf[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        return conf

    def redacted_conf(self) -> dict[str, str | int | float | bool]:
        """:meth:`client_conf` for logs: secret values are ``***``.

        >>> KafkaConfig(librdkafka={"sasl.password": "0123", "security.protocol": "SASL_SSL"}).redacted_conf()
        {'bootstrap.servers': '127.0.0.1:9092', 'sasl.password': '***', 'security.protocol': 'SASL_SSL'}
        """
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        for key, value in self.librdkafka.items():
            conf[key] = "***" if isinstance(value, SecretStr) else value
        return conf
