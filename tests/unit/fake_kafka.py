"""An in-process fake of the confluent-kafka calls the processor makes, for the exactly-once
state machine's unit tests only (the integration tests use the real broker).

It keeps what the state machine depends on: partition logs with transactional records
(visible to read_committed readers once committed, never once aborted; an open transaction
blocks readers behind it), consumer-group offsets committed inside transactions, producer
epochs (``init_transactions`` with the same transactional id aborts the open transaction and
fences the old producer), faults injected into named calls, and record size limits as
librdkafka and the broker apply them: the producer's ``message.max.bytes`` refuses a record
at ``produce()``; a topic's ``max.message.bytes`` (``Broker.max_message_bytes``) refuses a
whole batch (cut by the producer's ``batch.size``) in its records' delivery reports, and the
transaction then fails as librdkafka's does (the first commit call waits out its timeout,
the next one reports the abortable error).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streamdedup.runtime.kafka.limits import BATCH_OVERHEAD, record_bytes


class Crash(BaseException):
    """The process dies here (not an Exception: nothing in the processor catches it)."""


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    headers: list | None
    txn: object | None = None  # the open transaction that wrote it; None once decided
    aborted: bool = False
    ts: int | None = None  # a producer's CreateTime (default: one per offset)


@dataclass
class Msg:
    _topic: str
    _partition: int
    _offset: int
    rec: Rec

    def topic(self):
        return self._topic

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def key(self):
        return self.rec.key

    def value(self):
        return self.rec.value

    def headers(self):
        return self.rec.headers

    def timestamp(self):
        return (1, 1_700_000_000_000 + self._offset if self.rec.ts is None else self.rec.ts)

    def error(self):
        return None


@dataclass
class ErrorEvent:
    """What consume() returns for a client error: a message whose error() is set."""

    err: KafkaError

    def error(self):
        return self.err


@dataclass
class Broker:
    logs: dict = field(default_factory=dict)  # (topic, partition) -> [Rec]
    groups: dict = field(default_factory=dict)  # group -> {(topic, partition): next offset}
    epochs: dict = field(default_factory=dict)  # transactional id -> epoch
    faults: dict = field(default_factory=dict)  # call name -> [exception to raise, ...]
    calls: dict = field(default_factory=dict)  # call name -> count
    #: topic -> max.message.bytes: the broker refuses a batch over it (61 bytes + its records)
    max_message_bytes: dict = field(default_factory=dict)
    #: describe_configs calls answered with the default limit before the above: a limit
    #: lowered at run time, after the processor read them at start-up
    stale_describes: int = 0
    describe_denied: bool = False  # describe_configs is not authorised: the limits cannot be read
    refused: list = field(default_factory=list)  # (topic, key) of every record refused
    #: consume call number -> the error event it returns instead of records
    consumer_events: dict = field(default_factory=dict)

    def create(self, topic: str, partitions: int = 1) -> None:
        for p in range(partitions):
            self.logs.setdefault((topic, p), [])

    def append(self, topic: str, records: list[tuple[bytes | None, bytes]]) -> None:
        for key, value in records:
            self.logs[(topic, 0)].append(Rec(key, value, None))

    def fail(self, call: str, exc: BaseException, after: int = 0) -> None:
        """Raise ``exc`` from the ``after``-th next call of ``call`` (once)."""
        self.faults.setdefault(call, []).append([after, exc])

    def _call(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        pending = self.faults.get(name)
        if pending:
            if pending[0][0] == 0:
                raise pending.pop(0)[1]
            pending[0][0] -= 1

    def read_committed(self, topics: list[str]) -> list[tuple[str, bytes | None, bytes | None, dict]]:
        out = []
        for (topic, _), log in sorted(self.logs.items()):
            if topic in topics:
                out += [(topic, r.key, r.value, dict(r.headers or [])) for r in log if r.txn is None and not r.aborted]
        return out


def kafka_error(code: int, reason: str, **flags) -> KafkaException:
    return KafkaException(KafkaError(code, reason, **flags))


class Producer:
    """Records wait in a queue until flushed (poll, flush, commit); then, per topic, they are
    cut into batches of at most ``batch.size`` bytes with their header (a larger record
    alone), and the broker appends or refuses each batch whole, as librdkafka and Kafka do."""

    def __init__(self, broker: Broker, conf: dict):
        self.b = broker
        self.tid = conf.get("transactional.id")
        self.max_bytes = int(conf.get("message.max.bytes", 1_000_000))
        self.batch_size = int(conf.get("batch.size", 1_000_000))
        self.conf = conf
        #: librdkafka's delivery.report.only.error: no report for a record that was appended
        self.only_errors = str(conf.get("delivery.report.only.error", False)).lower() == "true"
        self.epoch = -1
        self.txn: list | None = None
        self.offsets: tuple | None = None
        self.queue: list = []  # (topic, rec, size, callback) not yet sent
        self.reports: list = []  # (callback, error, msg) not yet served
        self.txn_error: KafkaException | None = None  # the open transaction must be aborted
        self.stalled = False  # the commit call after a refusal already waited out its timeout

    def _check_fenced(self) -> None:
        if self.tid is not None and self.b.epochs.get(self.tid) != self.epoch:
            raise kafka_error(KafkaError._FENCED, "producer fenced by a newer instance", fatal=True)

    def _send(self) -> None:
        queue, self.queue = self.queue, []
        by_topic: dict = {}
        for item in queue:
            by_topic.setdefault(item[0], []).append(item)
        for topic, items in by_topic.items():
            batches: list = []
            for item in items:
                # librdkafka counts the request's framing in batch.size; the batch header is part of it
                if batches and BATCH_OVERHEAD + sum(i[2] for i in batches[-1]) + item[2] <= self.batch_size:
                    batches[-1].append(item)
                else:
                    batches.append([item])
            limit = self.b.max_message_bytes.get(topic)
            for batch in batches:
                refused = limit is not None and BATCH_OVERHEAD + sum(i[2] for i in batch) > limit
                for _, rec, _, callback in batch:
                    self._deliver(topic, rec, callback, refused)

    def _deliver(self, topic: str, rec: Rec, callback, refused: bool) -> None:
        err = None
        if refused:
            err = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
            self.b.refused.append((topic, rec.key))
            if self.tid is not None and self.txn_error is None:
                self.txn_error = kafka_error(KafkaError.MSG_SIZE_TOO_LARGE, "ProduceRequest failed: Broker: Message size "
                                             "too large: current transaction must be aborted", txn_requires_abort=True)
        else:
            if self.tid is not None:
                rec.txn = (self.tid, self.epoch)
                self.txn.append(rec)  # type: ignore[union-attr]
            self.b.logs[(topic, 0)].append(rec)
        if callback is not None and (err is not None or not self.only_errors):
            self.reports.append((callback, err, Msg(topic, 0, -1, rec)))

    def _serve_reports(self) -> None:
        reports, self.reports = self.reports, []
        for callback, err, msg in reports:
            callback(err, msg)

    def init_transactions(self, timeout=None) -> None:
        self.b._call("init_transactions")
        self.epoch = self.b.epochs[self.tid] = self.b.epochs.get(self.tid, 0) + 1
        for log in self.b.logs.values():  # what an older instance left open is aborted
            for r in log:
                if r.txn is not None and r.txn[0] == self.tid:
                    r.txn, r.aborted = None, True

    def begin_transaction(self) -> None:
        self.b._call("begin_transaction")
        self._check_fenced()
        self.txn, self.offsets, self.txn_error, self.stalled = [], None, None, False

    def produce(self, topic, value=None, key=None, headers=None, on_delivery=None) -> None:
        size = record_bytes(key, value, headers)
        if size > self.max_bytes:  # librdkafka's local check
            raise kafka_error(KafkaError.MSG_SIZE_TOO_LARGE, "Unable to produce message: Broker: Message size too large")
        if self.tid is not None:
            self._check_fenced()
        self.queue.append((topic, Rec(key, value, list(headers) if headers else None), size, on_delivery))

    def poll(self, timeout=None) -> int:
        self._send()
        self._serve_reports()
        return 0

    def flush(self, timeout=None) -> int:
        self.b._call("flush")
        return self.poll(timeout)

    def send_offsets_to_transaction(self, offsets, group, timeout=None) -> None:
        self.b._call("send_offsets_to_transaction")
        self._check_fenced()
        self.offsets = (group, [(tp.topic, tp.partition, tp.offset) for tp in offsets])

    def commit_transaction(self, timeout=None) -> None:
        self.b._call("commit_transaction")
        self._check_fenced()
        self.poll()
        if self.txn_error is not None:
            if not self.stalled:  # librdkafka: the flush waits for the records behind the refused one
                self.stalled = True
                raise kafka_error(KafkaError._TIMED_OUT, "Failed to flush all outstanding messages", retriable=True)
            raise self.txn_error
        for r in self.txn or []:
            r.txn = None
        if self.offsets is not None:
            group, offs = self.offsets
            self.b.groups.setdefault(group, {}).update({(t, p): o for t, p, o in offs})
        self.txn, self.offsets = None, None

    def abort_transaction(self, timeout=None) -> None:
        self.b._call("abort_transaction")
        purged = KafkaError(KafkaError._PURGE_QUEUE, "Purged in queue")
        queue, self.queue = self.queue, []
        self.reports += [(cb, purged, Msg(topic, 0, -1, rec)) for topic, rec, _, cb in queue if cb is not None]
        self._serve_reports()
        for r in self.txn or []:
            r.txn, r.aborted = None, True
        self.txn, self.offsets, self.txn_error = None, None, None


class Consumer:
    def __init__(self, broker: Broker, conf: dict):
        self.b = broker
        self.group = conf["group.id"]
        self.positions: dict[tuple[str, int], int] = {}

    def subscribe(self, topics: list[str], on_assign=None, on_revoke=None) -> None:
        self.topics = topics
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.rebalance()

    def rebalance(self) -> None:
        """A new assignment (revoke first, if there was one): every partition resumes from the
        group's committed offset. Called inside consume(), as librdkafka calls the callbacks."""
        if self.positions and self.on_revoke is not None:
            self.on_revoke(self, self.assignment())
        committed = self.b.groups.get(self.group, {})
        self.positions = {tp: committed.get(tp, 0) for tp in self.b.logs if tp[0] in self.topics}
        if self.on_assign is not None:
            self.on_assign(self, self.assignment())

    def consume(self, num_messages=1, timeout=-1) -> list:
        self.b._call("consume")
        event = self.b.consumer_events.pop(self.b.calls["consume"], None)
        if event is not None:
            return [ErrorEvent(event)]
        out: list = []
        for tp, pos in self.positions.items():
            log = self.b.logs[tp]
            while pos < len(log) and len(out) < num_messages:
                r = log[pos]
                if r.txn is not None:
                    break  # the last stable offset: nothing behind an open transaction is visible
                if not r.aborted:
                    out.append(Msg(tp[0], tp[1], pos, r))
                pos += 1
            self.positions[tp] = pos
        if not out:
            time.sleep(min(max(timeout, 0), 0.005))
        return out

    def assignment(self) -> list:
        return [TopicPartition(t, p) for t, p in self.positions]

    def committed(self, partitions, timeout=None) -> list:
        self.b._call("committed")
        got = self.b.groups.get(self.group, {})
        return [TopicPartition(tp.topic, tp.partition, got.get((tp.topic, tp.partition), -1001)) for tp in partitions]

    def seek(self, tp) -> None:
        self.positions[(tp.topic, tp.partition)] = tp.offset

    def assign(self, partitions) -> None:
        """Manual assignment (the rebuild reader): OFFSET_BEGINNING (-2) is the log's start."""
        self.positions = {(tp.topic, tp.partition): max(tp.offset, 0) for tp in partitions}

    def position(self, partitions) -> list:
        return [TopicPartition(tp.topic, tp.partition, self.positions[(tp.topic, tp.partition)]) for tp in partitions]

    def get_watermark_offsets(self, tp, timeout=None, cached=False) -> tuple[int, int]:
        return 0, len(self.b.logs[(tp.topic, tp.partition)])

    def consumer_group_metadata(self):
        return self.group

    def commit(self, offsets=None, asynchronous=True) -> None:
        if offsets is None:  # librdkafka: the current positions
            offsets = [TopicPartition(t, p, pos) for (t, p), pos in self.positions.items()]
        self.b.groups.setdefault(self.group, {}).update({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def close(self) -> None:
        pass


@dataclass
class _TopicMeta:
    partitions: dict
    error: object = None


@dataclass
class _Metadata:
    topics: dict


class Admin:
    """The admin calls of the start-up checks (cluster metadata from the broker's logs) and the
    output topics' max.message.bytes (``Broker.max_message_bytes``)."""

    def __init__(self, broker: Broker, conf: dict):
        self.b = broker

    def describe_configs(self, resources, request_timeout=None) -> dict:
        stale = self.b.stale_describes > 0
        self.b.stale_describes -= stale
        out = {}
        for res in resources:
            fut: Future = Future()
            if (res.name, 0) not in self.b.logs:
                fut.set_exception(kafka_error(KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic or partition"))
            elif self.b.describe_denied:
                fut.set_exception(kafka_error(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed"))
            else:
                value = 1_048_588 if stale else self.b.max_message_bytes.get(res.name, 1_048_588)
                fut.set_result({"max.message.bytes": SimpleNamespace(name="max.message.bytes", value=str(value))})
            out[res] = fut
        return out

    def list_topics(self, topic=None, timeout=-1) -> _Metadata:
        self.b._call("list_topics")
        topics: dict = {}
        for t, p in self.b.logs:
            topics.setdefault(t, _TopicMeta({})).partitions[p] = None
        return _Metadata(topics)

    def poll(self, timeout=0) -> int:
        return 0
