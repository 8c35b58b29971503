"""Record size limits: how librdkafka and the broker count a record, and our size settings
checked against theirs at start-up.

Counted as they count it:

- librdkafka refuses to produce a record whose worst-case wire size is over the producer's
  ``message.max.bytes`` (default 1,000,000): 36 bytes of record framing (its
  ``RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD``), the key, the value, and per header its name and
  value with their zigzag-varint lengths. :func:`record_bytes` is that sum; a unit test pins it
  to librdkafka's own check, byte for byte.
- The broker refuses a record *batch* over the topic's ``max.message.bytes`` (unset: the
  broker's ``message.max.bytes``, 1,048,588 by default). A batch is a 61-byte header plus its
  records, so a record alone in a batch fits when ``record_bytes + 61 <= max.message.bytes``.
  librdkafka does not split a batch the broker refused: every record in it fails. So the
  producer's ``batch.size`` must not exceed the smallest output topic's ``max.message.bytes``
  (:meth:`OutputLimits.producer_conf`); a record larger than ``batch.size`` is still sent,
  alone in its batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from streamdedup.config import Config
from streamdedup.errors import ConfigError

log = logging.getLogger(__name__)

#: librdkafka's worst-case framing of one record (v2): length 5, attributes 1, timestamp
#: delta 10, offset delta 5, key length 5, value length 5, header count 5
RECORD_OVERHEAD = 36
#: a v2 record batch's header; the broker compares the whole batch with max.message.bytes
BATCH_OVERHEAD = 61
#: librdkafka's defaults (CONFIGURATION.md, librdkafka 2.x)
DEFAULT_MESSAGE_MAX_BYTES = 1_000_000
DEFAULT_BATCH_SIZE = 1_000_000
DEFAULT_FETCH_MAX_BYTES = 52_428_800
DEFAULT_RECEIVE_MESSAGE_MAX_BYTES = 100_000_000
#: librdkafka's own margin between fetch.max.bytes and receive.message.max.bytes: a fetch
#: response's framing around the record batches (topic name, partition headers)
FETCH_RESPONSE_OVERHEAD = 512
#: the smallest dead letter we still call one (see oversize.truncated_dead_letter): the
#: position, the original's size and a reason of a few hundred bytes, without key or value.
#: A topic whose max.message.bytes is below this cannot hold our dead letters at all.
MIN_DEAD_LETTER_BYTES = 1024

PRODUCER_LIMIT = "kafka.librdkafka message.max.bytes"


def varint_bytes(n: int) -> int:
    """Length of ``n`` as a zigzag varint (how record v2 writes lengths)."""
    z = n << 1 if n >= 0 else ((-n) << 1) - 1
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def _len(b: bytes | str | None) -> int:
    if b is None:
        return 0
    if isinstance(b, str):
        return len(b) if b.isascii() else len(b.encode("utf-8"))
    return len(b)


def headers_bytes(headers: Iterable[tuple[str, bytes | str | None]] | None) -> int:
    """Headers as librdkafka counts them: per header, name and value with their varint lengths."""
    total = 0
    for name, value in headers or ():
        # the usual case (ASCII str name, bytes value) without _len's calls: this runs for
        # every header of every duplicate and dead letter
        n = len(name) if type(name) is str and name.isascii() else _len(name)
        v = len(value) if type(value) is bytes else _len(value)
        total += n + v + (1 if n < 64 else varint_bytes(n)) + (1 if v < 64 else varint_bytes(v))
    return total


def record_bytes(key: bytes | str | None, value: bytes | str | None, headers=None) -> int:
    """A record's size as librdkafka compares it with ``message.max.bytes``.

    >>> record_bytes(None, b"x" * 100, [("abc", b"12345")])
    146
    """
    return RECORD_OVERHEAD + _len(key) + _len(value) + (headers_bytes(headers) if headers else 0)


def _int_setting(conf: Mapping[str, object], names: tuple[str, ...], default: int) -> tuple[int, bool]:
    """A byte-size librdkafka property (under any of its alias ``names``): (value, explicitly set)."""
    for name in names:
        if name in conf:
            raw = conf[name]
            try:
                if isinstance(raw, bool):
                    raise ValueError
                return int(str(raw).strip()), True
            except ValueError:
                raise ConfigError(f"kafka.librdkafka {name}: {raw!r} is not a whole number of bytes") from None
    return default, False


@dataclass(frozen=True)
class Limit:
    """A destination's limit: the setting, its value, and what is counted against it."""

    setting: str
    bytes: int
    #: counted with the record: 0 for the producer's limit, a batch header for a topic's
    overhead: int = 0

    @property
    def room(self) -> int:
        """The largest :func:`record_bytes` that fits."""
        return self.bytes - self.overhead

    def describe(self, size: int) -> str:
        """``size`` (a :func:`record_bytes`) against this limit, for a dead-letter reason."""
        return f"{size + self.overhead:,} bytes, over {self.setting} ({self.bytes:,})"


