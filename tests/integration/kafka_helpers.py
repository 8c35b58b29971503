"""Helpers for the integration tests and the Kafka benchmark: a real broker, unique topics."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.kafka.admin import produce_all

REPO = Path(__file__).resolve().parents[2]
KAFKA_LOCAL = REPO / "scripts" / "kafka-local"


def start_broker(port: int = 9092, controller_port: int = 9093, data_dir: str | None = None) -> str:
    """Start (or reuse) a local broker with scripts/kafka-local; returns the bootstrap address."""
    env = dict(os.environ, KAFKA_PORT=str(port), KAFKA_CONTROLLER_PORT=str(controller_port))
    cmd = [str(KAFKA_LOCAL), "start"] + (["--data-dir", data_dir] if data_dir else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/kafka-local start failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip().splitlines()[-1]


def broker_running(port: int = 9092) -> bool:
    env = dict(os.environ, KAFKA_PORT=str(port))
    return subprocess.run([str(KAFKA_LOCAL), "status"], env=env, capture_output=True, timeout=60).returncode == 0


def stop_broker(port: int = 9092, keep_data: bool = False) -> None:
    env = dict(os.environ, KAFKA_PORT=str(port))
    subprocess.run([str(KAFKA_LOCAL), "stop"] + (["--keep-data"] if keep_data else []), env=env, capture_output=True, timeout=120)


def broker_data_dir(port: int = 9092) -> str:
    return Path(f"/tmp/streamdedup-kafka-{port}/data_dir").read_text().strip()


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


def consume_all(bootstrap: str, topics: list[str], expected: int, timeout: float = 120.0, quiet: float = 3.0) -> list:
    """Every read_committed record of ``topics``; waits for ``expected`` then ``quiet`` more seconds."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe(topics)
    out = []
    deadline = time.monotonic() + timeout
    reached = None
    while time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                out.append((m.topic(), m.key(), m.value(), dict((k, v) for k, v in (m.headers() or []))))
        if len(out) >= expected:
            reached = reached or time.monotonic()
            if time.monotonic() - reached >= quiet:
                break
    c.close()
    return out


def run_processor(env: dict, state_dir: str, stop_when_idle: float = 4.0, **popen) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamdedup.cli", "run", "--state-dir", state_dir, "--stop-when-idle", str(stop_when_idle)]
    return subprocess.Popen(cmd, env=env, cwd=str(REPO), **popen)
