"""A consumed batch of Kafka records through the pipeline: prepare, decide, route to outputs.

The runtime-neutral steps are ``streamdedup.pipeline``; this module adds what is Kafka's: the
records' positions as engine sources, message timestamps as default event times, replays
(records the state already holds, re-emitted from their stored decisions), and outputs as
(topic, key, value, headers) with the tags after the record's own headers.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from ..decisions import Decision
from ..decode import Rejected
from ..engine import Checkpoint, Deduplicator, Source
from ..pipeline import DEAD_LETTER_DEST, DUPLICATE_DEST, UNIQUE_DEST, Prepared, Preparer, route
from ..pipeline.tags import UNIQUE_HEADERS, dead_letter_headers, duplicate_headers, with_tags


@dataclass
class KafkaBatch:
    """A consumed batch, prepared: the engine's part is decided on the decide thread."""

    msgs: list
    prep: Prepared
    sources: list[Source]  # per record
    offsets: dict[tuple[str, int], int]  # next offset per (topic, partition) once the batch is done
    replayed: dict[int, Decision | None]  # held record -> its stored decision
    started: float


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
        self.preparer = Preparer(cfg)
        self.guard = guard
        k = cfg.kafka
        self.topics = {UNIQUE_DEST: k.unique_topic, DUPLICATE_DEST: k.duplicates_topic, DEAD_LETTER_DEST: k.dead_letter_topic}

    def prepare(self, msgs: list, replay: dict[tuple[Source, int], Decision]) -> KafkaBatch:
        """Decode a batch on the main thread. Records below the state's positions were decided
        before a restart or a rewind (then no decision is in flight): they are held back and
        re-emitted from ``replay``, the engine's unconfirmed decisions."""
        started = time.perf_counter()
        positions = self.engine.resume_positions()
        n = len(msgs)
        values = [m.value() or b"" for m in msgs]
        data, scan = self.preparer.scan_values(values)
        now_ms = int(time.time() * 1000)
        times = np.empty(n, np.int64)
        hold = np.zeros(n, np.bool_)
        sources: list[Source] = []
        offsets: dict[tuple[str, int], int] = {}
        cache: dict[tuple[str, int], Source] = {}
        for k, m in enumerate(msgs):
            tp = (m.topic(), m.partition())
            src = cache.get(tp)
            if src is None:
                src = cache[tp] = Source(*tp)
            sources.append(src)
            off = m.offset()
            offsets[tp] = off + 1
            ts_type, ts = m.timestamp()
            times[k] = ts if ts_type else now_ms
            hold[k] = off < positions.get(src, -1)
        prep = self.preparer.prepare(data, scan, 0, n, lambda k: source_name(msgs[k]), times, hold)
        if self.guard is not None:
            self._screen(msgs, prep)
        replayed = {k: replay.get((sources[k], msgs[k].offset())) for k in prep.held.tolist()}
        return KafkaBatch(msgs, prep, sources, offsets, replayed, started)

    def _screen(self, msgs: list, prep: Prepared) -> None:
        """Records that could be produced neither as unique nor as duplicate become dead letters
        (stage ``output``) instead of documents or replays."""
        screen = self.guard.screen
        out: list[int] = []
        for arr in (prep.docs, prep.held):
            for k in arr.tolist():
                m = msgs[k]
                why = screen(m.key(), m.value(), m.headers())
                if why is not None:
                    prep.dead[k] = Rejected("output", why)
                    out.append(k)
        if out:
            prep.docs = np.setdiff1d(prep.docs, out)
            prep.held = np.setdiff1d(prep.held, out)

    def decide(self, batch: KafkaBatch) -> Checkpoint:
        """Decide thread: the engine on the batch (its kernels release the GIL); a batch without
        documents still commits its positions."""
        prep = batch.prep
        positions = {Source(t, p): o for (t, p), o in batch.offsets.items()}
        docs = prep.docs
        ids, texts, times = prep.gather(docs) if len(docs) else ([], [], np.zeros(0, np.int64))
        engine = self.engine
        sids = np.array([engine.source_id(batch.sources[k]) for k in docs.tolist()], dtype=np.int64)
        offs = np.array([batch.msgs[k].offset() for k in docs.tolist()], dtype=np.int64)
        return engine.run_batch(ids, texts, times, sids, offs, positions)

    def route(self, batch: KafkaBatch, cp: Checkpoint) -> OutBatch:
        """Outputs of every record: key and value unchanged, the record's headers, then the tags."""
        routed = route(batch.prep, cp.decisions, batch.replayed, lambda k: source_name(batch.msgs[k]))
        outputs = []
        topics = self.topics
        for m, dest, tags in zip(batch.msgs, routed.dest, routed.tags):
            if tags is None:
                headers = UNIQUE_HEADERS
            elif dest == DUPLICATE_DEST:
                headers = duplicate_headers(tags)
            else:
                headers = dead_letter_headers(tags)
            outputs.append((topics[dest], m.key(), m.value(), with_tags(m.headers(), headers)))
        counts = routed.counts()
        counts["replayed"] = len(batch.prep.held)
        return OutBatch(outputs, batch.offsets, len(batch.msgs), counts, routed.relations, batch.started, cp, batch.msgs)
