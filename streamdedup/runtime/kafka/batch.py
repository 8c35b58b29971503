"""A consumed batch of Kafka records through the pipeline: prepare, decide, route to outputs.

The runtime-neutral steps are ``streamdedup.pipeline``; this module adds what is Kafka's: the
records' positions as engine sources, message timestamps as default event times, replays
(records the state already holds, re-emitted from their stored decisions), and outputs as
(topic, key, value, headers) with the tags after the record's own headers.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
from confluent_kafka import KafkaError

from streamdedup.config import Config
from streamdedup.engine.decisions import Decision
from streamdedup.text.decode import Rejected
from streamdedup.engine.deduplicator import Checkpoint, Deduplicator, Source
from streamdedup.pipeline import UNIQUE_DEST, Prepared, Preparer, output_topics, route
from streamdedup.pipeline.decide import FingerprintAndDecide
from streamdedup.pipeline.route import kafka_output, revision_dest
from streamdedup.pipeline.tags import UNIQUE_HEADERS, with_tags
from streamdedup.runtime.kafka.fields import Fields, read_fields
from streamdedup.runtime.kafka.limits import headers_bytes
from streamdedup.runtime.kafka.supervisor import ConsumerFatal

UNIQUE_TAG_BYTES = headers_bytes(UNIQUE_HEADERS)

log = logging.getLogger(__name__)


@dataclass
class KafkaBatch:
    """A consumed batch, prepared: the engine's part is decided on the decide thread."""

    msgs: list
    prep: Prepared
    #: each message's key, value, own headers, partition and offset, read once
    fields: Fields
    offsets: dict[tuple[str, int], int]  # next offset per (topic, partition) once the batch is done
    replayed: dict[int, Decision | None]  # held record -> its stored decision
    started: float
    #: per record, its output's size without our tags (``limits.record_bytes``); None without a guard
    base_sizes: np.ndarray | None = None


@dataclass
class OutBatch:
    """A decided batch on its way out: what to produce and what to count once committed."""

    outputs: list  # (topic, key, value, headers)
    offsets: dict[tuple[str, int], int]
    records: int
    counts: Counter
    relations: Counter
    started: float
    #: the engine's checkpoint (``through`` is None when it indexed nothing in this batch)
    checkpoint: Checkpoint
    #: the consumed records, one per output (their positions; what a dead letter carries)
    msgs: list = field(default_factory=list)
    #: per output, its size as librdkafka counts it and its destination's index in
    #: ``DESTINATIONS`` (None without a guard): the guard checks them all at once
    sizes: np.ndarray | None = None
    dests: np.ndarray | None = None


def consume_good(consumer, n: int, timeout: float) -> list:
    """Up to ``n`` messages from ``consumer``: a fatal client error raises, other errors (a
    broker briefly away, a rebalance) are logged and their slots skipped."""
    good = []
    for m in consumer.consume(n, timeout):
        err = m.error()
        if err is None:
            good.append(m)
        elif err.fatal() or err.code() == KafkaError._FATAL:
            # the consumer's fatal event says _FATAL and fatal() False: either means no more records
            raise ConsumerFatal(f"consumer: {err.str()}")
        else:
            log.warning("consumer: %s", err)
    return good


def describe(doing: str, msgs: list) -> str:
    """A step on a batch of records, for an operator: the records' positions and the longest."""
    spans: dict[tuple[str, int], list[int]] = {}
    for m in msgs:
        span = spans.setdefault((m.topic(), m.partition()), [m.offset(), m.offset()])
        span[0], span[1] = min(span[0], m.offset()), max(span[1], m.offset())
    sizes = [len(m.value() or b"") for m in msgs]
    where = ", ".join(f"{t}:{p} offsets {lo}-{hi}" for (t, p), (lo, hi) in spans.items())
    if sizes:
        k = max(range(len(sizes)), key=sizes.__getitem__)
        where += f"; longest record {sizes[k]:,} bytes at {source_name(msgs[k])}"
    return f"{doing} a batch of {len(msgs)} records ({where})"


def source_name(m) -> str:
    return f"{m.topic()}:{m.partition()}:{m.offset()}"


