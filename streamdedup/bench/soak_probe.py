"""What ``streamdedup bench soak`` watches from outside the processor, as an operator would:
its RSS and CPU time (``/proc``), its metrics endpoint, its consumer group's lag on the broker,
and the local broker of ``scripts/kafka-local`` when no broker address is given."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streamdedup.errors import StreamdedupError

KAFKA_LOCAL = Path(__file__).resolve().parents[2] / "scripts" / "kafka-local"
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float | None:
    """Resident set size of ``pid`` in MB (VmRSS), None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    m = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) / 1024 if m else None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (all its threads), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the command name (field 2) may hold spaces and parentheses: count fields after the last ")"
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_metric(port: int, name: str, timeout: float = 2.0) -> float | None:
    """One unlabelled sample of the processor's Prometheus endpoint; None if it does not answer yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


class GroupLag:
    """High watermark minus the committed offset of the processor's group, summed over the input's
    partitions: what an operator's lag monitor shows (records consumed but not yet committed
    count as lag, unlike the processor's own position-based gauge)."""

    def __init__(self, bootstrap: str, group: str, topic: str, partitions: int):
        # never subscribes, so it does not join (or disturb) the processor's group
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]

    def __call__(self) -> int | None:
        try:
            committed = self._consumer.committed(self._tps, timeout=5)
            total = 0
            for tp in committed:
                low, high = self._consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=5, cached=False)
                total += high - (tp.offset if tp.offset >= 0 else low)  # nothing committed yet: all of it
            return total
        except KafkaException:
            return None

    def close(self) -> None:
        self._consumer.close()


def _kafka_local(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    if not KAFKA_LOCAL.is_file():
        raise StreamdedupError(f"no --bootstrap-servers given and {KAFKA_LOCAL} is missing (not a source checkout): "
                               "pass the broker with --bootstrap-servers")
    return subprocess.run([str(KAFKA_LOCAL), *args], capture_output=True, text=True, timeout=timeout)


@contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    """The broker given, or the local one of scripts/kafka-local: reused when it runs (and left
    running), else started for the soak and stopped after it, as ``make demo`` does."""
    if bootstrap:
        yield bootstrap
        return
    was_running = _kafka_local("status", timeout=60).returncode == 0
    started = _kafka_local("start")
    if started.returncode != 0:
        raise StreamdedupError(f"scripts/kafka-local start failed: {started.stderr.strip()[-1000:]}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        if not was_running:
            _kafka_local("stop", timeout=120)


def run_id() -> str:
    return f"soak-{uuid.uuid4().hex[:8]}"