@dataclass(frozen=True)
class OutputLimits:
    """What the producer and the output topics accept."""

    #: the producer's message.max.bytes
    producer: int = DEFAULT_MESSAGE_MAX_BYTES
    #: max.message.bytes of output topics, where known (read with :func:`read_topic_limits`)
    topics: Mapping[str, int] = field(default_factory=dict)

    def limit(self, topic: str) -> Limit:
        """The binding limit for one record produced to ``topic``."""
        t = self.topics.get(topic)
        if t is not None and t - BATCH_OVERHEAD < self.producer:
            return Limit(f"max.message.bytes of topic {topic}", t, BATCH_OVERHEAD)
        return Limit(PRODUCER_LIMIT, self.producer)

    def producer_conf(self, librdkafka: Mapping[str, object]) -> dict[str, int]:
        """Producer properties these limits need: ``batch.size`` no larger than the smallest
        known output topic's max.message.bytes (a batch over it is refused whole)."""
        if not self.topics:
            return {}
        configured, _ = _int_setting(librdkafka, ("batch.size",), DEFAULT_BATCH_SIZE)
        smallest = min(self.topics.values())
        return {"batch.size": smallest} if smallest < configured else {}

    def with_topics(self, topics: Mapping[str, int], dead_letter_topic: str) -> "OutputLimits":
        """These limits and the output topics' max.message.bytes; the dead-letter topic must
        hold a truncated dead letter (otherwise a record too large for its topic has no way out)."""
        dead = topics.get(dead_letter_topic)
        if dead is not None and dead - BATCH_OVERHEAD < MIN_DEAD_LETTER_BYTES:
            raise ConfigError(f"max.message.bytes of the dead-letter topic {dead_letter_topic} ({dead:,}) cannot hold "
                              f"a truncated dead letter ({MIN_DEAD_LETTER_BYTES + BATCH_OVERHEAD:,} bytes); raise it, "
                              f"or set kafka.dead_letter_topic to a topic that can")
        return OutputLimits(self.producer, {**self.topics, **topics})


