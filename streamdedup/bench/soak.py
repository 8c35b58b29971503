"""``streamdedup bench soak``: the Kafka processor under a steady load, watched as an operator would.

The processor runs in its own process (``python -m streamdedup.cli run``, topics passed by
``STREAMDEDUP_*`` overrides), so its RSS and the latency are what a deployment sees. This process
produces the ``wire`` feed of ``bench kafka`` (Reuters-derived stories with 20% resends and
near-duplicate variants) at a steady rate, each record carrying its produce time in the header
``soak.sent_ns``; a read_committed reader of the three outputs measures the visible latency (seen
- produced); a sampler records the processor's RSS, CPU, indexed documents (its metrics endpoint)
and the group's lag (high watermark - committed offset). At the end the processor gets SIGTERM and
every input id must have come out exactly once.

Producer, reader and sampler share this process, and this process shares the machine with the
processor and the broker: the report carries the load average and the producer's own lateness so
a figure taken on a busy machine says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, Producer

from streamdedup.config import Config
from streamdedup.errors import StreamdedupError
from streamdedup.bench import soak_probe as probe
from streamdedup.bench.kafka import _processor_env, _topics, feed
from streamdedup.bench.soak_stats import delivery_check, latency_windows, percentiles, rss_trend, slope_per_min

SENT_HEADER = "soak.sent_ns"
STATUSES = ("unique", "duplicate", "dead_letter")


class _Reader(threading.Thread):
    """read_committed consumer of the outputs: (id, status, produced ns, seen ns) per record."""

    def __init__(self, bootstrap: str, topics: dict[str, str], group: str):
        super().__init__(daemon=True, name="soak-reader")
        self.status_of = {topic: status for status, topic in topics.items()}
        # fetch.wait.max.ms low: the reader's own fetch wait is not the processor's latency
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed", "enable.auto.commit": False, "fetch.wait.max.ms": 10}
        self.rows: list[tuple[str, str, int | None, int]] = []
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            c = Consumer(self.conf)
            c.subscribe(list(self.status_of))
            try:
                while not self.halt.is_set():
                    msgs = c.consume(1000, 0.05)
                    now = time.monotonic_ns()
                    for m in msgs:
                        if m.error() is None:
                            sent = next((int(v) for k, v in (m.headers() or []) if k == SENT_HEADER), None)
                            self.rows.append((m.key().decode(), self.status_of[m.topic()], sent, now))
            finally:
                c.close()
        except BaseException as exc:  # reported by the main thread, which would otherwise wait in vain
            self.error = exc

    def count(self) -> int:
        return len(self.rows)


class _Sampler(threading.Thread):
    """Every ``every_s``: RSS, CPU, lag, indexed documents and load, as rows of a table over time."""

    def __init__(self, pid: int, lag: probe.GroupLag, metrics_port: int, every_s: float, t0: float,
                 counts: Callable[[], tuple[int, int]], log: Callable[[str], None]):
        super().__init__(daemon=True, name="soak-sampler")
        self.pid, self.lag, self.metrics_port, self.every_s, self.t0 = pid, lag, metrics_port, every_s, t0
        self.counts, self.log = counts, log
        self.rows: list[dict] = []
        self.halt = threading.Event()
        self._last = (time.monotonic(), probe.cpu_seconds(pid))

    def run(self) -> None:
        self.sample()
        while not self.halt.wait(self.every_s):
            self.sample()

    def sample(self) -> None:
        now, cpu = time.monotonic(), probe.cpu_seconds(self.pid)
        (then, cpu_then), self._last = self._last, (now, cpu)
        produced, seen = self.counts()
        indexed = probe.scrape_metric(self.metrics_port, "streamdedup_indexed_documents")
        rss = probe.rss_mb(self.pid)
        row = {"t_s": round(now - self.t0, 1), "produced": produced, "seen": seen, "lag": self.lag(),
               "rss_mb": None if rss is None else round(rss, 1), "indexed": None if indexed is None else int(indexed),
               "cpu_pct": None if cpu is None or cpu_then is None or now <= then else round(100 * (cpu - cpu_then) / (now - then), 1),
               "load1": round(os.getloadavg()[0], 2)}
        self.rows.append(row)
        self.log("  ".join(f"{k} {v}" for k, v in row.items()))


class PacedProducer:
    """Produces records with their produce time in the ``soak.sent_ns`` header; counts them."""

    def __init__(self, bootstrap: str, topic: str):
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
        self.topic = topic
        self.sent = 0

    def send(self, key: bytes, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, headers=[(SENT_HEADER, str(time.monotonic_ns()).encode())])
                self.sent += 1
                return
            except BufferError:  # the client's queue is full: let it deliver, then retry
                self.producer.poll(0.05)

    def paced(self, records: list, rate: float, t0: float) -> dict:
        """Record i goes out at t0 + i / rate, or at once when this thread is late (the lateness
        is reported: a late producer means a lower real rate than asked for)."""
        i, late = 0, 0.0
        while i < len(records):
            now = time.monotonic()
            due = min(len(records), int((now - t0) * rate) + 1)
            if due > i:
                late = max(late, now - (t0 + i / rate))
            for key, value in records[i:due]:
                self.send(key, value)
            i = max(i, due)
            self.producer.poll(0)
            if i < len(records):
                time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        span = time.monotonic() - t0
        self.flush()
        return {"records": len(records), "seconds": round(span, 2), "achieved_rate": round(len(records) / span, 1),
                "max_late_ms": round(late * 1000, 1)}

    def flush(self) -> None:
        if self.producer.flush(60):
            raise StreamdedupError("the soak producer could not deliver its records to the broker in 60 s")


def _wait_for(done: Callable[[], bool], timeout: float, proc: subprocess.Popen, reader: _Reader, what: str, log_path: Path) -> bool:
    """Poll ``done`` until ``timeout``; raise if the processor or the reader died meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        if proc.poll() is not None:
            raise StreamdedupError(f"the processor exited with {proc.returncode} {what}:\n{_tail(log_path)}")
        if reader.error is not None:
            raise StreamdedupError(f"the output reader failed {what}: {reader.error}")
        time.sleep(0.1)
    return done()


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _processor_summary(log_path: Path) -> dict | None:
    """The processor's closing ``done`` log line (its own counts), if it got that far."""
    for line in reversed(log_path.read_text(errors="replace").splitlines()):
        if line.startswith("{") and '"msg": "done"' in line:
            return {k: v for k, v in json.loads(line).items() if k not in ("ts", "level", "logger", "msg")}
    return None


