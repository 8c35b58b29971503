"""``streamdedup bench cost``: one record's CPU split into its parts, per runtime.

- **Kafka**: the exactly-once processor in this process over a Reuters-derived wire feed, and a
  transactional passthrough (consume, produce unchanged, offsets into the transaction) over
  the same topic, each with its stages timed (``cost_timers``). CPU is counted from the first
  consumed batch to the last committed one, per thread: the main thread's stages, the decide
  thread's, the state and transaction-commit workers', and librdkafka's own threads.
- **File mode**: ``streamdedup run --input`` as a user runs it, in a fresh process
  (``cost_file``), its CPU split into interpreter start-up, imports, per-run set-up (state,
  kernels, tables) and the per-record stages, next to the in-process engine's cost.

The timers add a few hundred nanoseconds per timed call (a handful per batch, not per record).
"""

from __future__ import annotations

import statistics
import time
import uuid


from streamdedup.bench.cost_timers import Stages, ThreadCpu, table
from streamdedup.bench.kafka import _topics, commit_offsets, feed, forward, passthrough_clients, processor_rate
from streamdedup.config import Config
from streamdedup.runtime.kafka.admin import produce_all


def _processor_targets() -> list[tuple[object, str, str]]:
    from streamdedup._kernels import decide as KD
    from streamdedup._kernels import records as KR
    from streamdedup.engine import deduplicator, matches
    from streamdedup.pipeline.decide import FingerprintAndDecide
    from streamdedup.pipeline.prepare import Preparer
    from streamdedup.runtime.kafka import batch
    from streamdedup.runtime.single import processor
    from streamdedup.runtime.single.delivery import Delivery
    from streamdedup.runtime.kafka.metrics import Metrics
    from streamdedup.runtime.kafka.oversize import OutputGuard
    from streamdedup.state.pipelined import PipelinedStore

    return [
        (processor._Loop, "consume", "consume (client call)"),
        (Preparer, "scan_values", "decode/scan"),
        (Preparer, "prepare", "prepare (ids, times, dead letters)"),
        (batch.KafkaPipeline, "prepare", "prepare: Kafka fields per record"),
        (OutputGuard, "base_sizes", "size guard"),
        (OutputGuard, "screen", "size guard"),
        (OutputGuard, "check", "size guard"),
        (batch, "route", "route: decisions to tags"),
        (batch.KafkaPipeline, "route", "route: headers and output tuples"),
        (Delivery, "_produce_all", "produce (client calls)"),
        (Delivery, "emit", "begin transaction, emit"),
        (Delivery, "settle", "settle, confirm"),
        (processor.Processor, "_settled", "counts and metrics"),
        (Metrics, "observe_lag", "counts and metrics"),
        (batch.KafkaPipeline, "decide", "decide: gather, source ids"),
        (FingerprintAndDecide, "fingerprint", "canonical + fingerprint kernel"),
        (KD, "decide_batch", "decide kernel"),
        (matches, "resolve", "matches: ids of originals"),
        (KR, "encode_batch", "state encode"),
        (deduplicator.Deduplicator, "_run_fingerprinted", "decide: arrays, puts, decisions"),
        (PipelinedStore, "commit", "state: submit commit"),
        (Delivery, "_commit", "offsets + commit transaction"),
    ]


_ORDER = [("MainThread", p) for p in (
    "consume (client call)", "decode/scan", "prepare (ids, times, dead letters)", "prepare: Kafka fields per record",
    "size guard", "route: decisions to tags", "route: headers and output tuples", "produce (client calls)",
    "begin transaction, emit", "settle, confirm", "counts and metrics")] + [("decide", p) for p in (
        "decide: gather, source ids", "canonical + fingerprint kernel", "decide kernel", "matches: ids of originals",
        "state encode", "decide: arrays, puts, decisions", "state: submit commit")]


class _Window:
    """Per-thread CPU and stage sums from the first batch to the last settled one."""

    def __init__(self, stages: Stages):
        self.stages = stages
        self.cpu = ThreadCpu()
        self.started = False
        self.frozen: dict = {}

    def begin(self) -> None:
        if not self.started:
            self.started = True
            self.stages.seconds.clear()
            self.stages.calls.clear()
            self.cpu.start()

    def mark(self) -> None:
        t0 = time.thread_time()
        self.cpu.mark()
        self.frozen = dict(self.stages.seconds)
        # called inside a stage (settle): reading /proc is the bench's cost, not that stage's
        stack = getattr(self.stages._local, "stack", None)
        if stack:
            stack[-1] += time.thread_time() - t0


