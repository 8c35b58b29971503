"""``streamdedup bench kafka``: the processor against a transactional passthrough, same broker, same run.

1. Throughput: the same Reuters-derived input (default 200k records, one partition) is read by
   (a) a transactional passthrough (consume a batch, produce it unchanged, commit offsets in
   the transaction: the ceiling of any exactly-once processor on this broker) and (b) the
   exactly-once processor, alternately, three times each after a warm-up passthrough; the
   medians are reported. Both use engine.batch_size records per transaction.
2. Latency: records are produced at half the processor's measured rate, each carrying its send
   time in the value; a read_committed consumer of the outputs reports p50/p99 of
   (visible - sent), with the processor running in its own process.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.config import Config
from streamdedup.runtime.kafka.admin import produce_all
from streamdedup.bench.feeds import long_records, mixed_records, news_records


def _topics(bootstrap: str, names: list[str], partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(t, partitions, 1) for t in names]).values():
        fut.result(60)


def passthrough_clients(bootstrap: str, source: str) -> tuple[Consumer, Producer]:
    """The passthrough's consumer (subscribed to ``source``) and transactional producer."""
    run = uuid.uuid4().hex[:6]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"pt-{run}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"pt-{run}", "linger.ms": 5})
    p.init_transactions(60)
    c.subscribe([source])
    return c, p


def forward(p: Producer, sink: str, msgs: list) -> None:
    """Produce ``msgs`` unchanged to ``sink`` (waiting out a full local queue)."""
    for m in msgs:
        while True:
            try:
                p.produce(sink, value=m.value(), key=m.key(), headers=m.headers())
                break
            except BufferError:
                p.poll(0.05)


def commit_offsets(p: Producer, c: Consumer, msgs: list) -> None:
    """The offsets after ``msgs`` into the open transaction, and commit it."""
    last = {}
    for m in msgs:
        last[(m.topic(), m.partition())] = m.offset() + 1
    p.send_offsets_to_transaction([TopicPartition(t, q, o) for (t, q), o in last.items()], c.consumer_group_metadata(), 60)
    p.commit_transaction(60)


def passthrough(bootstrap: str, source: str, sink: str, n: int, batch: int) -> float:
    """Transactional consume -> produce unchanged -> commit; returns records/s."""
    c, p = passthrough_clients(bootstrap, source)
    done = 0
    start = None
    while done < n:
        msgs = [m for m in c.consume(batch, 0.05) if m.error() is None]
        if not msgs:
            continue
        start = start or time.perf_counter()
        p.begin_transaction()
        forward(p, sink, msgs)
        commit_offsets(p, c, msgs)
        done += len(msgs)
    elapsed = time.perf_counter() - start
    c.close()
    return n / elapsed


def _processor_env(cfg_env: dict, bootstrap: str, source: str, run: str) -> dict:
    env = dict(os.environ, **cfg_env)
    env.update({
        "STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": bootstrap, "STREAMDEDUP_KAFKA__INPUT_TOPICS": f"[{source}]",
        "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": f"u-{run}", "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": f"d-{run}",
        "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": f"x-{run}", "STREAMDEDUP_KAFKA__GROUP_ID": f"g-{run}",
        "STREAMDEDUP_KAFKA__TRANSACTIONAL_ID": f"t-{run}", "STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]",
    })
    return env


def processor_rate(cfg: Config, bootstrap: str, source: str, n: int) -> tuple[float, dict]:
    """Run the exactly-once processor in-process over ``n`` records; returns records/s."""
    from streamdedup.runtime.single.processor import Processor

    run = uuid.uuid4().hex[:6]
    _topics(bootstrap, [f"u-{run}", f"d-{run}", f"x-{run}"])
    kcfg = cfg.kafka.model_copy(update={
        "bootstrap_servers": bootstrap, "input_topics": (source,), "unique_topic": f"u-{run}", "duplicates_topic": f"d-{run}",
        "dead_letter_topic": f"x-{run}", "group_id": f"g-{run}", "transactional_id": f"t-{run}"})
    pcfg = cfg.model_copy(update={"kafka": kcfg, "input": cfg.input.model_copy(update={"text_fields": ("title", "text")})})
    with tempfile.TemporaryDirectory() as state:
        proc = Processor(pcfg, state, stop_when_idle=3.0)
        summary = proc.run()
    busy = summary.last_batch_at - summary.first_batch_at
    return summary.records / busy, {"records": summary.records, "unique": summary.unique, "duplicates": summary.duplicates,
                                    "dead_letter": summary.dead_letter, "batches": summary.batches}