def _stop(proc: subprocess.Popen, timeout: float = 60.0) -> int | None:
    """SIGTERM, as an orchestrator stops it; SIGKILL if it does not leave in ``timeout``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)
        return None


def _log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(cfg: Config, bootstrap: str, rate: float, seconds: float, *, config_path: str | None = None, partitions: int = 1,
        max_documents: int | None = None, sample_every: float = 5.0, window_s: float = 30.0, seed: int = 21,
        startup_timeout: float = 180.0, drain_timeout: float = 120.0, log: Callable[[str], None] = _log_stderr) -> dict:
    """One soak: ``rate`` records/s for ``seconds`` through a processor in its own process.

    A few primer records go first and must come out before the clock starts: the processor's
    start-up (imports, kernels, index allocation, group join) is not latency under load.
    """
    max_docs = max_documents or cfg.engine.max_documents
    primer = int(min(500, max(20, rate / 10)))
    records = feed("wire", primer + int(rate * seconds), seed)
    rid = probe.run_id()
    source, metrics_port = f"{rid}-in", probe.free_port()
    env = _processor_env({}, bootstrap, source, rid)
    env.update({"STREAMDEDUP_KAFKA__METRICS_PORT": str(metrics_port), "STREAMDEDUP_KAFKA__METRICS_HOST": "127.0.0.1",
                "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": str(max_docs)})
    outputs = {"unique": env["STREAMDEDUP_KAFKA__UNIQUE_TOPIC"], "duplicate": env["STREAMDEDUP_KAFKA__DUPLICATES_TOPIC"],
               "dead_letter": env["STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC"]}
    _topics(bootstrap, [source, *outputs.values()], partitions)
    res: dict = {"rate": rate, "seconds": seconds, "partitions": partitions, "batch_size": cfg.engine.batch_size,
                 "max_documents": max_docs, "primer": primer, "bootstrap": bootstrap, "input_topic": source, "output_topics": outputs,
                 "cpu_count": os.cpu_count(), "loadavg_start": os.getloadavg()}
    log(f"soak {rid}: {len(records):,} records ({primer} primer + {rate:g}/s x {seconds:g} s) -> {source}")
    with tempfile.TemporaryDirectory(prefix="streamdedup-soak-") as tmp:
        log_path = Path(tmp) / "processor.log"
        cmd = [sys.executable, "-m", "streamdedup.cli", "run", "--state-dir", str(Path(tmp) / "state")]
        if config_path:
            cmd += ["--config", config_path]
        with open(log_path, "wb") as errlog:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errlog)
        reader = _Reader(bootstrap, outputs, f"{rid}-reader")
        lag = probe.GroupLag(bootstrap, env["STREAMDEDUP_KAFKA__GROUP_ID"], source, partitions)
        try:
            res.update(_drive(proc, reader, lag, records, primer, rate, metrics_port, sample_every, startup_timeout,
                              drain_timeout, log_path, PacedProducer(bootstrap, source), log))
            res["processor_summary"] = _processor_summary(log_path)
            if res["processor_exit_code"] != 0:
                res["processor_log_tail"] = _tail(log_path)
        finally:
            reader.halt.set()
            if proc.poll() is None:
                _stop(proc, 10)
            reader.join(10)
            lag.close()
    res["loadavg_end"] = os.getloadavg()
    return _summarise(res, reader.rows, [k.decode() for k, _ in records], window_s)


def _drive(proc: subprocess.Popen, reader: _Reader, lag: probe.GroupLag, records: list, primer: int, rate: float,
           metrics_port: int, sample_every: float, startup_timeout: float, drain_timeout: float, log_path: Path,
           producer: PacedProducer, log: Callable[[str], None]) -> dict:
    """Primer, timed load, drain, SIGTERM; the reader keeps reading a while after, to catch doubles."""
    reader.start()
    for key, value in records[:primer]:
        producer.send(key, value)
    producer.flush()
    started = time.monotonic()
    if not _wait_for(lambda: reader.count() >= primer, startup_timeout, proc, reader, "before its first records came out", log_path):
        raise StreamdedupError(f"the first {primer} records did not come out within {startup_timeout:.0f} s:\n{_tail(log_path)}")
    log(f"processor ready: primer routed after {time.monotonic() - started:.1f} s; load starts")
    t0 = time.monotonic()
    sampler = _Sampler(proc.pid, lag, metrics_port, sample_every, t0, lambda: (producer.sent, reader.count()), log)
    sampler.start()
    out: dict = {"t0_ns": int(t0 * 1e9), "producer": producer.paced(records[primer:], rate, t0)}
    load_end = time.monotonic()
    out["drained"] = _wait_for(lambda: reader.count() >= len(records), drain_timeout, proc, reader, "while the load ran", log_path)
    out["drain_s"] = round(time.monotonic() - load_end, 2)
    sampler.halt.set()
    sampler.join(30)
    sampler.sample()  # the last look before the stop: RSS and index size at the end of the run
    out["samples"] = sampler.rows
    out["processor_exit_code"] = _stop(proc)
    # a doubled record would show up by now; wait until the reader has been quiet for 3 s
    quiet_since, n = time.monotonic(), reader.count()
    deadline = quiet_since + 20
    while time.monotonic() < deadline and time.monotonic() - quiet_since < 3:
        time.sleep(0.2)
        if reader.count() != n:
            quiet_since, n = time.monotonic(), reader.count()
    return out


def _summarise(res: dict, rows: list, produced_ids: list[str], window_s: float) -> dict:
    """Delivery check, latency percentiles (overall and per window), RSS trend, index fill."""
    res["outputs"] = {s: 0 for s in STATUSES} | dict(Counter(status for _, status, _, _ in rows))
    res["delivery"] = delivery_check(produced_ids, (rid for rid, _, _, _ in rows))
    t0_ns = res.pop("t0_ns", None)
    timed = [(sent, seen) for _, _, sent, seen in rows if sent is not None and t0_ns is not None and sent >= t0_ns]
    res["latency_without_header"] = sum(1 for _, _, sent, _ in rows if sent is None)
    lat_ms = [(seen - sent) / 1e6 for sent, seen in timed]
    res["latency"] = percentiles(lat_ms)
    res["latency_windows"] = latency_windows([(sent - t0_ns) / 1e9 for sent, _ in timed], lat_ms, window_s)
    samples = [r for r in res.get("samples", []) if r["rss_mb"] is not None]
    rss = [r["rss_mb"] for r in samples]
    res["rss"] = {"first_mb": rss[0] if rss else None, "last_mb": rss[-1] if rss else None, "max_mb": max(rss, default=None),
                  **rss_trend([r["t_s"] for r in samples], rss).as_dict()}
    indexed = [r for r in res.get("samples", []) if r["indexed"] is not None]
    full = next((r["t_s"] for r in indexed if r["indexed"] >= res["max_documents"]), None)
    after = [r for r in samples if full is not None and r["t_s"] >= full]
    res["index"] = {"indexed": indexed[-1]["indexed"] if indexed else None, "max_documents": res["max_documents"],
                    "full_at_s": full, "rss_mb_per_min_once_full": slope_per_min([r["t_s"] for r in after], [r["rss_mb"] for r in after])}
    cpu = [r["cpu_pct"] for r in res.get("samples", []) if r["cpu_pct"] is not None]
    res["processor_cpu_pct_mean"] = round(sum(cpu) / len(cpu), 1) if cpu else None
    res["ok"] = bool(res["delivery"]["ok"] and res.get("processor_exit_code") == 0)
    return res
