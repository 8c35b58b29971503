"""The newest records of a topic for the overview: headers and timestamps only, read_committed.

Each partition is read from ``limit / partitions`` offsets before its end to its end (one
assign, one pass): values are never decoded, so ten thousand records cost the fetch and the
header parsing. Offsets count transaction markers too, so a tail holds somewhat fewer records
than ``limit``. The record time is the Kafka timestamp (the processor's: when it was decided).
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, TopicPartition

from streamdedup.errors import InspectError
from streamdedup.pipeline.tags import parse_headers
from streamdedup.tools.inspection.overview import Recent, coverage_start

_WAIT_S = 0.02


def tail(consumer, topic: str, partitions: list[int], limit: int, output: str, timeout_s: float = 15.0) -> Recent:
    """The last ``limit`` offsets of ``topic`` (split evenly among ``partitions``) as a :class:`Recent`."""
    wm = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s, cached=False) for p in partitions}
    per = max(1, -(-limit // max(1, len(partitions))))
    start = {p: max(lo, hi - per) for p, (lo, hi) in wm.items()}
    active = {p for p in wm if start[p] < wm[p][1]}
    first: dict[int, int | None] = {p: None for p in wm}
    out = Recent(output)
    if not active:
        return out
    consumer.assign([TopicPartition(topic, p, start[p]) for p in sorted(active)])
    deadline = time.monotonic() + timeout_s
    try:
        while active and time.monotonic() < deadline:
            msgs = consumer.consume(500, _WAIT_S)
            if msgs:
                deadline = time.monotonic() + timeout_s
            for m in msgs:
                _take(m, topic, wm, active, first, out)
    finally:
        consumer.unassign()
    if active:
        raise InspectError(f"reading {topic}: no answer from the broker in {timeout_s:g} s")
    out.complete = all(start[p] <= lo for p, (lo, _) in wm.items())
    out.since_ms = coverage_start(first, {p: start[p] <= wm[p][0] for p in wm})
    return out


def _take(m, topic: str, wm: dict, active: set[int], first: dict[int, int | None], out: Recent) -> None:
    err = m.error()
    p = m.partition()
    if err is not None:
        if err.code() == KafkaError._PARTITION_EOF:
            active.discard(p)
            return
        raise InspectError(f"reading {topic}: {err.str()}")
    if m.topic() != topic or p not in active:
        return
    if m.offset() >= wm[p][1] - 1:
        active.discard(p)
    if m.offset() >= wm[p][1]:
        return
    tags = parse_headers(m.headers())
    if tags is None:
        return
    ts_type, ts = m.timestamp()
    t = ts if ts_type else None
    if t is not None and (first[p] is None or t < first[p]):
        first[p] = t
    out.records.append((t, tags))
