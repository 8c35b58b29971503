"""Helpers for the integration tests and the Kafka benchmark: a real broker, unique topics."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.kafka.admin import produce_all

REPO = Path(__file__).resolve().parents[2]
KAFKA_LOCAL = REPO / "scripts" / "kafka-local"


def start_broker(port: int, controller_port: int, data_dir: str | None = None) -> str:
    """Start (or reuse) a local broker with scripts/kafka-local; returns the bootstrap address."""
    env = dict(os.environ, KAFKA_PORT=str(port), KAFKA_CONTROLLER_PORT=str(controller_port))
    cmd = [str(KAFKA_LOCAL), "start"] + (["--data-dir", data_dir] if data_dir else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/kafka-local start failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip().splitlines()[-1]


def broker_running(port: int) -> bool:
    env = dict(os.environ, KAFKA_PORT=str(port))
    return subprocess.run([str(KAFKA_LOCAL), "status"], env=env, capture_output=True, timeout=60).returncode == 0


def stop_broker(port: int, keep_data: bool = False) -> None:
    env = dict(os.environ, KAFKA_PORT=str(port))
    subprocess.run([str(KAFKA_LOCAL), "stop"] + (["--keep-data"] if keep_data else []), env=env, capture_output=True, timeout=120)


def broker_data_dir(port: int) -> str:
    return Path(f"/tmp/streamdedup-kafka-{port}/data_dir").read_text().strip()


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now.

    All sockets stay bound until every port is picked, so the kernel hands out distinct ones. A
    port can still be taken between this call and the broker's bind; kafka-local then refuses
    to start with a message naming the port, rather than talking to the wrong server.
    """
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@contextmanager
def cpu_neighbour():
    """A process that keeps one core busy for the block's duration: the load a shared machine puts
    beside the processor and the broker (on two cores, half the machine)."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield busy
    finally:
        busy.kill()
        busy.wait()


def wait_for(predicate: Callable[[], object], timeout: float, what: str, proc: subprocess.Popen | None = None,
             interval: float = 0.1) -> object:
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds pass.

    Fails with an AssertionError naming ``what`` was awaited. With ``proc``, also fails as soon as
    that process exits: the condition cannot come true any more, so waiting out the deadline
    would only hide the cause.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process exited with code {proc.returncode} while waiting for {what}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {value!r})")
        time.sleep(interval)


def committed_offsets(bootstrap: str, group: str, topic: str) -> int:
    """Sum over ``topic``'s partitions of the offsets ``group`` has committed (0 before the first commit).

    -1 when the broker cannot answer right now (a coordinator still loading on a fresh broker
    says NOT_COORDINATOR), so a polled ``committed_offsets(...) >= goal`` is simply not yet true.

    With exactly-once delivery the offsets commit inside the output transaction, so this counts
    input records whose outputs are visible to read_committed consumers. A consumer that never
    subscribes only reads the group's offsets; it does not join the group. read_uncommitted, so
    that the broker answers with the last committed offsets at once: a read_committed client asks
    for "stable" offsets, which blocks while a transaction holds pending ones (for a killed
    processor, until its successor aborts it). Not an AdminClient: destroying one with an event
    still queued crashed the interpreter here (1 run in ~10).
    """
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted"})
    try:
        meta = c.list_topics(topic, timeout=10).topics[topic]
        parts = [TopicPartition(topic, p) for p in meta.partitions]
        return sum(tp.offset for tp in c.committed(parts, timeout=10) if tp.offset >= 0)
    except KafkaException:
        return -1
    finally:
        c.close()


def logged(log: Path, text: str, start: int = 0) -> bool:
    """True when ``text`` occurs in the process log ``log`` at or after byte ``start``."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            return text.encode() in f.read()
    except FileNotFoundError:
        return False


