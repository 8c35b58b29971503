"""An in-process fake of the confluent-kafka calls the processor makes, for the exactly-once
state machine's unit tests only (the integration tests use the real broker).

It keeps what the state machine depends on: partition logs with transactional records
(visible to read_committed readers once committed, never once aborted; an open transaction
blocks readers behind it), consumer-group offsets committed inside transactions, producer
epochs (``init_transactions`` with the same transactional id aborts the open transaction and
fences the old producer), and faults injected into named calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, TopicPartition


class Crash(BaseException):
    """The process dies here (not an Exception: nothing in the processor catches it)."""


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    headers: list | None
    txn: object | None = None  # the open transaction that wrote it; None once decided
    aborted: bool = False


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
        return (1, 1_700_000_000_000 + self._offset)

    def error(self):
        return None


@dataclass
class Broker:
    logs: dict = field(default_factory=dict)  # (topic, partition) -> [Rec]
    groups: dict = field(default_factory=dict)  # group -> {(topic, partition): next offset}
    epochs: dict = field(default_factory=dict)  # transactional id -> epoch
    faults: dict = field(default_factory=dict)  # call name -> [exception to raise, ...]
    calls: dict = field(default_factory=dict)  # call name -> count

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
    def __init__(self, broker: Broker, conf: dict):
        self.b = broker
        self.tid = conf.get("transactional.id")
        self.epoch = -1
        self.txn: list | None = None
        self.offsets: tuple | None = None

    def _check_fenced(self) -> None:
        if self.tid is not None and self.b.epochs.get(self.tid) != self.epoch:
            raise kafka_error(KafkaError._FENCED, "producer fenced by a newer instance", fatal=True)

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
        self.txn, self.offsets = [], None

    def produce(self, topic, value=None, key=None, headers=None) -> None:
        rec = Rec(key, value, list(headers) if headers else None)
        if self.tid is not None:
            self._check_fenced()
            rec.txn = (self.tid, self.epoch)
            self.txn.append(rec)  # type: ignore[union-attr]
        self.b.logs[(topic, 0)].append(rec)

    def poll(self, timeout=None) -> int:
        return 0

    def flush(self, timeout=None) -> int:
        return 0

    def send_offsets_to_transaction(self, offsets, group, timeout=None) -> None:
        self.b._call("send_offsets_to_transaction")
        self._check_fenced()
        self.offsets = (group, [(tp.topic, tp.partition, tp.offset) for tp in offsets])

    def commit_transaction(self, timeout=None) -> None:
        self.b._call("commit_transaction")
        self._check_fenced()
        for r in self.txn or []:
            r.txn = None
        if self.offsets is not None:
            group, offs = self.offsets
            self.b.groups.setdefault(group, {}).update({(t, p): o for t, p, o in offs})
        self.txn, self.offsets = None, None

    def abort_transaction(self, timeout=None) -> None:
        self.b._call("abort_transaction")
        for r in self.txn or []:
            r.txn, r.aborted = None, True
        self.txn, self.offsets = None, None


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
    """The admin calls of the start-up checks: cluster metadata from the broker's logs."""

    def __init__(self, broker: Broker, conf: dict):
        self.b = broker

    def list_topics(self, topic=None, timeout=-1) -> _Metadata:
        self.b._call("list_topics")
        topics: dict = {}
        for t, p in self.b.logs:
            topics.setdefault(t, _TopicMeta({})).partitions[p] = None
        return _Metadata(topics)

    def poll(self, timeout=0) -> int:
        return 0
