"""Cold vs warm start of ``streamdedup run``, as a user sees it (whole process, wall clock).

Cold = an empty ``NUMBA_CACHE_DIR`` (a fresh install, or a container whose image was built
without ``warm-up``); warm = the same command again on the cache the cold run filled.
File mode runs a 10-line file; Kafka mode (with ``--kafka BOOTSTRAP``, e.g. the broker of
``scripts/kafka-local start``) runs the processor over 10 records with ``--stop-when-idle 1``
on topics of its own. Prints each run and the medians; the gap is what issue 10 bounds (<= 10 s).

    python benchmarks/cold_start.py [--repeat 3] [--kafka 127.0.0.1:9092]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

LINES = [json.dumps({"id": f"d{i}", "text": f"story number {i} about the harbour strike and the port of call {i % 3}"})
         for i in range(10)]


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _file_cmd(work: Path) -> list[str]:
    out = work / f"out-{uuid.uuid4().hex[:6]}"
    return [sys.executable, "-m", "streamdedup.cli", "run", "--input", str(work / "in.jsonl"), "--output-dir", str(out)]


def _kafka_env(env: dict[str, str], bootstrap: str) -> tuple[dict[str, str], list[str]]:
    from confluent_kafka import Producer

    run = uuid.uuid4().hex[:8]
    topics = {k: f"cold-{run}-{k}" for k in ("in", "unique", "dup", "dlq")}
    env = {**env, "STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": bootstrap, "STREAMDEDUP_KAFKA__INPUT_TOPICS": f"[{topics['in']}]",
           "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": topics["unique"], "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": topics["dup"],
           "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": topics["dlq"], "STREAMDEDUP_KAFKA__GROUP_ID": f"cold-{run}",
           "STREAMDEDUP_KAFKA__TRANSACTIONAL_ID": f"cold-{run}", "STREAMDEDUP_KAFKA__PARTITIONS": "1"}
    subprocess.run([sys.executable, "-m", "streamdedup.cli", "topics", "create"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    p = Producer({"bootstrap.servers": bootstrap})
    for line in LINES:
        p.produce(topics["in"], line.encode())
    p.flush(10)
    return env, topics["in"]


def _kafka_cmd(work: Path) -> list[str]:
    state = work / f"state-{uuid.uuid4().hex[:6]}"
    return [sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", "1", "--state-dir", str(state)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kafka", metavar="BOOTSTRAP", default=None, help="also measure Kafka mode on this broker")
    args = ap.parse_args()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        work = Path(tmp)
        (work / "in.jsonl").write_text("\n".join(LINES) + "\n")
        modes = [("file", _file_cmd)] + ([("kafka", _kafka_cmd)] if args.kafka else [])
        for mode, make_cmd in modes:
            times: dict[str, list[float]] = {"cold": [], "warm": []}
            for rep in range(args.repeat):
                env = {**os.environ, "NUMBA_CACHE_DIR": str(work / f"numba-{mode}-{rep}")}
                for kind in ("cold", "warm"):
                    run_env = env
                    if mode == "kafka":
                        run_env, _ = _kafka_env(env, args.kafka)
                    times[kind].append(_timed(make_cmd(work), run_env))
                    print(f"{mode:5} {kind} run {rep + 1}: {times[kind][-1]:.2f} s", flush=True)
            results[mode] = times
    print()
    for mode, times in results.items():
        cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
        print(f"{mode:5} cold {cold:5.1f} s ({min(times['cold']):.1f}-{max(times['cold']):.1f})  "
              f"warm {warm:4.1f} s ({min(times['warm']):.1f}-{max(times['warm']):.1f})  gap {cold - warm:4.1f} s")


if __name__ == "__main__":
    main()