def check_size_settings(cfg: Config) -> OutputLimits:
    """Check the size settings against each other; the producer's limits, or a ConfigError.

    "Cannot work together" means one of these (each error names both settings):

    1. ``input.max_record_bytes`` over the producer's ``message.max.bytes``: records between
       the two pass the input check and are decided, yet no output can carry them; they could
       only ever leave as truncated dead letters, so the input limit promises what the output
       cannot keep. Equal (the defaults, 1,000,000 each) is allowed: a record within ~100
       bytes of the limit (framing, tags, its own key and headers) is the per-record guard's
       case at run time (a dead letter, truncated if need be), not a configuration error.
    2. The consumer cannot receive a record the input accepts: a fetch response carries at
       least one whole record batch, and librdkafka drops any response over
       ``receive.message.max.bytes`` (explicit, or derived: at least fetch.max.bytes + 512).
       The consumer would stall on the first such record. (With librdkafka's rules below and
       rule 1 this leaves only a window of ~100 bytes: receive = fetch + 512 exactly.)
    3. librdkafka's own rules between these properties (it would refuse to create the client
       with a less helpful message): explicit ``fetch.max.bytes`` >= ``message.max.bytes``;
       explicit ``receive.message.max.bytes`` >= ``fetch.max.bytes`` + 512.

    Not errors: ``fetch.max.bytes`` or ``max.partition.fetch.bytes`` below
    ``input.max_record_bytes``. Both are soft in librdkafka: the first record batch of a fetch
    is returned even when larger, and the per-partition size grows until the record fits.
    """
    conf = cfg.kafka.librdkafka
    max_record = cfg.input.max_record_bytes
    producer, _ = _int_setting(conf, ("message.max.bytes",), DEFAULT_MESSAGE_MAX_BYTES)
    if max_record > producer:
        raise ConfigError(
            f"input.max_record_bytes ({max_record:,}) is over {PRODUCER_LIMIT} ({producer:,}): records between the "
            f"two would be accepted but could never be produced; lower input.max_record_bytes or raise message.max.bytes "
            f"(and the output topics' max.message.bytes) to match")
    fetch, fetch_set = _int_setting(conf, ("fetch.max.bytes",), DEFAULT_FETCH_MAX_BYTES)
    if fetch_set and fetch < producer:
        raise ConfigError(f"kafka.librdkafka fetch.max.bytes ({fetch:,}) must be at least {PRODUCER_LIMIT} ({producer:,}) "
                          f"(librdkafka's rule for a consumer)")
    if not fetch_set:
        fetch = max(fetch, producer)  # librdkafka raises it to message.max.bytes
    receive, receive_set = _int_setting(conf, ("receive.message.max.bytes",), DEFAULT_RECEIVE_MESSAGE_MAX_BYTES)
    if receive_set and receive < fetch + FETCH_RESPONSE_OVERHEAD:
        raise ConfigError(f"kafka.librdkafka receive.message.max.bytes ({receive:,}) must be at least fetch.max.bytes "
                          f"({fetch:,}) + {FETCH_RESPONSE_OVERHEAD} (librdkafka's rule)")
    if not receive_set:
        receive = max(receive, fetch + FETCH_RESPONSE_OVERHEAD)
    needed = max_record + RECORD_OVERHEAD + BATCH_OVERHEAD + FETCH_RESPONSE_OVERHEAD
    if receive < needed:
        raise ConfigError(
            f"kafka.librdkafka receive.message.max.bytes ({receive:,}) cannot receive a record of input.max_record_bytes "
            f"({max_record:,}): a fetch response carrying it is about {needed:,} bytes and the consumer would stall on it; "
            f"raise receive.message.max.bytes or lower input.max_record_bytes")
    return OutputLimits(producer)


def read_topic_limits(admin, topics: Iterable[str], timeout: float) -> dict[str, int]:
    """``max.message.bytes`` of each topic, from the broker (``admin`` is a confluent-kafka
    AdminClient or a fake with ``describe_configs``). A topic whose configuration cannot be
    read (missing, not authorised) is left out with a warning: its records are then checked
    against the producer's limit only, and a broker rejection is caught from the delivery
    report instead."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    resources = [ConfigResource(ResourceType.TOPIC, t) for t in dict.fromkeys(topics)]
    out: dict[str, int] = {}
    try:
        futures = admin.describe_configs(resources, request_timeout=timeout)
    except KafkaException as exc:
        log.warning("could not read the output topics' max.message.bytes (%s); using the producer's limit", exc.args[0])
        return out
    for res, fut in futures.items():
        try:
            entries = fut.result(timeout)
        except KafkaException as exc:
            log.warning("could not read max.message.bytes of topic %s (%s); using the producer's limit", res.name, exc.args[0])
            continue
        entry = entries.get("max.message.bytes")
        if entry is not None and entry.value is not None:
            out[res.name] = int(entry.value)
    return out


__all__ = ["BATCH_OVERHEAD", "RECORD_OVERHEAD", "Limit", "OutputLimits", "check_size_settings", "headers_bytes",
           "read_topic_limits", "record_bytes"]