def processor_cost(cfg: Config, bootstrap: str, source: str, n: int) -> dict:
    """The processor over ``n`` records of ``source`` with its stages timed."""
    from streamdedup.runtime.kafka import batch
    from streamdedup.runtime.single import processor

    stages = Stages()
    window = _Window(stages)
    targets = _processor_targets()
    prepare, settled = batch.KafkaPipeline.prepare, processor.Processor._settled

    def begin_then_prepare(self, *a, **kw):
        window.begin()
        return prepare(self, *a, **kw)

    timed_settled = stages._timed("counts and metrics", settled)

    def settled_then_mark(self, b):
        timed_settled(self, b)
        window.mark()  # outside the stage: reading /proc is the bench's cost, not the processor's

    with stages.installed(targets):
        batch.KafkaPipeline.prepare = stages._timed("prepare: Kafka fields per record", begin_then_prepare)
        processor.Processor._settled = settled_then_mark
        try:
            rate, counts = processor_rate(cfg, bootstrap, source, n)
        finally:
            batch.KafkaPipeline.prepare, processor.Processor._settled = prepare, settled
    stages.seconds = window.frozen
    threads = window.cpu.by_role()
    threads["MainThread"] = threads.get("MainThread", 0.0) - window.cpu.seconds_overhead
    return {"rate": rate, "counts": counts, "rows": table(stages, threads, counts["records"], _ORDER), "threads": threads}


def passthrough_cost(bootstrap: str, source: str, sink: str, n: int, batch: int) -> dict:
    """``bench.kafka.passthrough`` with its client calls timed (same settings, same loop)."""
    stages = Stages()
    window = _Window(stages)
    c, p = passthrough_clients(bootstrap, source)

    def consume():
        return [m for m in c.consume(batch, 0.05) if m.error() is None]

    def produce(msgs):
        forward(p, sink, msgs)

    def commit(msgs):
        commit_offsets(p, c, msgs)

    consume, produce, commit = (stages._timed("consume (client call)", consume), stages._timed("produce (client calls)", produce),
                                stages._timed("offsets + commit transaction", commit))
    begin = stages._timed("begin transaction, emit", p.begin_transaction)
    done, start = 0, None
    while done < n:
        msgs = consume()
        if not msgs:
            continue
        if start is None:
            window.begin()
            start = time.perf_counter()
        begin()
        produce(msgs)
        commit(msgs)
        done += len(msgs)
        window.mark()
    elapsed = time.perf_counter() - start
    c.close()
    stages.seconds = window.frozen
    threads = window.cpu.by_role()
    threads["MainThread"] = threads.get("MainThread", 0.0) - window.cpu.seconds_overhead
    order = [("MainThread", s) for s in ("consume (client call)", "begin transaction, emit", "produce (client calls)",
                                          "offsets + commit transaction")]
    return {"rate": n / elapsed, "rows": table(stages, threads, n, order), "threads": threads}


def kafka_cost(cfg: Config, bootstrap: str, n: int, rounds: int = 2, kind: str = "wire") -> dict:
    """Passthrough and processor alternately over the same topic; each row's median over rounds."""
    run_id = uuid.uuid4().hex[:6]
    source, sink = f"cost-in-{run_id}", f"cost-pt-{run_id}"
    _topics(bootstrap, [source, sink])
    produce_all(bootstrap, source, feed(kind, n, 19), **{"compression.type": "lz4"})
    passthrough_cost(bootstrap, source, sink, min(n, 20_000), cfg.engine.batch_size)  # warms the broker, not counted
    pts, procs = [], []
    for _ in range(rounds):
        pts.append(passthrough_cost(bootstrap, source, sink, n, cfg.engine.batch_size))
        procs.append(processor_cost(cfg, bootstrap, source, n))
    return {"records": n, "feed": kind, "rounds": rounds, "batch_size": cfg.engine.batch_size,
            "passthrough": _median_rows(pts), "processor": _median_rows(procs), "counts": procs[-1]["counts"]}


def _median_rows(runs: list[dict]) -> dict:
    keys: list[tuple[str, str]] = []
    for r in runs:
        for row in r["rows"]:
            if (row["thread"], row["part"]) not in keys:
                keys.append((row["thread"], row["part"]))
    rows = []
    for key in keys:
        vals = [next((row["us"] for row in r["rows"] if (row["thread"], row["part"]) == key), 0.0) for r in runs]
        rows.append({"thread": key[0], "part": key[1], "us": statistics.median(vals), "runs": vals})
    rates = [r["rate"] for r in runs]
    return {"rows": rows, "rate": statistics.median(rates), "rates": rates,
            "total_us": statistics.median([sum(row["us"] for row in r["rows"]) for r in runs])}