@dataclass
class Topics:
    bootstrap: str
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    partitions: int = 3

    @property
    def input(self) -> str:
        return f"in-{self.run_id}"

    @property
    def outputs(self) -> dict[str, str]:
        return {"unique": f"unique-{self.run_id}", "duplicate": f"dups-{self.run_id}", "dead_letter": f"dead-{self.run_id}"}

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": self.bootstrap,
            "STREAMDEDUP_KAFKA__INPUT_TOPICS": f"[{self.input}]",
            "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": self.outputs["unique"],
            "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": self.outputs["duplicate"],
            "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": self.outputs["dead_letter"],
            "STREAMDEDUP_KAFKA__GROUP_ID": f"group-{self.run_id}",
            "STREAMDEDUP_KAFKA__TRANSACTIONAL_ID": f"tx-{self.run_id}",
            "STREAMDEDUP_KAFKA__PARTITIONS": str(self.partitions),
        })
        env.update(extra)
        return env

    def create(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        names = [self.input, *self.outputs.values()]
        for fut in admin.create_topics([NewTopic(t, self.partitions, 1) for t in names], request_timeout=30).values():
            fut.result(60)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]], **conf) -> None:
    produce_all(bootstrap, topic, records, **conf)


def consume_all(bootstrap: str, topics: list[str], expected: int, timeout: float = 120.0, to_end: bool = True) -> list:
    """Every read_committed record of ``topics``, once ``expected`` were read.

    With ``to_end`` (for outputs whose writer has finished) it goes on to the end of every
    partition, end offsets queried once ``expected`` is reached, so that a record beyond
    ``expected`` (one emitted twice) is returned too. Returns what it has at ``timeout``.
    """
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe(topics)
    out = []
    deadline = time.monotonic() + timeout
    ends = None
    try:
        while time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    out.append((m.topic(), m.key(), m.value(), dict((k, v) for k, v in (m.headers() or []))))
            if len(out) < expected:
                continue
            if not to_end:
                break
            ends = ends or _end_offsets(c)
            # the position moves past transaction markers too, so it reaches the end offset
            if ends and all(end <= 0 or c.position([tp])[0].offset >= end for tp, end in ends):
                break
    finally:
        c.close()
    return out


def _end_offsets(c: Consumer) -> list[tuple[TopicPartition, int]]:
    """(partition, high watermark) of every partition assigned to ``c``; [] before the assignment."""
    return [(tp, c.get_watermark_offsets(tp, timeout=10, cached=False)[1]) for tp in c.assignment()]


#: processors :func:`run_processor` started, for :func:`stop_processors`
_STARTED: list[subprocess.Popen] = []


def run_processor(env: dict, state_dir: str | None, stop_when_idle: float = 4.0, log: Path | None = None,
                  args: tuple[str, ...] = (), **popen) -> subprocess.Popen:
    """Start ``streamdedup run`` (Kafka mode) with ``args`` (e.g. a staged role); with ``log``,
    its stderr (our JSON log lines) is appended to that file, for :func:`logged`."""
    cmd = [sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", str(stop_when_idle), *args]
    if state_dir is not None:
        cmd += ["--state-dir", state_dir]
    if log is None:
        proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), **popen)
    else:
        with open(log, "ab") as stderr:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), stderr=stderr, **popen)
    _STARTED.append(proc)
    return proc


def stop_processors() -> None:
    """SIGKILL the processors :func:`run_processor` started that still run (a failed test's), so
    they neither load the machine for the next test nor fail it with a ResourceWarning."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def finish(proc: subprocess.Popen, timeout: float = 120.0) -> int:
    """Stop a processor whose work is done as an orchestrator does (SIGTERM: it finishes its
    batch and leaves) instead of waiting out its idle timer; its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


def decisions(out: list, outputs: dict) -> dict:
    """key -> (destination, duplicate_of, relation) of consumed outputs (``outputs``: dest -> topic)."""
    inv = {v: k for k, v in outputs.items()}
    return {key: (inv[t], h.get("dedup.duplicate_of"), h.get("dedup.relation")) for t, key, _, h in out}


def assert_same_decisions(got: dict, want: dict, what: str = "run") -> None:
    """``got == want``, failing with the count and the first differences in input order (a
    whole-dict diff of 20k records puts its tail, not the cause, at the end of a CI log)."""
    if got == want:
        return
    keys = sorted(set(got) | set(want), key=lambda k: (len(k), k))
    diff = [k for k in keys if got.get(k) != want.get(k)]
    lines = [f"  {k!r}: got {got.get(k)} want {want.get(k)}" for k in diff[:12]]
    raise AssertionError(f"{len(diff)} of {len(keys)} decisions differ from the reference {what}; first ones "
                         "(input order):\n" + "\n".join(lines))