def latency(cfg: Config, bootstrap: str, rate: float, seconds: float = 20.0, kind: str = "wire") -> dict:
    """p50/p99 ms from send to read_committed visibility at ``rate`` records/s."""
    run = uuid.uuid4().hex[:6]
    source = f"lat-{run}"
    _topics(bootstrap, [source, f"u-{run}", f"d-{run}", f"x-{run}", f"w-{run}"])
    records = feed(kind, int(rate * seconds) + 10, 21)
    env = _processor_env({}, bootstrap, source, run)
    with tempfile.TemporaryDirectory() as state:
        # idle stop well above the start-up pause below, or the processor leaves before the load
        proc = subprocess.Popen([sys.executable, "-m", "streamdedup.cli", "run", "--state-dir", state, "--stop-when-idle", "20"],
                                env=env, stderr=subprocess.DEVNULL)
        seen: list[float] = []
        stop = threading.Event()

        def consume() -> None:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-read-{run}", "auto.offset.reset": "earliest",
                          "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
            c.subscribe([f"u-{run}", f"d-{run}", f"x-{run}"])
            while not stop.is_set():
                for m in c.consume(500, 0.05):
                    if m.error() is None:
                        sent = orjson.loads(m.value())["sent_ms"]
                        seen.append((sent, time.time() * 1000 - sent))
            c.close()

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        time.sleep(8)  # processor start-up (imports, kernels, group join) is not latency
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "enable.idempotence": True})
        # the producer's own start-up (connections, its idempotent id, the topic's metadata:
        # ~0.5 s here) is not the processor's latency: one record to a topic of its own first
        p.produce(f"w-{run}", value=b"warm-up")
        p.flush(60)
        p.list_topics(source, timeout=10)
        t0 = time.perf_counter()
        for i, (key, value) in enumerate(records):
            due = t0 + i / rate
            while (remaining := due - time.perf_counter()) > 0:
                time.sleep(min(0.001, remaining))
            obj = orjson.loads(value)
            obj["sent_ms"] = time.time() * 1000
            p.produce(source, value=orjson.dumps(obj), key=key)
            p.poll(0)
        p.flush(60)
        deadline = time.time() + 60
        while len(seen) < len(records) and time.time() < deadline:
            time.sleep(0.2)
        stop.set()
        reader.join(10)
        proc.wait(120)
    if not seen:
        raise RuntimeError("no output record became visible: the processor did not run (see its stderr)")
    sent_at = np.array([x for x, _ in seen])
    lat = np.array([y for _, y in seen])
    # the first seconds include the processor's warm-up (first batches, page faults in the
    # index tables): reported separately
    steady = lat[sent_at >= sent_at.min() + 5000]
    return {"rate": rate, "records": len(records), "seen": len(seen), "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99)), "max_ms": float(lat.max()),
            "steady_p50_ms": float(np.percentile(steady, 50)), "steady_p99_ms": float(np.percentile(steady, 99))}


def feed(kind: str, n: int, seed: int) -> list[tuple[bytes, bytes]]:
    """``wire``: new stories with 20% resends/variants; ``resends``: Reuters cycled (~90% duplicates);
    ``long``: 20-50 KB pages, 20% near-duplicates."""
    if kind == "long":
        return long_records(n, seed=seed)
    return mixed_records(n, 0.2, seed) if kind == "wire" else news_records(n, seed=seed)


def run(cfg: Config, bootstrap: str, n: int = 200_000, with_latency: bool = True, kind: str = "wire", rounds: int = 3) -> dict:
    """Passthrough and processor alternately, ``rounds`` times each over the same input (medians).

    A first passthrough over part of the input warms the broker (JIT, page cache) and is not
    counted: measured first on a cold broker the passthrough came out at a third of its rate.
    """
    run_id = uuid.uuid4().hex[:6]
    source, sink = f"bench-in-{run_id}", f"bench-pt-{run_id}"
    _topics(bootstrap, [source, sink])
    produce_all(bootstrap, source, feed(kind, n, 19), **{"compression.type": "lz4"})
    out: dict = {"records": n, "feed": kind, "batch_size": cfg.engine.batch_size, "rounds": rounds}
    passthrough(bootstrap, source, sink, min(n, 50_000), cfg.engine.batch_size)
    pts, procs = [], []
    for _ in range(rounds):
        pts.append(passthrough(bootstrap, source, sink, n, cfg.engine.batch_size))
        rate, counts = processor_rate(cfg, bootstrap, source, n)
        procs.append(rate)
        out["processor_counts"] = counts
        print(f"round: passthrough {pts[-1]:,.0f} docs/s, processor {rate:,.0f} docs/s", file=sys.stderr, flush=True)
    out["passthrough_runs"], out["processor_runs"] = pts, procs
    out["passthrough_docs_per_s"] = statistics.median(pts)
    out["processor_docs_per_s"] = statistics.median(procs)
    out["ratio"] = out["processor_docs_per_s"] / out["passthrough_docs_per_s"]
    if with_latency:
        out["latency"] = latency(cfg, bootstrap, out["processor_docs_per_s"] / 2, kind=kind)
    return out
