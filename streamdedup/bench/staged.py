"""``streamdedup bench kafka --topology staged|faust --workers N``: the staged topology (or its
faust form: faust workers + the staged decider) against the single-index processor and the
transactional passthrough, on one broker, in one run.

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
from contextlib import contextmanager
from typing import Iterator

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.kafka.admin import produce_all
from streamdedup.bench.feeds import long_records, mixed_records
from streamdedup.bench.kafka import passthrough
from streamdedup.bench.proc_cpu import ProcessCpu, broker_pid, work_us_per_record


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


def _setup(bootstrap: str, source: str, topology: str) -> tuple[str, dict, list[str], dict[str, int]]:
    """A run's id, environment, output topics and every topic it writes (created)."""
    run = uuid.uuid4().hex[:6]
    env = _env(bootstrap, source, run)
    outs = [f"u-{run}", f"d-{run}", f"x-{run}"]
    parts = AdminClient({"bootstrap.servers": bootstrap}).list_topics(source, timeout=10).topics[source].partitions
    topics = {t: 1 for t in outs}
    if topology in ("staged", "faust"):
        topics.update({f"fp-{run}": 1, f"dec-{run}": len(parts)})
    _create(bootstrap, topics)
    return run, env, outs, topics


def _start(env: dict, state: str, topology: str, workers: int, idle: float) -> list[subprocess.Popen]:
    cli = [sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", str(idle)]
    if topology == "single":
        cmds = [cli + ["--state-dir", state]]
    else:
        cmds = [cli + ["--topology", "staged", "--role", "decider", "--state-dir", state]]
        worker = ["--topology", "faust"] if topology == "faust" else ["--topology", "staged", "--role", "worker"]
        cmds += [cli + worker + ([] if topology == "faust" else ["--instance", f"w{i}"]) for i in range(workers)]
    # the runs' own summaries are not this bench's output (they broke its --json)
    return [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in cmds]


def _stages(topology: str, procs: list[subprocess.Popen]) -> dict[str, list[int]]:
    """The processes of a run by stage (as ``_start`` started them), and the local broker's."""
    if topology == "single":
        stages = {"single": [procs[0].pid]}
    else:
        stages = {"decider": [procs[0].pid], "faust worker" if topology == "faust" else "worker": [p.pid for p in procs[1:]]}
    broker = broker_pid()
    if broker is not None:
        stages["broker"] = [broker]
    return stages


@contextmanager
def _sampled(env: dict, topology: str, workers: int, wait: float) -> Iterator[ProcessCpu]:
    """``topology``'s processes on a state of their own, their CPU sampled until they have
    exited (each stops when idle; waited for at most ``wait`` seconds)."""
    with tempfile.TemporaryDirectory() as state:
        procs = _start(env, state, topology, workers, 8)
        cpu = ProcessCpu(_stages(topology, procs)).start()
        try:
            yield cpu
        finally:
            for p in procs:
                p.wait(wait)
            cpu.stop()


def _run(bootstrap: str, source: str, n: int, topology: str, workers: int, timeout: float,
         base: tuple[ProcessCpu, int]) -> dict:
    run, env, outs, topics = _setup(bootstrap, source, topology)
    with _sampled(env, topology, workers, 120) as cpu:
        first, last, seen = _watch(bootstrap, outs, n, timeout)
    out = {"topology": topology, "workers": 1 if topology == "single" else workers, "seen": seen,
           "docs_per_s": seen / (last - first) if last > first else 0.0,
           "cpu_us_per_record": work_us_per_record(cpu, base[0], n - base[1])}
    cost = [_topic_cost(bootstrap, t) for t in topics]
    out["messages_per_record"] = sum(m for m, _ in cost) / n
    out["bytes_per_record"] = sum(b for _, b in cost) / n
    if topology != "single":
        fp, dec = cost[3], cost[4]
        out["fingerprint_bytes_per_record"], out["decision_bytes_per_record"] = fp[1] / n, dec[1] / n
    return out


#: records of the feed per input partition in the run the base cost is measured on
BASE_RECORDS = 5


def base_cost(bootstrap: str, topology: str, workers: int, partitions: int, records: list) -> tuple[ProcessCpu, int]:
    """What ``topology``'s processes cost on a few records (the feed's first ``BASE_RECORDS``
    times the input partitions, spread by their keys): start, join, the kernels' first calls,
    wait idle, exit; a run's cost less this is the work of its other records. Returns the CPU
    and how many records it had."""
    source = f"base-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, {source: partitions})
    produce_all(bootstrap, source, records[:BASE_RECORDS * partitions])
    _, env, _, _ = _setup(bootstrap, source, topology)
    with _sampled(env, topology, workers, 300) as cpu:
        pass  # the processes stop when idle
    return cpu, BASE_RECORDS * partitions


def latency(bootstrap: str, feed: str, topology: str, workers: int, rate: float, partitions: int,
            seconds: float = 20.0) -> dict:
    """p50/p99 ms from send to read_committed visibility at ``rate`` records/s, after a primer
    record has come out (start-up, group joins and kernels are not latency)."""
    import orjson
    from confluent_kafka import Producer

    source = f"lat-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, {source: partitions})
    records = long_records(int(rate * seconds) + 1, seed=23) if feed == "long" else mixed_records(int(rate * seconds) + 1, 0.2, 23)
    run, env, outs, _ = _setup(bootstrap, source, topology)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "enable.idempotence": True})
    seen: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as state:
        procs = _start(env, state, topology, workers, 15)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{run}", "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
        c.subscribe(outs)
        try:
            for part in range(partitions):  # a primer per partition: every partition has an owner at work
                p.produce(source, records[0][1], records[0][0], partition=part)
            p.flush(30)
            deadline, primed = time.monotonic() + 240, 0
            while primed < partitions:
                primed += len([m for m in c.consume(100, 0.2) if m.error() is None])
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the {topology} topology emitted {primed} of {partitions} primers within 240 s")
            time.sleep(5)  # a worker that joined late takes its partitions now, not under the load
            t0 = time.perf_counter()
            for i, (key, value) in enumerate(records[1:]):
                while (wait := t0 + i / rate - time.perf_counter()) > 0:
                    time.sleep(min(0.001, wait))
                obj = orjson.loads(value)
                obj["sent_ms"] = time.time() * 1000
                p.produce(source, orjson.dumps(obj), key)
                p.poll(0)
                if i % 200 == 0:
                    _collect(c, seen, 0)
            p.flush(60)
            deadline = time.monotonic() + 120
            while len(seen) < len(records) - 1 and time.monotonic() < deadline:
                _collect(c, seen, 0.1)
        finally:
            c.close()
            for proc in procs:
                proc.wait(180)
    lat = sorted(ms for _, ms in seen)
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")  # noqa: E731
    return {"topology": topology, "rate": rate, "records": len(records) - 1, "seen": len(seen), "p50_ms": pct(0.5),
            "p99_ms": pct(0.99), "max_ms": lat[-1] if lat else float("nan")}


