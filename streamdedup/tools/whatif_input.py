"""Reading a topic's recent records for ``tune --replay``: read_committed, never committing.

The consumer is assigned its partitions (no subscription, no rebalance) under a throwaway
group id and commits nothing, so the processor's group and its offsets are untouched. Each
partition is read from its start (``--since``: earliest, an offset, -N, a time, an age; default:
its last ``limit`` records) up to its end as it was when the replay began; records are
replayed in timestamp order (then partition, offset), which is the order a single-partition
topic was decided in and the nearest one for several partitions, and at most ``limit`` of them:
the first ``limit`` from ``--since``, or the last ``limit`` without it.
"""

from __future__ import annotations

import time
import uuid
from typing import Callable

import numpy as np
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.errors import StreamdedupError
from streamdedup.tools.whatif import ReplayInput
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.since import Since


class ReplayReadError(StreamdedupError):
    """The topic could not be read (missing, unreachable, or not read to its end in time)."""


def _ranges(consumer, topic: str, since: Since | None, limit: int, timeout: float) -> list[tuple[int, int, int]]:
    """(partition, start, end) of each partition with records to read; ``end`` is its high
    watermark now (records added later are not replayed)."""
    meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        why = meta.error.str() if meta is not None and meta.error is not None else "no partitions"
        raise ReplayReadError(f"topic {topic!r} cannot be replayed: {why}")
    parts = sorted(meta.partitions)
    marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout) for p in parts}
    if since is not None and since.kind == "time":
        found = consumer.offsets_for_times([TopicPartition(topic, p, since.value) for p in parts], timeout=timeout)
        starts = {tp.partition: (tp.offset if tp.offset >= 0 else marks[tp.partition][1]) for tp in found}
    elif since is not None:
        starts = {p: since.start(*marks[p]) for p in parts}
    else:
        starts = {p: marks[p][1] - limit for p in parts}  # the last ``limit`` of each, merged below
    out = []
    for p in parts:
        lo, hi = marks[p]
        start = min(max(starts[p], lo), hi)
        if start < hi:
            out.append((p, start, hi))
    return out


def read_recent(cfg: Config, topic: str, since: Since | None, limit: int, timeout: float = 60.0,
                new_consumer: Callable[[dict], object] = Consumer) -> ReplayInput:
    """Up to ``limit`` committed records of ``topic`` (see the module docstring), as a replay input."""
    conf = client_settings(cfg.kafka, {
        # assign() only and no commits: the group id is a formality, never joined or written
        "group.id": f"{cfg.kafka.group_id}.replay-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True, "auto.offset.reset": "earliest",
    }, user_wins=False)
    consumer = new_consumer(conf)
    got: list[tuple[int, int, int, bytes]] = []  # timestamp, partition, offset, value
    try:
        ranges = _ranges(consumer, topic, since, limit, timeout)
        # from --since, each partition gives at most ``limit`` (the first ``limit`` overall are among them)
        ends = {p: (hi if since is None else min(hi, start + limit)) for p, start, hi in ranges}
        consumer.assign([TopicPartition(topic, p, start) for p, start, _ in ranges])
        todo = set(ends)
        now_ms = int(time.time() * 1000)
        deadline = time.monotonic() + timeout
        while todo:
            if time.monotonic() > deadline:
                raise ReplayReadError(f"topic {topic!r}: partitions {sorted(todo)} not read to their end in {timeout:.0f} s")
            for m in consumer.consume(1000, 0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        todo.discard(m.partition())  # the committed end (past it: aborted records, markers)
                    elif err.fatal():
                        raise KafkaException(err)
                    continue
                p, off = m.partition(), m.offset()
                if p not in todo:
                    continue
                if off < ends[p]:
                    ts_type, ts = m.timestamp()
                    got.append((ts if ts_type else now_ms, p, off, m.value() or b""))
                if off + 1 >= ends[p]:
                    todo.discard(p)
    finally:
        consumer.close()
    got.sort(key=lambda r: r[:3])
    got = got[:limit] if since is not None else got[-limit:]
    return ReplayInput(values=[r[3] for r in got], names=[f"{topic}:{r[1]}:{r[2]}" for r in got],
                       times=np.array([r[0] for r in got], np.int64))
