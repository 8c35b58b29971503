"""Record sizes as librdkafka counts them, and the size settings checked against each other."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from streamdedup import ConfigError, load_config
from streamdedup.runtime.kafka.limits import (BATCH_OVERHEAD, OutputLimits, check_size_settings, read_topic_limits, record_bytes,
                                      varint_bytes)

from .fake_kafka import Admin, Broker

# no bootstrap.servers: librdkafka checks the size in produce() itself, without a broker
QUIET = {"log_level": 0}


def largest_value(producer: Producer, key, headers) -> int:
    """The largest value librdkafka's produce() accepts with this key and these headers."""
    lo, hi = 0, 70_000
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            producer.produce("t", b"x" * mid, key, headers=headers)
            lo = mid
        except KafkaException as exc:
            assert exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
            hi = mid - 1
    producer.purge()
    return lo


@pytest.mark.parametrize("key, headers", [
    (None, None),
    (b"k" * 10, None),
    ("clé", [("h", None)]),
    (b"", [("abc", b"12345"), ("d", b"")]),
    (None, [("dedup.reason", "é" * 40), ("ñame", b"v" * 63), ("n" * 64, b"v" * 64)]),
    (b"key", [("big", b"v" * 8191), ("bigger", b"v" * 8192), ("x" * 300, b"")]),
])
def test_record_bytes_is_librdkafkas_own_count(key, headers) -> None:
    limit = 60_000
    producer = Producer({"message.max.bytes": limit, **QUIET})
    value = largest_value(producer, key, headers)
    assert record_bytes(key, b"x" * value, headers) == limit  # the largest accepted is exactly at the limit


def test_varint_sizes() -> None:
    assert [varint_bytes(n) for n in (0, 63, 64, 8191, 8192, 2**20 - 1, 2**20, -1)] == [1, 1, 2, 2, 3, 3, 4, 1]


def cfg(**env: str):
    return load_config(environ={f"STREAMDEDUP_{k}": v for k, v in env.items()})


def test_the_defaults_work_together() -> None:
    limits = check_size_settings(cfg())
    assert limits.producer == 1_000_000 and limits.limit("any").room == 1_000_000


def test_input_limit_over_the_producer_limit_fails_naming_both() -> None:
    with pytest.raises(ConfigError, match=r"input.max_record_bytes \(2,000,000\).*message.max.bytes \(1,000,000\)"):
        check_size_settings(cfg(INPUT__MAX_RECORD_BYTES="2000000"))
    ok = check_size_settings(cfg(INPUT__MAX_RECORD_BYTES="2000000", KAFKA__LIBRDKAFKA__MESSAGE_MAX_BYTES="2000000"))
    assert ok.producer == 2_000_000


def test_a_receive_limit_below_the_largest_record_fails_naming_both() -> None:
    """librdkafka's own minimum (fetch.max.bytes + 512) leaves no room for the record's framing."""
    with pytest.raises(ConfigError, match=r"receive.message.max.bytes \(1,000,512\).*input.max_record_bytes \(1,000,000\)"):
        check_size_settings(cfg(KAFKA__LIBRDKAFKA__FETCH_MAX_BYTES="1000000",
                                KAFKA__LIBRDKAFKA__RECEIVE_MESSAGE_MAX_BYTES="1000512"))
    Consumer({"group.id": "g", "fetch.max.bytes": 1_000_000, "receive.message.max.bytes": 1_000_512, **QUIET}).close()


def test_soft_fetch_limits_below_the_largest_record_are_allowed() -> None:
    """librdkafka returns a larger first batch and grows the partition fetch size: not errors."""
    check_size_settings(cfg(KAFKA__LIBRDKAFKA__FETCH_MAX_BYTES="1000000",
                            KAFKA__LIBRDKAFKA__MAX_PARTITION_FETCH_BYTES="10000"))


@pytest.mark.parametrize("conf, message", [
    ({"message.max.bytes": 2_000_000, "fetch.max.bytes": 1_000_000}, "fetch.max.bytes"),
    ({"fetch.max.bytes": 2_000_000, "receive.message.max.bytes": 2_000_100}, "receive.message.max.bytes"),
])
def test_librdkafkas_own_rules_are_named(conf, message) -> None:
    """The same combinations make librdkafka refuse to create the consumer (with its own words)."""
    env = {f"KAFKA__LIBRDKAFKA__{k.upper().replace('.', '_')}": str(v) for k, v in conf.items()}
    with pytest.raises(ConfigError, match=message):
        check_size_settings(cfg(INPUT__MAX_RECORD_BYTES="1000", **env))
    with pytest.raises(KafkaException, match=message.replace(".", r"\.")):
        Consumer({"group.id": "g", **conf, **QUIET})


def test_a_size_that_is_not_a_number_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="message.max.bytes: '1MB' is not a whole number"):
        check_size_settings(cfg(KAFKA__LIBRDKAFKA__MESSAGE_MAX_BYTES="1MB"))


def test_the_binding_limit_and_the_batch_size() -> None:
    limits = OutputLimits(1_000_000).with_topics({"small": 100_000, "large": 5_000_000}, "dead")
    small = limits.limit("small")
    assert small.room == 100_000 - BATCH_OVERHEAD and "max.message.bytes of topic small" in small.setting
    assert limits.limit("large").room == 1_000_000 and limits.limit("other").room == 1_000_000
    assert "99,940 bytes, over max.message.bytes of topic small (100,000)" in small.describe(99_879)
    # a batch over the smallest topic's limit would be refused whole
    assert limits.producer_conf({}) == {"batch.size": 100_000}
    assert limits.producer_conf({"batch.size": "50000"}) == {}
    assert OutputLimits(1_000_000).producer_conf({}) == {}


def test_a_dead_letter_topic_too_small_for_any_dead_letter_fails() -> None:
    with pytest.raises(ConfigError, match="max.message.bytes of the dead-letter topic dead \\(900\\)"):
        OutputLimits().with_topics({"dead": 900}, "dead")


def test_topic_limits_are_read_from_the_broker(caplog) -> None:
    b = Broker()
    for t in ("a", "b"):
        b.create(t)
    b.max_message_bytes["a"] = 100_000
    with caplog.at_level(logging.WARNING, "streamdedup.runtime.kafka"):
        got = read_topic_limits(Admin(b, {}), ["a", "b", "missing", "a"], 5.0)
    assert got == {"a": 100_000, "b": 1_048_588}
    assert "max.message.bytes of topic missing" in caplog.text