def _median_cpu(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per stage and role, the median over rounds of the CPU per record."""
    keys = {(stage, r) for one in rounds for stage, parts in one.items() for r in parts}
    out: dict[str, dict[str, float]] = {}
    for stage, r in sorted(keys):
        out.setdefault(stage, {})[r] = statistics.median(one.get(stage, {}).get(r, 0.0) for one in rounds)
    return out


def _cpu_bound(cpu: dict[str, dict[str, float]]) -> float:
    """The rate at which this machine's cores would all be busy with the measured CPU per record
    (every stage and the broker): the throughput model's ceiling where the stages share the cores."""
    total = sum(parts["total"] for parts in cpu.values())
    return (os.cpu_count() or 1) * 1e6 / total if total > 0 else 0.0


def _collect(c, seen: list, timeout: float) -> None:
    import orjson

    for m in c.consume(1000, timeout):
        if m.error() is None:
            sent = orjson.loads(m.value()).get("sent_ms")
            if sent is not None:
                seen.append((sent, time.time() * 1000 - sent))


def run(bootstrap: str, n: int, feed: str, workers: int, rounds: int = 3, partitions: int | None = None,
        timeout: float = 900.0, with_latency: bool = True, topology: str = "staged") -> dict:
    """Passthrough, single-index processor and ``topology`` (staged or faust), alternately,
    ``rounds`` times; then the latency of each at half the slower one's rate. The
    results name the contender by its topology (``staged_docs_per_s``, ``faust_vs_single``, ...)."""
    partitions = partitions or max(2, workers)
    records = long_records(n) if feed == "long" else mixed_records(n, 0.2, 19)
    source = f"bench-staged-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, {source: partitions, f"{source}-pt": partitions})
    produce_all(bootstrap, source, records, **{"compression.type": "lz4"})
    value_bytes = sum(len(v) for _, v in records) / n
    passthrough(bootstrap, source, f"{source}-pt", min(n, 20_000), 512)  # warm the broker
    top = topology
    res: dict = {"records": n, "feed": feed, "partitions": partitions, "workers": workers, "value_bytes": value_bytes,
                 "topology": top, "rounds": []}
    base = {t: base_cost(bootstrap, t, workers, partitions, records) for t in ("single", top)}
    for _ in range(rounds):
        pt = passthrough(bootstrap, source, f"{source}-pt", n, 512)
        single = _run(bootstrap, source, n, "single", 1, timeout, base["single"])
        other = _run(bootstrap, source, n, top, workers, timeout, base[top])
        res["rounds"].append({"passthrough": pt, "single": single, top: other})
        print(f"round: passthrough {pt:,.0f}, single {single['docs_per_s']:,.0f}, {top} x{workers} "
              f"{other['docs_per_s']:,.0f} docs/s", file=sys.stderr, flush=True)
    med = lambda key, f: statistics.median(f(r) for r in res["rounds"])  # noqa: E731
    res["passthrough_docs_per_s"] = med("pt", lambda r: r["passthrough"])
    res["single_docs_per_s"] = med("single", lambda r: r["single"]["docs_per_s"])
    res[f"{top}_docs_per_s"] = med(top, lambda r: r[top]["docs_per_s"])
    # a rate of 0: every output of a run too short to tell became visible in one read
    ratios = [r[top]["docs_per_s"] / r["single"]["docs_per_s"] for r in res["rounds"] if r["single"]["docs_per_s"]]
    res[f"{top}_vs_single"] = statistics.median(ratios) if ratios else 0.0
    for name in ("single", top):
        res.setdefault("cpu_us_per_record", {})[name] = _median_cpu([r[name]["cpu_us_per_record"] for r in res["rounds"]])
        res.setdefault("cpu_bound_docs_per_s", {})[name] = _cpu_bound(res["cpu_us_per_record"][name])
    last = res["rounds"][-1]
    res["messages_per_record"] = {"single": last["single"]["messages_per_record"], top: last[top]["messages_per_record"]}
    res["bytes_per_record"] = {"single": last["single"]["bytes_per_record"], top: last[top]["bytes_per_record"]}
    if with_latency:
        # both at half the slower one's rate: a load both sustain (half the single processor's
        # would overload a contender slower than half of it, and measure its backlog)
        rate = min(res["single_docs_per_s"], res[f"{top}_docs_per_s"]) / 2
        res["latency"] = [latency(bootstrap, feed, t, workers, rate, partitions) for t in ("single", top)]
    return res
