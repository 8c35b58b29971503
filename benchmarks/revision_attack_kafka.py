"""The revision test's worst stream through the Kafka processor, against a control stream.

Run (a broker on ``--bootstrap``; ``scripts/kafka-local start`` gives one)::

    .venv/bin/python benchmarks/revision_attack_kafka.py --bootstrap 127.0.0.1:9092 [--rounds 2]

The attack: a 100,000-word story and ``--copies`` copies whose middle 3,000 words differ in
digits only, a figure every other word ("k4821" -> "k4822"): every changed figure has ~1,500
twins to compare with, the damaged-twin search's worst case. The control: the same story and as
many copies of the same size that differ in one figure. Each stream goes to fresh topics and
through ``streamdedup run`` (the single processor, its own process, as a user runs it) with
``kafka.stall_restart_s`` ``--stall``; the rounds alternate attack and control.

Printed per run: seconds from the processor's start to the last output visible to a
read_committed consumer, the outputs per topic, and the restarts and stall warnings in the
processor's log. The medians of each stream and their ratio close the output.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.kafka.admin import produce_all

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the company said its first quarter net profit rose from a year earlier analysts expected shares "
         "market trade oil price bank rate growth export government central output").split()


def streams(words: int, changed: int, copies: int, seed: int = 1) -> dict[str, list[str]]:
    """The attack and the control: the story first, then its copies."""
    rng = random.Random(seed)
    story = [rng.choice(WORDS) for _ in range(words)]
    lo = (words - changed) // 2
    figures = range(lo, lo + changed, 2)
    for k in figures:
        story[k] = f"k{rng.randrange(10 ** 6)}"
    attack, control = [" ".join(story)], [" ".join(story)]
    for c in range(copies):
        a, b = list(story), list(story)
        for k in figures:
            a[k] = f"k{(int(story[k][1:]) + 1 + c) % 10 ** 6}"
        k = figures[c % len(figures)]
        b[k] = f"k{(int(story[k][1:]) + 1 + c) % 10 ** 6}"
        attack.append(" ".join(a))
        control.append(" ".join(b))
    return {"attack": attack, "control": control}


def run_once(bootstrap: str, texts: list[str], stall: float) -> dict:
    """One stream through a fresh processor: its time, outputs and log's restarts."""
    run = uuid.uuid4().hex[:8]
    names = {"input": f"atk-in-{run}", "unique": f"atk-u-{run}", "duplicates": f"atk-d-{run}",
             "dead": f"atk-x-{run}"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(t, 1, 1) for t in names.values()]).values():
        fut.result(60)
    produce_all(bootstrap, names["input"], [(f"r{k}".encode(), orjson.dumps({"id": f"r{k}", "text": t}))
                                           for k, t in enumerate(texts)], **{"message.max.bytes": 2_000_000})
    env = dict(os.environ, STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS=bootstrap,
               STREAMDEDUP_KAFKA__INPUT_TOPICS=f"[{names['input']}]", STREAMDEDUP_KAFKA__UNIQUE_TOPIC=names["unique"],
               STREAMDEDUP_KAFKA__DUPLICATES_TOPIC=names["duplicates"],
               STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC=names["dead"], STREAMDEDUP_KAFKA__GROUP_ID=f"atk-{run}",
               STREAMDEDUP_KAFKA__TRANSACTIONAL_ID=f"atk-{run}", STREAMDEDUP_KAFKA__PARTITIONS="1",
               STREAMDEDUP_KAFKA__STALL_RESTART_S=str(stall))
    out_topics = [names["unique"], names["duplicates"], names["dead"]]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"atk-check-{run}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe(out_topics)
    with tempfile.TemporaryDirectory() as state, tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", "5",
                                 "--state-dir", state], env=env, cwd=str(REPO), stderr=log)
        got: dict[str, int] = {}
        last = None
        deadline = t0 + 900
        while sum(got.values()) < len(texts) and time.perf_counter() < deadline and proc.poll() is None:
            for m in c.consume(100, 0.5):
                if m.error() is None:
                    got[m.topic()] = got.get(m.topic(), 0) + 1
                    last = time.perf_counter()
        c.close()
        proc.wait(120)
        log.seek(0)
        text = log.read().decode(errors="replace")
    short = {"unique": names["unique"], "duplicates": names["duplicates"], "dead": names["dead"]}
    return {"seconds": None if last is None or sum(got.values()) < len(texts) else last - t0,
            "outputs": {k: got.get(t, 0) for k, t in short.items()},
            "restarts": text.count("restarting the process"), "warnings": text.count("not restarting"),
            "exit": proc.returncode}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--copies", type=int, default=20)
    p.add_argument("--words", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--stall", type=float, default=30.0, help="kafka.stall_restart_s of the processor")
    args = p.parse_args()
    data = streams(args.words, 3_000, args.copies)
    print(f"{args.copies + 1} records a stream, {len(data['attack'][1].encode()):,} bytes a copy; "
          f"kafka.stall_restart_s {args.stall:g}")
    times: dict[str, list[float]] = {"attack": [], "control": []}
    for r in range(args.rounds):
        for name in ("attack", "control") if r % 2 == 0 else ("control", "attack"):
            res = run_once(args.bootstrap, data[name], args.stall)
            print(f"round {r + 1} {name:<8} {res['seconds'] if res['seconds'] is None else round(res['seconds'], 1)} s"
                  f"  outputs {res['outputs']}  restarts {res['restarts']}  stall warnings {res['warnings']}"
                  f"  exit {res['exit']}", flush=True)
            if res["seconds"] is not None:
                times[name].append(res["seconds"])
    if times["attack"] and times["control"]:
        a, c = statistics.median(times["attack"]), statistics.median(times["control"])
        print(f"median: attack {a:.1f} s, control {c:.1f} s, ratio {a / c:.2f}")


if __name__ == "__main__":
    main()
