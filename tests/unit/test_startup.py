"""Start-up checks, librdkafka's log rate limit and the one-line fatal errors, without a broker
(the same cases against the real broker: tests/integration/test_hostile.py)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamdedup.cli._fatal import fatal_message
from streamdedup.config import KafkaConfig
from streamdedup.errors import StateError
from streamdedup.runtime.kafka.clientlog import RateLimit
from streamdedup.runtime.kafka.startup import StartupError, check_cluster


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class DownAdmin:
    """An admin client whose metadata requests time out; its error callback reports ``errors``."""

    def __init__(self, conf: dict, clock: Clock, errors: list[KafkaError]):
        self.error_cb = conf["error_cb"]
        self.clock = clock
        self.errors = errors
        self.requests = 0

    def list_topics(self, topic=None, timeout=-1):
        self.requests += 1
        self.clock.t += timeout
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport failure"))

    def poll(self, timeout=0):
        for e in self.errors:
            self.error_cb(e)
        return len(self.errors)


def test_an_unreachable_cluster_fails_at_the_deadline_naming_the_settings() -> None:
    clock = Clock()
    made = []
    refused = KafkaError(KafkaError._TRANSPORT, "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused")

    def new_admin(conf):
        made.append(DownAdmin(conf, clock, [refused]))
        return made[-1]

    with pytest.raises(StartupError) as err:
        check_cluster(KafkaConfig(bootstrap_servers="127.0.0.1:1", startup_timeout_s=12), new_admin, clock)
    msg = str(err.value)
    assert msg.startswith("no Kafka broker answered at 127.0.0.1:1 within 12 s (kafka.bootstrap_servers")
    assert "kafka.startup_timeout_s" in msg and "Connection refused" in msg
    assert made[0].requests == 3 and clock.t == pytest.approx(12)


def test_a_failed_login_ends_the_wait_at_once_without_the_password() -> None:
    clock = Clock()
    denied = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed: Invalid username or password")
    cfg = KafkaConfig(startup_timeout_s=60, librdkafka={"sasl.password": "0123:s3cr3t"})
    with pytest.raises(StartupError) as err:
        check_cluster(cfg, lambda conf: DownAdmin(conf, clock, [denied]), clock)
    assert "authentication to the Kafka cluster" in str(err.value) and "sasl.password" in str(err.value)
    assert "s3cr3t" not in str(err.value) and clock.t < 10


def test_an_invalid_property_is_named() -> None:
    def new_admin(conf):
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, 'No such configuration property: "fetch.max.bytez"'))

    with pytest.raises(StartupError, match=r'^kafka.librdkafka: No such configuration property: "fetch.max.bytez"$'):
        check_cluster(KafkaConfig(), new_admin)


def _record(text: str) -> logging.LogRecord:
    return logging.LogRecord("streamdedup.librdkafka", logging.ERROR, "", 0, "%s [%s] %s", ("FAIL", "rdkafka#consumer-1", text), None)


def test_librdkafka_lines_that_repeat_pass_once_per_period() -> None:
    clock = Clock()
    limit = RateLimit(period_s=60, clock=clock)
    passed = []
    for i in range(1000):
        clock.t = i * 0.06  # 1,000 refusals in a minute, each with its own retry time
        rec = _record(f"127.0.0.1:1/bootstrap: Connect failed: Connection refused (after {i % 7}ms in state CONNECT)")
        if limit.filter(rec):
            passed.append(rec)
    other = _record("Group coordinator lost")
    assert limit.filter(other) and other.facility == "FAIL" and other.client == "rdkafka#consumer-1"
    assert len(passed) == 1 and passed[0].msg.startswith("127.0.0.1:1/bootstrap")
    clock.t = 61
    late = _record("127.0.0.1:1/bootstrap: Connect failed: Connection refused (after 3ms in state CONNECT)")
    assert limit.filter(late) and late.suppressed == 999


def test_a_starting_broker_s_retried_answers_are_debug_lines() -> None:
    limit = RateLimit(period_s=60, clock=Clock())
    rec = _record("[thrd:main]: Failed to acquire idempotence PID from broker 127.0.0.1:9092/1: Broker: "
                  "Coordinator load in progress: retrying")
    assert limit.filter(rec) and rec.levelno == logging.DEBUG and rec.levelname == "DEBUG"
    other = _record("Group coordinator lost")
    assert limit.filter(other) and other.levelno == logging.ERROR


def test_fatal_messages_are_one_line_naming_the_cause() -> None:
    assert fatal_message(StateError("state directory /s: the disk is full")) == "state directory /s: the disk is full"
    full = Exception("IO error: No space left on device: While appending to file: /s/000009.sst: No space left on device")
    assert fatal_message(full).startswith("the disk is full (No space left on device): IO error")
    bad = KafkaException(KafkaError(KafkaError._INVALID_ARG, 'Invalid value "x" for configuration property "acks"'))
    assert fatal_message(bad) == 'kafka.librdkafka: Invalid value "x" for configuration property "acks"'
    assert fatal_message(PermissionError(13, "Permission denied", "/state")) == "Permission denied: /state"
    assert "--debug shows the traceback" in fatal_message(RuntimeError("boom"))
    assert all("\n" not in fatal_message(e) for e in (full, bad, RuntimeError("boom")))
