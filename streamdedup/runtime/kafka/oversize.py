"""Outputs that cannot be produced go to dead letter; the pipeline goes on.

An output cannot be produced when it is larger than the producer's ``message.max.bytes`` or
its topic's ``max.message.bytes`` (``kafka.limits``), or when the broker refuses that record
(a limit lowered at run time, a compacted topic refusing a record without a key). It goes to
the dead-letter topic instead: stage ``output``, a reason naming its size and the limit, the
original key, value and headers. When that dead letter is too large as well (it carries the
original bytes), a *truncated* dead letter goes instead: the position (``dedup.source``), the
original value's size (``dedup.original_bytes``), the reason, the key if it fits and the first
:data:`TRUNCATED_PREFIX_BYTES` of the value, without the record's own headers. The input
record stays in its topic at that position, until retention.

Decided locally wherever the size is known:

- before the engine (:meth:`OutputGuard.screen`, from ``KafkaPipeline.prepare``): a record
  whose output fits neither the unique nor the duplicates topic is a dead letter before it
  is decided, so the index never holds a document no reader could see;
- before produce (:meth:`OutputGuard.check`, from ``Delivery.emit``): every output against
  its topic's limit (a duplicate's tags are known only then).

A refusal that still happens arrives in a delivery report (:meth:`OutputGuard.refused`): the
record's input position is remembered, the transaction fails, is aborted and replayed, and
on the replay the position goes to dead letter. Each refusal of the same position escalates:
whole dead letter, then truncated, then a fatal error naming the dead-letter topic. So a
record costs at most three aborted transactions, never a loop.

The broker refuses a whole record batch, so a topic limit lowered at run time below the
producer's ``batch.size`` refuses batches of small records too. After a size refusal the
guard re-reads the topics' limits (:meth:`OutputGuard.refresh`): a refused record that fits
the new limit on its own is forgiven once (it was refused with its batch) and the delivery
starts a producer whose ``batch.size`` fits; one that does not fit goes to dead letter.
Without an admin client (or when the limits cannot be read) every refused record goes to
dead letter: nothing is lost, but small records refused with a large one land there too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
from confluent_kafka import KafkaError

from streamdedup.config import Config, KafkaConfig
from streamdedup.errors import StreamdedupError
from streamdedup.pipeline import DEAD_LETTER_DEST, DESTINATIONS, DUPLICATE_DEST
from streamdedup.pipeline.route import DEST_INDEX, outputs_in_use
from streamdedup.pipeline.tags import (MAX_REASON_BYTES, UNIQUE_HEADERS, DeadLetterTags, DuplicateTags, dead_letter_headers,
                             duplicate_headers, parse_headers, passthrough_headers, truncated_dead_letter_headers,
                             with_tags)
from streamdedup.runtime.kafka.batch import OutBatch, source_name
from streamdedup.runtime.kafka.fields import Fields
from streamdedup.runtime.kafka.limits import (RECORD_OVERHEAD, OutputLimits, check_size_settings, headers_bytes, read_topic_limits,
                     record_bytes)

log = logging.getLogger(__name__)

#: delivery-report errors about the record (or its batch): it would be refused again as it is
SIZE_ERRORS = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})
RECORD_ERRORS = SIZE_ERRORS | {KafkaError.INVALID_RECORD}
#: a truncated dead letter keeps this much of the value: enough for an id and the first fields
TRUNCATED_PREFIX_BYTES = 1024
#: a truncated dead letter's reason is cut to this when the full one does not fit
SHORT_REASON_BYTES = 256
TRUNCATED_NOTE = "; dead letter truncated (value cut to a prefix, record headers dropped, dedup.original_bytes is its size)"

Position = tuple[str, int, int]  # an input record: topic, partition, offset


def position(m) -> Position:
    return (m.topic(), m.partition(), m.offset())


@dataclass(frozen=True)
class Refusal:
    """What the broker refused for one input record, and what goes out on its replay."""

    #: the refused output: ``output`` (unique, duplicate or revision), ``dead_letter`` or ``truncated``
    kind: str
    stage: str
    reason: str
    #: where the refused output went and its size (:func:`record_bytes`)
    topic: str = ""
    size: int = 0
    #: refused for its size: possibly with its batch only (see :meth:`OutputGuard.refresh`)
    for_size: bool = False


class OutputGuard:
    """Keeps every output producible: re-routes to (truncated) dead letter what is not."""

    def __init__(self, kcfg: KafkaConfig, limits: OutputLimits, admin=None, revisions: bool = False):
        """``revisions``: the revisions topic is an output (``verify.revisions: topic``)."""
        self.unique_topic, self.duplicates_topic = kcfg.unique_topic, kcfg.duplicates_topic
        self.dead_topic = kcfg.dead_letter_topic
        self.dest_of = {o.topic(kcfg): o.dest for o in outputs_in_use(revisions)}
        #: each destination's topic in ``DESTINATIONS`` order (``DEST_INDEX``); without a revisions
        #: topic no output has that destination, and its slot holds the dead-letter topic
        topic_of = {d: t for t, d in self.dest_of.items()}
        self.dest_topics = tuple(topic_of.get(d, self.dead_topic) for d in DESTINATIONS)
        self._librdkafka = kcfg.librdkafka
        self._admin, self._timeout = admin, kcfg.startup_timeout_s
        self._set_limits(limits)
        # the smallest tags each outcome adds, for screening before the engine
        self._unique_tags = headers_bytes(UNIQUE_HEADERS)
        self._duplicate_tags = headers_bytes(duplicate_headers(DuplicateTags("", "", None, None, "", "")))
        #: input positions whose output the broker refused, until their offsets are committed
        self.refusals: dict[Position, Refusal] = {}
        self._new: list[Position] = []  # refusals not yet re-sent (at-least-once re-sends them at once)
        self._forgiven: set[Position] = set()  # refused once with their batch: the next refusal is theirs
        self._stale = False  # a size refusal since the limits were read

    @classmethod
    def start(cls, cfg: Config, admin=None) -> "OutputGuard":
        """Check the size settings (ConfigError if they cannot work together), read the output
        topics' max.message.bytes with ``admin`` when given, and log the limits in force."""
        k = cfg.kafka
        revisions = cfg.verify.revisions == "topic"
        limits = check_size_settings(cfg)
        if admin is not None:
            limits = limits.with_topics(read_topic_limits(admin, list(cls._outputs(k, revisions)), k.startup_timeout_s),
                                        k.dead_letter_topic)
        guard = cls(k, limits, admin, revisions)
        for topic, lim in guard._limit.items():
            if lim.room < cfg.input.max_record_bytes:
                log.warning("outputs to %s over %s bytes (%s) cannot be produced: they go to %s as dead letters",
                            topic, f"{lim.room:,}", lim.setting, guard.dead_topic)
        return guard

    @staticmethod
    def _outputs(k: KafkaConfig, revisions: bool = False) -> tuple[str, ...]:
        return tuple(o.topic(k) for o in outputs_in_use(revisions))

    def _set_limits(self, limits: OutputLimits) -> None:
        self.limits = limits
        self._limit = {t: limits.limit(t) for t in self.dest_of}
        self._room = {t: lim.room for t, lim in self._limit.items()}

    def producer_conf(self) -> dict:
        """Producer properties the limits need (see ``OutputLimits.producer_conf``): ask again
        for each new producer, they follow :meth:`refresh`."""
        return self.limits.producer_conf(self._librdkafka)

    def refresh(self) -> bool:
        """After a size refusal: re-read the output topics' limits, forgive (once) the refused
        records that fit them on their own, and say whether the producer must be replaced
        (its ``batch.size`` no longer fits a topic)."""
        if not self._stale:
            return False
        self._stale = False
        if self._admin is None:
            return False
        topics = read_topic_limits(self._admin, self.dest_of, self._timeout)
        if not topics:
            return False
        before = self.producer_conf()
        self._set_limits(self.limits.with_topics(topics, self.dead_topic))  # a topic not read keeps its limit
        room = self._room
        for pos, r in list(self.refusals.items()):
            if r.for_size and pos not in self._forgiven and r.size <= room.get(r.topic, self.limits.producer):
                del self.refusals[pos]
                self._forgiven.add(pos)
        log.warning("output topic limits re-read after a refusal: %s",
                    ", ".join(f"{t} {lim.setting} ({lim.bytes:,})" for t, lim in self._limit.items()))
        return self.producer_conf() != before

    def base_sizes(self, fields: Fields) -> np.ndarray:
        """Per consumed record, its output's size before our tags (``record_bytes`` with the
        record's own headers): counted once, for the screen and for the check before produce."""
        n = len(fields.values)
        sizes = np.fromiter(map(len, fields.values), np.int64, n)
        sizes += np.fromiter(map(len, [k or b"" for k in fields.keys]), np.int64, n)
        sizes += RECORD_OVERHEAD
        for k, headers in enumerate(fields.headers):
            if headers:
                sizes[k] += headers_bytes(passthrough_headers(headers))
        return sizes

    def screen(self, base: np.ndarray) -> np.ndarray:
        """Indices of the records (``base``: :meth:`base_sizes`) that can be produced neither as
        unique nor as duplicate."""
        room = self._room
        return np.flatnonzero((base + self._unique_tags > room[self.unique_topic])
                              & (base + self._duplicate_tags > room[self.duplicates_topic]))

    def screen_reason(self, base: int) -> str:
        unique = base + self._unique_tags
        return f"output to topic {self.unique_topic} would be {self._limit[self.unique_topic].describe(unique)}"

    def check(self, batch: OutBatch) -> int:
        """Re-route every output of ``batch`` that cannot be produced; returns how many."""
        refusals, msgs = self.refusals, batch.msgs
        moved = 0
        if refusals:
            for k in range(len(batch.outputs)):
                r = refusals.get(position(msgs[k]))
                if r is not None:
                    self._after_refusal(batch, k, r)
                    moved += 1
        if batch.sizes is None:
            batch.sizes = np.array([record_bytes(key, value, headers) for _, key, value, headers in batch.outputs], np.int64)
            batch.dests = np.array([DEST_INDEX[self.dest_of.get(t, DEAD_LETTER_DEST)] for t, _, _, _ in batch.outputs], np.int8)
        room = np.array([self._room[t] for t in self.dest_topics], np.int64)
        for k in np.flatnonzero(batch.sizes > room[batch.dests]).tolist():
            self._too_large(batch, k, int(batch.sizes[k]))
            moved += 1
        return moved

    def _check_one(self, batch: OutBatch, k: int) -> None:
        topic, key, value, headers = batch.outputs[k]
        size = record_bytes(key, value, headers)
        if size > self._room.get(topic, self.limits.producer):
            self._too_large(batch, k, size)

    def refused(self, batch: OutBatch, topic: str, key, value, err: KafkaError) -> bool:
        """A delivery report's error for (topic, key, value) of ``batch``: remember the input
        position if the error is about the record itself. True if it was."""
        if err.code() not in RECORD_ERRORS:
            return False
        found = False
        for k, out in enumerate(batch.outputs):
            if out[0] != topic or out[2] != value or out[1] != key:
                continue
            pos = position(batch.msgs[k])
            r = self._refusal(out, f"the broker refused it: {err.str()} ({err.name()})")
            if err.code() in SIZE_ERRORS:
                r = replace(r, for_size=pos not in self._forgiven)
                self._stale = True
            self.refusals[pos] = r
            self._new.append(pos)
            found = True
        return found

    def refused_locally(self, batch: OutBatch, k: int, err: KafkaError) -> tuple:
        """librdkafka refused output ``k`` at produce (the size estimate disagreed): re-route it
        now and return what to produce instead."""
        self._after_refusal(batch, k, self._refusal(batch.outputs[k], f"the producer refused it: {err.str()}"))
        return batch.outputs[k]

    def resend_refused(self, batch: OutBatch) -> list[int]:
        """At-least-once: re-route the outputs of ``batch`` refused since the last call (they
        were not written); their indices, to produce again."""
        if not self._new:
            return []
        new, self._new = set(self._new), []
        ks = [k for k, m in enumerate(batch.msgs) if position(m) in new]
        for k in ks:
            r = self.refusals.get(position(batch.msgs[k]))
            if r is not None:
                self._after_refusal(batch, k, r)
            else:  # forgiven by refresh(): as it was, if it fits the limits now
                self._check_one(batch, k)
        return ks

    def committed(self, offsets: dict[tuple[str, int], int]) -> None:
        """Offsets were committed: their records are not replayed again; forget their refusals."""
        self._new.clear()
        if self.refusals:
            self.refusals = {p: r for p, r in self.refusals.items() if p[2] >= offsets.get((p[0], p[1]), -1)}
        if self._forgiven:
            self._forgiven = {p for p in self._forgiven if p[2] >= offsets.get((p[0], p[1]), -1)}

    # -- re-routing ------------------------------------------------------------------------

    def _refusal(self, out: tuple, why: str) -> Refusal:
        topic, key, value, headers = out
        size = record_bytes(key, value, headers)
        if topic != self.dead_topic:
            return Refusal("output", "output", f"output to topic {topic} ({size:,} bytes): {why}", topic, size)
        t = parse_headers(headers)
        kind = "truncated" if t is not None and t.original_bytes is not None else "dead_letter"
        stage = (t.stage if t is not None else None) or "output"
        reason = (t.reason if t is not None else None) or "dead letter"
        return Refusal(kind, stage, f"{reason.removesuffix(TRUNCATED_NOTE)}; its dead letter: {why}", topic, size)

    def _after_refusal(self, batch: OutBatch, k: int, r: Refusal) -> None:
        if r.kind == "output":
            self._to_dead_letter(batch, k, r.reason)
        elif r.kind == "dead_letter":
            self._truncate(batch, k, r.stage, r.reason)
        else:
            raise StreamdedupError(f"the dead-letter topic {self.dead_topic} refused even a truncated dead letter "
                                   f"({r.reason}); check its max.message.bytes and the broker's log")

    def _too_large(self, batch: OutBatch, k: int, size: int) -> None:
        topic, _, _, headers = batch.outputs[k]
        said = f"{self._limit[topic].describe(size)}" if topic in self._limit else f"{size:,} bytes"
        if topic != self.dead_topic:
            self._to_dead_letter(batch, k, f"output to topic {topic} is {said}")
            return
        t = parse_headers(headers)
        stage, reason = (t.stage or "output", t.reason or "") if t is not None else ("output", "")
        self._truncate(batch, k, stage, f"{reason}; the dead letter is {said}")

    def _to_dead_letter(self, batch: OutBatch, k: int, reason: str) -> None:
        m = batch.msgs[k]
        headers = with_tags(m.headers(), dead_letter_headers(DeadLetterTags("output", reason, source_name(m))))
        key, value = m.key(), m.value()
        size = record_bytes(key, value, headers)
        if size > self._room[self.dead_topic]:
            self._truncate(batch, k, "output", f"{reason}; the dead letter is {self._limit[self.dead_topic].describe(size)}")
            return
        self._replace(batch, k, (self.dead_topic, key, value, headers))

    def _truncate(self, batch: OutBatch, k: int, stage: str, reason: str) -> None:
        m = batch.msgs[k]
        key, value = m.key(), m.value() or b""
        tags = DeadLetterTags(stage, reason + TRUNCATED_NOTE, source_name(m))
        room = self._room[self.dead_topic]
        for reason_bytes in (MAX_REASON_BYTES, SHORT_REASON_BYTES):
            headers = truncated_dead_letter_headers(tags, len(value), reason_bytes)
            fixed = record_bytes(None, None, headers)
            if fixed <= room:
                break
        else:
            raise StreamdedupError(f"the dead-letter topic {self.dead_topic} cannot hold even a truncated dead letter "
                                   f"({fixed:,} bytes; {self._limit[self.dead_topic].setting})")
        free = room - fixed
        if key is not None and len(key) > free:
            key = None  # the position still finds the record
        free -= len(key) if key is not None else 0
        prefix = value[:min(TRUNCATED_PREFIX_BYTES, free)]
        self._replace(batch, k, (self.dead_topic, key, prefix, headers))

    def _replace(self, batch: OutBatch, k: int, out: tuple) -> None:
        """Output ``k`` becomes ``out`` (a dead letter): the batch's counts follow."""
        old_topic, _, _, old_headers = batch.outputs[k]
        old = self.dest_of.get(old_topic, DEAD_LETTER_DEST)
        if old != DEAD_LETTER_DEST:
            batch.counts[old] -= 1
            batch.counts[DEAD_LETTER_DEST] += 1
            if old == DUPLICATE_DEST:
                t = parse_headers(old_headers)
                if t is not None and t.relation:
                    batch.relations[t.relation] -= 1
        batch.outputs[k] = out
        if batch.sizes is not None:  # keep check()'s view exact: the dead letter as it is now
            batch.sizes[k] = record_bytes(out[1], out[2], out[3])
            batch.dests[k] = DEST_INDEX[DEAD_LETTER_DEST]
        log.warning("%s: %s", source_name(batch.msgs[k]), parse_headers(out[3]).reason)  # type: ignore[union-attr]


__all__ = ["OutputGuard", "Refusal", "TRUNCATED_PREFIX_BYTES"]
