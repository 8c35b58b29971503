"""``streamdedup bench kafka --topology staged --workers N``: the staged topology against the
single-index processor and the transactional passthrough, on one broker, in one run.

Every contender reads the same input topic (``partitions`` partitions, produced once) with its
own group and writes its own output topics, each as separate processes the way users run them
(``streamdedup run``). Throughput is what a reader of the outputs sees: records over the time
from the first to the last output visible to a read_committed consumer (start-up and group
joins are outside it). Costs per input record: Kafka messages and bytes written to the
fingerprints, decisions and output topics.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from ..kafka.admin import produce_all
from .feeds import long_records, mixed_records
from .kafka import passthrough


def _create(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(t, p, 1) for t, p in topics.items()]).values():
        fut.result(60)


def _env(bootstrap: str, source: str, run: str) -> dict:
    env = dict(os.environ)
    env.update({
        "STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": bootstrap, "STREAMDEDUP_KAFKA__INPUT_TOPICS": f"[{source}]",
        "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": f"u-{run}", "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": f"d-{run}",
        "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": f"x-{run}", "STREAMDEDUP_KAFKA__GROUP_ID": f"g-{run}",
        "STREAMDEDUP_KAFKA__TRANSACTIONAL_ID": f"t-{run}", "STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]",
        "STREAMDEDUP_KAFKA__STAGED__FINGERPRINTS_TOPIC": f"fp-{run}", "STREAMDEDUP_KAFKA__STAGED__DECISIONS_TOPIC": f"dec-{run}",
        "STREAMDEDUP_INPUT__MAX_RECORD_BYTES": "200000",
    })
    return env


def _watch(bootstrap: str, topics: list[str], n: int, timeout: float) -> tuple[float, float, int]:
    """(first, last) time an output became visible and how many were seen."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"watch-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
    c.subscribe(topics)
    first = last = 0.0
    seen = 0
    deadline = time.monotonic() + timeout
    try:
        while seen < n and time.monotonic() < deadline:
            got = [m for m in c.consume(1000, 0.1) if m.error() is None]
            if got:
                last = time.perf_counter()
                first = first or last
                seen += len(got)
    finally:
        c.close()
    return first, last, seen


def _topic_cost(bootstrap: str, topic: str) -> tuple[int, int]:
    """(messages, key + value bytes) written to ``topic``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"cost-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                  "enable.partition.eof": True})
    meta = c.list_topics(topic, timeout=10).topics[topic]
    c.subscribe([topic])
    eof, msgs, size = set(), 0, 0
    try:
        while len(eof) < len(meta.partitions):
            for m in c.consume(1000, 1.0):
                if m.error() is not None:
                    eof.add(m.partition())
                    continue
                msgs += 1
                size += len(m.value() or b"") + len(m.key() or b"")
    finally:
        c.close()
    return msgs, size


def _run(bootstrap: str, source: str, n: int, topology: str, workers: int, timeout: float) -> dict:
    run = uuid.uuid4().hex[:6]
    env = _env(bootstrap, source, run)
    outs = [f"u-{run}", f"d-{run}", f"x-{run}"]
    parts = AdminClient({"bootstrap.servers": bootstrap}).list_topics(source, timeout=10).topics[source].partitions
    topics = {t: 1 for t in outs}
    if topology == "staged":
        topics.update({f"fp-{run}": 1, f"dec-{run}": len(parts)})
    _create(bootstrap, topics)
    cli = [sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", "8"]
    with tempfile.TemporaryDirectory() as state:
        if topology == "single":
            cmds = [cli + ["--state-dir", state]]
        else:
            cmds = [cli + ["--topology", "staged", "--role", "decider", "--state-dir", state]]
            cmds += [cli + ["--topology", "staged", "--role", "worker", "--instance", f"w{i}"] for i in range(workers)]
        procs = [subprocess.Popen(c, env=env, stderr=subprocess.DEVNULL) for c in cmds]
        try:
            first, last, seen = _watch(bootstrap, outs, n, timeout)
        finally:
            for p in procs:
                p.wait(120)
    out = {"topology": topology, "workers": workers if topology == "staged" else 1, "seen": seen,
           "docs_per_s": seen / (last - first) if last > first else 0.0}
    cost = [_topic_cost(bootstrap, t) for t in topics]
    out["messages_per_record"] = sum(m for m, _ in cost) / n
    out["bytes_per_record"] = sum(b for _, b in cost) / n
    if topology == "staged":
        fp, dec = cost[3], cost[4]
        out["fingerprint_bytes_per_record"], out["decision_bytes_per_record"] = fp[1] / n, dec[1] / n
    return out


def run(bootstrap: str, n: int, feed: str, workers: int, rounds: int = 3, partitions: int | None = None,
        timeout: float = 900.0) -> dict:
    """Passthrough, single-index processor and staged topology, alternately, ``rounds`` times."""
    partitions = partitions or max(2, workers)
    records = long_records(n) if feed == "long" else mixed_records(n, 0.2, 19)
    source = f"bench-staged-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, {source: partitions, f"{source}-pt": partitions})
    produce_all(bootstrap, source, records, **{"compression.type": "lz4"})
    value_bytes = sum(len(v) for _, v in records) / n
    passthrough(bootstrap, source, f"{source}-pt", min(n, 20_000), 512)  # warm the broker
    res: dict = {"records": n, "feed": feed, "partitions": partitions, "workers": workers, "value_bytes": value_bytes,
                 "rounds": []}
    for _ in range(rounds):
        pt = passthrough(bootstrap, source, f"{source}-pt", n, 512)
        single = _run(bootstrap, source, n, "single", 1, timeout)
        staged = _run(bootstrap, source, n, "staged", workers, timeout)
        res["rounds"].append({"passthrough": pt, "single": single, "staged": staged})
        print(f"round: passthrough {pt:,.0f}, single {single['docs_per_s']:,.0f}, staged x{workers} "
              f"{staged['docs_per_s']:,.0f} docs/s", file=sys.stderr, flush=True)
    med = lambda key, f: statistics.median(f(r) for r in res["rounds"])  # noqa: E731
    res["passthrough_docs_per_s"] = med("pt", lambda r: r["passthrough"])
    res["single_docs_per_s"] = med("single", lambda r: r["single"]["docs_per_s"])
    res["staged_docs_per_s"] = med("staged", lambda r: r["staged"]["docs_per_s"])
    res["staged_vs_single"] = statistics.median(r["staged"]["docs_per_s"] / r["single"]["docs_per_s"]
                                                for r in res["rounds"] if r["single"]["docs_per_s"])
    last = res["rounds"][-1]
    res["messages_per_record"] = {"single": last["single"]["messages_per_record"], "staged": last["staged"]["messages_per_record"]}
    res["bytes_per_record"] = {"single": last["single"]["bytes_per_record"], "staged": last["staged"]["bytes_per_record"]}
    return res
