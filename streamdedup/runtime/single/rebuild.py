"""``--rebuild-from-input SINCE``: index the input again, up to the committed offsets, emitting nothing.

The records below the group's committed offsets were emitted by the run whose state was lost;
reading them again through the same pipeline (prepare, decide) puts them back in the index
with the decisions they would get, and the state's positions end exactly at the committed
offsets, so the processor then resumes as if the state had never gone. Nothing is produced:
their outputs are already in the output topics.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.engine.decisions import DUPLICATE
from streamdedup.engine.deduplicator import Deduplicator, Source
from streamdedup.runtime.kafka.batch import KafkaPipeline
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.since import Since
from streamdedup.runtime.single.lost_state import Gap

log = logging.getLogger(__name__)


@dataclass
class RebuildSummary:
    records: int = 0
    indexed: int = 0  # records that reached the engine (the rest were dead letters)
    duplicates: int = 0
    seconds: float = 0.0


def _start_offsets(consumer, gaps: list[Gap], since: Since) -> list[TopicPartition]:
    """Where each partition's rebuild starts (never below what the state already holds)."""
    if since.kind == "time":
        asked = consumer.offsets_for_times([TopicPartition(g.topic, g.partition, since.value) for g in gaps], timeout=30)
        starts = [tp.offset if tp.offset >= 0 else g.committed for tp, g in zip(asked, gaps)]  # -1: nothing that late
    elif since.kind in ("offset", "last"):
        # within what the partition still holds (retention may have deleted its start: a start
        # below it would send the consumer to the end) and, for the last N, before the committed
        # offset, where the rebuild ends
        lows = [consumer.get_watermark_offsets(TopicPartition(g.topic, g.partition), timeout=30)[0] for g in gaps]
        starts = [since.start(lo, g.committed) for lo, g in zip(lows, gaps)]
    else:
        starts = [OFFSET_BEGINNING for _ in gaps]
    out = []
    for g, start in zip(gaps, starts):
        if g.state is not None:
            start = max(start, g.state)
        out.append(TopicPartition(g.topic, g.partition, start))
    return out


def rebuild(cfg: Config, engine: Deduplicator, new_consumer: Callable[[dict], object], gaps: list[Gap], since: Since,
            touch: Callable[[], None] = lambda: None) -> RebuildSummary:
    """Run the input records of ``gaps`` from ``since`` to the committed offsets through the engine."""
    t0 = time.perf_counter()
    kcfg = cfg.kafka
    consumer = new_consumer(client_settings(kcfg, {"group.id": f"{kcfg.group_id}.rebuild", "enable.auto.commit": False,
                                                   "isolation.level": "read_committed", "enable.partition.eof": True},
                                            user_wins=True))
    summary = RebuildSummary()
    pipeline = KafkaPipeline(cfg, engine)
    ends = {(g.topic, g.partition): g.committed for g in gaps}
    try:
        starts = _start_offsets(consumer, gaps, since)
        consumer.assign(starts)
        todo = {(tp.topic, tp.partition) for tp in starts if tp.offset < 0 or tp.offset < ends[(tp.topic, tp.partition)]}
        log.info("rebuilding the index from the input: %d partition(s) up to the committed offsets", len(todo))
        while todo:
            touch()
            msgs = []
            for m in consumer.consume(cfg.engine.batch_size, 1.0):
                tp = (m.topic(), m.partition())
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        todo.discard(tp)  # the log ends before the committed offset (a transaction marker)
                    elif err.fatal():
                        raise KafkaException(err)
                    continue
                if m.offset() >= ends[tp]:
                    todo.discard(tp)
                    continue
                msgs.append(m)
                if m.offset() + 1 >= ends[tp]:
                    todo.discard(tp)
            if not msgs:
                continue
            batch = pipeline.prepare(msgs, {})
            last = pipeline.decide(batch)
            engine.confirm_outputs()  # nothing to emit: the outputs were emitted by the run that lost its state
            summary.records += len(msgs)
            summary.indexed += len(batch.prep.docs)
            summary.duplicates += int((last.decisions.codes == DUPLICATE).sum())
        # the state's positions end at the committed offsets even where the log's last record
        # below them is a transaction marker (never delivered): the next start sees no gap
        done = engine.commit_positions({Source(t, p): o for (t, p), o in ends.items()})
        engine.confirm_outputs()
        done.wait_durable()
    finally:
        consumer.close()
    summary.seconds = time.perf_counter() - t0
    return summary