class KafkaPipeline:
    """prepare -> decide -> route for batches of confluent-kafka messages.

    ``guard`` (a ``kafka.oversize.OutputGuard``) screens records whose output could not be
    produced: they are dead letters before the engine sees them.
    """

    def __init__(self, cfg: Config, engine: Deduplicator, guard=None):
        self.cfg = cfg
        self.engine = engine
        self.step = FingerprintAndDecide(engine)
        self.preparer = Preparer(cfg)
        self.guard = guard
        self.topics = output_topics(cfg)
        self.revisions = revision_dest(cfg.verify)

    def prepare(self, msgs: list, replay: dict[tuple[Source, int], Decision]) -> KafkaBatch:
        """Decode a batch on the main thread. Records below the state's positions were decided
        before a restart or a rewind (then no decision is in flight): they are held back and
        re-emitted from ``replay``, the engine's unconfirmed decisions."""
        started = time.perf_counter()
        # one lookup per partition, not per record (hashing a Source per record cost ~1 us)
        resume = {(s.topic, s.partition): o for s, o in self.engine.resume_positions().items()}
        n = len(msgs)
        f = read_fields(msgs, int(time.time() * 1000))
        data, scan = self.preparer.scan_values(f.values)
        floor = np.array([resume.get(tp, -1) for tp in f.partitions], np.int64)
        hold = f.offsets < floor[f.part_of] if n else np.zeros(0, np.bool_)
        prep = self.preparer.prepare(data, scan, 0, n, lambda k: source_name(msgs[k]), f.times, hold)
        base = None
        if self.guard is not None:
            base = self.guard.base_sizes(f)
            self._screen(base, prep)
        replayed = {k: replay.get((Source(*f.partitions[f.part_of[k]]), int(f.offsets[k]))) for k in prep.held.tolist()}
        return KafkaBatch(msgs, prep, f, f.next_offsets(), replayed, started, base)

    def _screen(self, base: np.ndarray, prep: Prepared) -> None:
        """Records that could be produced neither as unique nor as duplicate become dead letters
        (stage ``output``) instead of documents or replays."""
        out = self.guard.screen(base)
        if not len(out):
            return
        valid = set(prep.docs.tolist()) | set(prep.held.tolist())
        out = [k for k in out.tolist() if k in valid]
        for k in out:
            prep.dead[k] = Rejected("output", self.guard.screen_reason(int(base[k])))
        prep.docs = np.setdiff1d(prep.docs, out)
        prep.held = np.setdiff1d(prep.held, out)

    def decide(self, batch: KafkaBatch) -> Checkpoint:
        """Decide thread: fingerprint and decide the batch (the kernels release the GIL); a batch
        without documents still commits its positions."""
        prep = batch.prep
        positions = {Source(t, p): o for (t, p), o in batch.offsets.items()}
        docs = prep.docs
        ids, texts, times = prep.gather(docs) if len(docs) else ([], [], np.zeros(0, np.int64))
        engine = self.engine
        f = batch.fields
        sid_of = np.array([engine.source_id(Source(*tp)) for tp in f.partitions], dtype=np.int64)
        sids = sid_of[f.part_of[docs]] if len(docs) else np.zeros(0, np.int64)
        return self.step(ids, texts, times, sids, f.offsets[docs], positions)

    def route(self, batch: KafkaBatch, cp: Checkpoint) -> OutBatch:
        """Outputs of every record: key and value unchanged, the record's headers, then the tags."""
        routed = route(batch.prep, cp.decisions, batch.replayed, lambda k: source_name(batch.msgs[k]))
        f = batch.fields
        n = len(batch.msgs)
        topics = self.topics
        # every record as a unique one on time, built without Python per record; then those
        # with tags or a decoded time of their own are made over
        own = f.headers
        heads = [UNIQUE_HEADERS] * n if not any(own) else [with_tags(h, UNIQUE_HEADERS) if h else UNIQUE_HEADERS for h in own]
        outputs = list(zip(repeat(topics[UNIQUE_DEST], n), f.keys, f.values, heads))
        sized = batch.base_sizes is not None
        tag_bytes = np.full(n, UNIQUE_TAG_BYTES, np.int64) if sized else None
        slow_of = batch.prep.slow
        for k in sorted(routed.tags.keys() | slow_of.keys()) if slow_of else routed.tags:
            slow = slow_of.get(k)
            dest, headers = kafka_output(routed.tags.get(k), None if slow is None else slow.time_invalid, self.revisions)
            if headers is UNIQUE_HEADERS:
                continue
            if sized:
                tag_bytes[k] = headers_bytes(headers)
            outputs[k] = (topics[dest], f.keys[k], f.values[k], with_tags(own[k], headers))
        counts = routed.counts()
        counts["replayed"] = len(batch.prep.held)
        counts["revisions"] = routed.revisions
        out = OutBatch(outputs, batch.offsets, n, counts, routed.relations, batch.started, cp, batch.msgs)
        if sized:
            out.sizes = batch.base_sizes + tag_bytes
            out.dests = routed.where
        return out
